"""The rooms keep their doors: services reach data only through repositories.

Every module of ``shared/`` outside the repositories, the database package and the composition root
is a service or a pure rule. None may use a unit of work's SQLAlchemy session (``uow.session``) or
import SQLAlchemy; import-linter checks the direct imports too (pyproject ``[tool.importlinter]``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"
DATA_ROOMS = ("repositories", "db", "app")
SERVICE_MODULES = sorted(path for path in SHARED.rglob("*.py")
                         if path.relative_to(SHARED).parts[0] not in DATA_ROOMS)


def session_uses(tree: ast.AST) -> list[int]:
    """Lines where anything's ``.session`` attribute is read (``uow.session``, ``self.uow.session``)."""
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr == "session"]


def sqlalchemy_imports(tree: ast.AST) -> list[int]:
    """Lines that import SQLAlchemy (``import sqlalchemy…`` or ``from sqlalchemy… import``)."""
    def imported(node: ast.AST) -> list[str]:
        if isinstance(node, ast.Import):
            return [alias.name for alias in node.names]
        return [node.module or ""] if isinstance(node, ast.ImportFrom) else []
    return [node.lineno for node in ast.walk(tree)
            if any(name.split(".")[0] == "sqlalchemy" for name in imported(node))]


def test_the_scan_sees_the_service_rooms() -> None:
    rooms = {path.relative_to(SHARED).parts[0] for path in SERVICE_MODULES}
    assert {"commands", "conversation", "lifecycle", "reminders", "accounts", "recall", "memory"} <= rooms


@pytest.mark.parametrize("path", SERVICE_MODULES, ids=lambda p: str(p.relative_to(SHARED)))
def test_no_service_touches_the_session_or_imports_sqlalchemy(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert not session_uses(tree), f"{path.name} uses .session at lines {session_uses(tree)}: add a repository method"
    assert not sqlalchemy_imports(tree), f"{path.name} imports SQLAlchemy at lines {sqlalchemy_imports(tree)}"


def test_the_scan_catches_what_it_forbids() -> None:
    offending = ast.parse("from sqlalchemy import select\n\ndef f(uow):\n    return uow.session.scalars(select(1))\n")
    assert session_uses(offending) == [4]
    assert sqlalchemy_imports(offending) == [1]


@pytest.mark.parametrize("path", sorted((SHARED.parent / "bench").rglob("*.py")), ids=lambda p: p.name)
def test_the_benchmarks_import_nothing_from_the_tests_so_they_run_from_a_wheel(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    imported += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert not [name for name in imported if name.split(".")[0] == "tests"]
