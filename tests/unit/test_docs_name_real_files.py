"""The docs name only files that exist, and docs/architecture.md's rule → file table holds: each file it names
exists, and each name it gives in a row (a function, a constant, a setting) is in one of that row's files.

A path is a backticked word with a file's ending (``shared/text.py``, ``prepare.py``) or ending in ``/``
(``tests/fakes/``), or a relative link. A full path must exist as written; a bare file name (``warning_texts.py``)
or a path from inside a package (``repositories/uow.py``) must be the end of a real one; a pattern
(``bot/*_render.py``) must match one. URL paths (``/panel/``) and placeholders (``<name>``) are not files, and
what a run writes (into ``bench/results/``, ``tests/artifacts/``, a folder a setting names) is not in the tree:
its folder is."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest

from shared.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
SKIPPED_DIRS = {".git", ".venv", "__pycache__", "node_modules", ".pytest_cache", ".ruff_cache"}
ENDINGS = ("py", "md", "js", "html", "css", "yml", "yaml", "toml", "json", "ini", "cfg", "sh", "txt", "sql",
           "example", "svg", "png", "mako")
_TICKED = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"\]\(([^)\s#]+)")
_PATH = re.compile(r"[\w.*-]+(?:/[\w.*-]+)*/?")
_FILE = re.compile(rf"\.(?:{'|'.join(ENDINGS)})$")
SETTING_NAMES = {name.upper() for name in Settings.model_fields}
OUTPUT_FOLDERS = ("bench/results/", "tests/artifacts/")
"""Where runs write (ignored by git): a file named there need not exist, its folder must."""
BENCH_OUTPUTS = {"report.md", "recall.png"}
"""What ``make bench`` writes into ``bench/results/`` beside ``latest.json``, named bare in the README."""


def repository_paths() -> set[str]:
    """Every file and folder of the working tree, relative to it."""
    found: set[str] = set()
    for path in ROOT.rglob("*"):
        relative = path.relative_to(ROOT)
        if not SKIPPED_DIRS & set(relative.parts):
            found.add(relative.as_posix())
    return found


PATHS = repository_paths()
IGNORED = {line.strip().removesuffix("*") for line in (ROOT / ".gitignore").read_text().splitlines()}
"""The folders .gitignore names for what runs write (``tests/artifacts/``, ``bench/results/*``)."""


def names_a_path(word: str) -> bool:
    return bool(_PATH.fullmatch(word)) and (bool(_FILE.search(word)) or (word.endswith("/") and len(word) > 1))


def exists(word: str) -> bool:
    """``word`` as the docs use it: a full path, the end of one, or a pattern matching one."""
    if word.split("/")[0] in SETTING_NAMES or word in BENCH_OUTPUTS:
        return True
    for folder in OUTPUT_FOLDERS:
        if word.startswith(folder):
            return folder.rstrip("/") in PATHS or folder in IGNORED  # a clean clone has it once a run wrote there
    word = word.rstrip("/")
    if "*" in word:
        return any(fnmatch.fnmatch(path, word) or fnmatch.fnmatch(path, "*/" + word) for path in PATHS)
    return word in PATHS or any(path.endswith("/" + word) for path in PATHS)


def paths_named_in(doc: Path) -> list[str]:
    text = doc.read_text(encoding="utf-8")
    named = {word.strip() for word in _TICKED.findall(text) if names_a_path(word.strip())}
    for target in _LINK.findall(text):
        if not target.startswith(("http://", "https://", "mailto:")):
            named.add((doc.parent / target).resolve().relative_to(ROOT).as_posix())
    return sorted(named)


def test_the_scan_finds_the_paths_of_the_docs():
    architecture = paths_named_in(ROOT / "docs" / "architecture.md")
    assert {"shared/conversation/prepare.py", "shared/db/kinds.py", "warning_texts.py"} <= set(architecture)
    assert not exists("shared/conversation/turn_prepare.py")
    assert not exists("turn_apply.py")
    assert exists("repositories/uow.py")
    assert exists("bot/*_render.py")
    assert exists("tests/fakes/")


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: doc.name)
def test_every_path_a_doc_names_exists(doc):
    assert [path for path in paths_named_in(doc) if not exists(path)] == []


def table_rows(doc: Path, header: str) -> list[tuple[str, str]]:
    lines = doc.read_text(encoding="utf-8").splitlines()
    start = lines.index(header)
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rule, where = (cell.strip() for cell in line.strip().strip("|").split("|", 1))
        rows.append((rule, where))
    return rows


RULES = table_rows(ROOT / "docs" / "architecture.md", "| rule | file |")


def files_and_names(where: str) -> tuple[list[Path], list[str]]:
    """The files a row names (a bare file name is in the folder of the path before it) and the other names."""
    files: list[Path] = []
    names: list[str] = []
    folder = ROOT
    for word in _TICKED.findall(where):
        if names_a_path(word):
            path = ROOT / word if "/" in word else folder / word
            files.append(path)
            folder = path.parent
        else:
            names.append(word)
    return files, names


def test_the_rule_table_is_read_whole():
    assert len(RULES) >= 30
    assert ("emotion taxonomy and strategy table", "`shared/emotion.py`") in RULES


@pytest.mark.parametrize(("rule", "where"), RULES, ids=[rule[:60] for rule, _ in RULES])
def test_each_rule_lives_where_the_architecture_says(rule, where):
    files, names = files_and_names(where)
    assert files, rule
    for path in files:
        assert list(ROOT.glob(str(path.relative_to(ROOT)))), f"{rule}: {path.relative_to(ROOT)} does not exist"
    sources = "\n".join(path.read_text(encoding="utf-8") for pattern in files
                        for path in ROOT.glob(str(pattern.relative_to(ROOT))) if path.is_file())
    for name in names:
        identifier = re.sub(r"\(.*", "", name).split(".")[-1]
        assert identifier in sources or identifier in SETTING_NAMES, f"{rule}: {name} is not in {where}"
