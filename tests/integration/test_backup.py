"""`mnemo backup` and `mnemo restore` round-trip a database: memories (and their vectors where
pgvector is installed), reminders, the audit trail and the schema version, on PostgreSQL 15 and
on the embedded PostgreSQL 18."""

from __future__ import annotations

import stat
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import pool, text

from shared.app.cli import main
from shared.db import migrate
from shared.db.backup import BackupFailed, backup, restore
from shared.db.engine import make_engine, session_factory
from shared.db.memory_models import Memory, Todo
from shared.repositories.uow import UnitOfWork

NOW = datetime(2026, 11, 23, 9, 30, tzinfo=UTC)
TABLES = ("users", "identities", "memories", "memory_events", "todos", "alembic_version")
DIMENSIONS = 3


def seed(url: str, vectors: bool) -> None:
    engine = make_engine(url, poolclass=pool.NullPool)
    with UnitOfWork(session_factory(engine)) as uow:
        user = uow.users.identify("telegram", "4242", display_name="Inês").user_id
        kept = uow.memories.add(Memory(user_id=user, type="fact", content="Inês rows at the club on Sundays",
                                       source="manual", created_at=NOW, updated_at=NOW))
        uow.events.record(user, kept.id, "add", "user", after={"content": kept.content})
        uow.todos.add(Todo(user_id=user, content="book the boat", due_at=NOW + timedelta(days=2),
                           remind_at=NOW + timedelta(days=2), timezone="Europe/Lisbon", created_at=NOW,
                           updated_at=NOW))
        uow.commit()
    if vectors:
        with engine.begin() as connection:
            connection.execute(text("UPDATE memories SET embedding = '[0.25,0.5,0.75]'"))
    engine.dispose()


def snapshot(url: str, vectors: bool) -> dict[str, list[str]]:
    engine = make_engine(url, poolclass=pool.NullPool)
    with engine.connect() as connection:
        rows = {table: [str(row) for row in connection.execute(text(f"SELECT * FROM {table} ORDER BY 1"))]
                for table in TABLES}
        if vectors:
            rows["vectors"] = [str(row) for row in connection.execute(text("SELECT id, embedding::text FROM memories"))]
    engine.dispose()
    return rows


def change_everything(url: str) -> None:
    """What happens after a backup: a memory forgotten, another added."""
    engine = make_engine(url, poolclass=pool.NullPool)
    with engine.begin() as connection:
        connection.execute(text("DELETE FROM memories"))
        connection.execute(text("INSERT INTO users DEFAULT VALUES"))
    engine.dispose()


@pytest.fixture(autouse=True)
def logging_left_as_it_is(monkeypatch):
    """`main` configures logging for a process; in the test process it would stay for later tests."""
    monkeypatch.setattr("shared.app.bootstrap.configure_logging", lambda _settings: None)


def test_the_cli_round_trips_a_postgresql_15_database(fresh_system_db, tmp_path, monkeypatch, capsys):
    migrate.upgrade(fresh_system_db, DIMENSIONS)
    seed(fresh_system_db, vectors=False)
    before = snapshot(fresh_system_db, vectors=False)
    monkeypatch.setenv("DATABASE_URL", fresh_system_db)
    monkeypatch.setenv("MNEMO_DATA_DIR", str(tmp_path))
    file = tmp_path / "nightly.dump"

    assert main(["backup", "--output", str(file)]) == 0
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    assert not list(tmp_path.glob("*.partial"))
    change_everything(fresh_system_db)
    assert snapshot(fresh_system_db, vectors=False) != before
    assert main(["restore", str(file), "--yes"]) == 0

    assert snapshot(fresh_system_db, vectors=False) == before
    assert "Restored" in capsys.readouterr().out


def test_restore_asks_for_confirmation_when_it_cannot_ask(fresh_system_db, tmp_path, monkeypatch, capsys):
    migrate.upgrade(fresh_system_db, DIMENSIONS)
    monkeypatch.setenv("DATABASE_URL", fresh_system_db)
    file = backup(fresh_system_db, tmp_path / "b.dump")
    assert main(["restore", str(file)]) == 2
    assert "--yes" in capsys.readouterr().err


@pytest.mark.pgvector
def test_a_backup_of_the_embedded_database_keeps_the_vectors(embedded_pg, fresh_embedded_db, tmp_path):
    migrate.upgrade(fresh_embedded_db, DIMENSIONS)
    seed(fresh_embedded_db, vectors=True)
    before = snapshot(fresh_embedded_db, vectors=True)
    assert before["vectors"][0].endswith("'[0.25,0.5,0.75]')")

    file = backup(fresh_embedded_db, tmp_path / "embedded.dump", embedded_pg.bin_dir)
    change_everything(fresh_embedded_db)
    restore(fresh_embedded_db, file, embedded_pg.bin_dir)

    assert snapshot(fresh_embedded_db, vectors=True) == before


def test_a_file_that_is_not_a_backup_is_refused_and_changes_nothing(fresh_system_db, tmp_path):
    migrate.upgrade(fresh_system_db, DIMENSIONS)
    seed(fresh_system_db, vectors=False)
    before = snapshot(fresh_system_db, vectors=False)
    bogus = tmp_path / "notes.dump"
    bogus.write_text("this is not a pg_dump archive")

    with pytest.raises(BackupFailed, match="pg_restore failed"):
        restore(fresh_system_db, bogus)
    assert snapshot(fresh_system_db, vectors=False) == before
