"""Each number and vocabulary is written once: no two modules of ``shared/``, ``bot/`` and ``worker/`` define a
constant of the same name and the same value (a copy drifts the day one of them changes), and the code compares
reminders' statuses and kinds with the members of their ``StrEnum``, never a bare string."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from shared.db import kinds

ROOT = Path(__file__).resolve().parents[2]
KNOWN_COPIES = {
    "CLOSE", "ERRORS", "MAX_OFFSET",  # bot/api: one response header and two route tables alike, each local
    "MAX_JSON_DEPTH",  # an export file's nesting and an API body's: two limits that happen to agree
    "MAX_SCAN_CHARS",  # how much of a message the time parser and the temporal cue reader look at, each its own
    "MULTIPROCESS_VARIABLE",  # prometheus-client's variable, named where each process reads it
    "NO_API_KEY",  # the chat client's and the embedder's (recall may not import llm)
    "PRUNE_EVERY",  # two tables pruned on their own schedules
    "UNLINK_WORD",  # a command word: item 7 of issue 29 (one command table) removes it
    "_BREAKS", "_BULK", "_HAN", "_NOT_WORD", "_WEEKDAYS_ZH",  # private patterns and tables of one module each
}
"""Copies left on purpose or for later, each with its reason; a new one fails the test below."""


def module_constants() -> dict[tuple[str, str], set[str]]:
    found: dict[tuple[str, str], set[str]] = defaultdict(set)
    for folder in ("shared", "bot", "worker"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.parse(path.read_text()).body:
                if isinstance(node, ast.Assign):
                    targets, value = node.targets, node.value
                elif isinstance(node, ast.AnnAssign) and node.value is not None:
                    targets, value = [node.target], node.value
                else:
                    continue
                for target in targets:
                    if isinstance(target, ast.Name) and target.id.isupper() and len(target.id) > 3:
                        found[(target.id, ast.dump(value))].add(path.relative_to(ROOT).as_posix())
    return found


def test_no_constant_is_defined_twice_with_the_same_value():
    copies = {name: sorted(where) for (name, _value), where in module_constants().items() if len(where) > 1}
    assert {name: where for name, where in copies.items() if name not in KNOWN_COPIES} == {}


def test_the_numbers_once_copied_now_live_in_one_place():
    defined = defaultdict(set)
    for (name, _value), where in module_constants().items():
        defined[name] |= where
    assert defined["TRANSIENT_LIFETIME"] == {"shared/memory/policy.py"}
    assert defined["MAX_CONTEXT_VARIABLES"] == {"shared/llm/turn_schema.py"}
    assert defined["MAX_IMPORT_BYTES"] == {"shared/accounts/export_format.py"}
    assert defined["MAX_ENTITIES"] == defined["MAX_ENTITY_CHARS"] == {"shared/memory/about.py"}
    assert defined["PLATFORMS"] == {"shared/db/kinds.py"}


def test_a_reminders_text_has_one_limit_from_the_model_and_from_an_import():
    from shared.accounts.export_format import SECTIONS
    from shared.commands.service import MAX_TEXT_CHARS
    from shared.memory.policy import MAX_MEMORY_CHARS

    assert SECTIONS["todos"]["content"].limit == MAX_MEMORY_CHARS  # once 2,000 on import
    assert MAX_TEXT_CHARS <= MAX_MEMORY_CHARS  # what /remind reads holds the reminder's text and its time


def test_the_vocabularies_tuples_are_their_enums():
    assert kinds.TODO_STATUSES == ("pending", "sent", "done", "cancelled") == tuple(kinds.TodoStatus)
    assert kinds.TODO_KINDS == ("reminder", "deadline") == tuple(kinds.TodoKind)
    assert kinds.OUTBOX_STATUSES == ("pending", "sent", "done", "failed") == tuple(kinds.OutboxStatus)


REMINDER_MODULES = ("shared/repositories/reminders.py", "shared/reminders", "shared/commands",
                    "shared/accounts/user_data.py", "shared/conversation/turn_reminders.py")
WORDS = {*kinds.TODO_STATUSES, *kinds.TODO_KINDS}


def bare_vocabulary(path: Path) -> list[tuple[int, str]]:
    """Each ``x.status == "pending"``, ``status="done"``, ``kind != "deadline"`` written with a bare string."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            named = any(isinstance(side, ast.Attribute | ast.Name) and getattr(side, "attr", getattr(side, "id", ""))
                        in ("status", "kind") for side in sides)
            found += [(node.lineno, side.value) for side in sides if named and isinstance(side, ast.Constant)
                      and side.value in WORDS]
        elif isinstance(node, ast.keyword) and node.arg in ("status", "kind") and isinstance(node.value, ast.Constant):
            found += [(node.value.lineno, node.value.value)] if node.value.value in WORDS else []
    return found


def test_reminder_statuses_and_kinds_are_compared_with_their_enum_members():
    paths = [path for where in REMINDER_MODULES for path in
             ((ROOT / where).rglob("*.py") if (ROOT / where).is_dir() else [ROOT / where])]
    assert len(paths) > 10
    assert {path.relative_to(ROOT).as_posix(): bare for path in paths if (bare := bare_vocabulary(path))} == {}
