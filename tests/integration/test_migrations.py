"""Migrations up and down on PostgreSQL 15 without pgvector and on the embedded PostgreSQL 18 with it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, inspect, pool, text

from shared.db import migrate
from shared.db.engine import make_engine
from shared.db.memory_models import Base
from shared.db.vectors import disable_vectors, vector_status

TABLES = {"users", "identities", "chats", "sessions", "conversation_turns", "memories", "episodes", "todos",
          "memory_events", "profiles", "jobs_outbox"}


@contextmanager
def connected(url: str) -> Iterator[Connection]:
    engine = make_engine(url, poolclass=pool.NullPool)
    try:
        with engine.connect() as connection:
            yield connection
    finally:
        engine.dispose()


def test_migrations_go_up_and_down_on_postgres_without_pgvector(fresh_system_db):
    status = migrate.upgrade(fresh_system_db)
    assert not status.available
    assert not status.enabled
    with connected(fresh_system_db) as connection:
        inspector = inspect(connection)
        assert set(inspector.get_table_names()) >= TABLES
        assert "embedding" not in {c["name"] for c in inspector.get_columns("memories")}
        assert "ix_memories_search_tsv" in {i["name"] for i in inspector.get_indexes("memories")}
    migrate.downgrade(fresh_system_db, "base")
    with connected(fresh_system_db) as connection:
        assert not TABLES & set(inspect(connection).get_table_names())
    assert migrate.current_revision(fresh_system_db) is None
    migrate.upgrade(fresh_system_db)
    assert migrate.current_revision(fresh_system_db) == migrate.head_revision()


def test_migrations_create_vector_columns_and_hnsw_indexes_where_pgvector_exists(fresh_embedded_db):
    status = migrate.upgrade(fresh_embedded_db, embedding_dimensions=384)
    assert status.enabled
    assert status.dimensions == {"memories": 384, "episodes": 384, "conversation_turns": 384}
    with connected(fresh_embedded_db) as connection:
        indexes = {i["name"] for i in inspect(connection).get_indexes("memories")}
        assert {"ix_memories_embedding_hnsw", "ix_memories_search_tsv"} <= indexes
    migrate.downgrade(fresh_embedded_db, "0001")
    with connected(fresh_embedded_db) as connection:
        assert "embedding" not in {c["name"] for c in inspect(connection).get_columns("memories")}
    migrate.downgrade(fresh_embedded_db, "base")
    assert migrate.current_revision(fresh_embedded_db) is None


def test_vectors_switched_on_later_keep_every_row(fresh_embedded_db):
    """A database migrated where pgvector was missing gains the columns on the next upgrade, data intact."""
    migrate.upgrade(fresh_embedded_db)
    engine = make_engine(fresh_embedded_db, poolclass=pool.NullPool)
    with engine.begin() as connection:
        disable_vectors(connection)
        connection.execute(text("DROP EXTENSION vector"))
        assert not vector_status(connection).installed
        connection.execute(text("INSERT INTO users (id) VALUES (1)"))
        connection.execute(text(
            "INSERT INTO memories (user_id, type, content, source, search_tokens) "
            "VALUES (1, 'preference', '喜欢喝乌龙茶', 'user_stated', '喜欢 乌龙茶')"))
    status = migrate.upgrade(fresh_embedded_db, embedding_dimensions=384)
    assert status.enabled
    with engine.connect() as connection:
        row = connection.execute(text(
            "SELECT content, embedding IS NULL, search_tsv @@ to_tsquery('simple', '乌龙茶') FROM memories")).one()
    engine.dispose()
    assert tuple(row) == ("喜欢喝乌龙茶", True, True)


def test_a_new_embedding_size_recreates_only_the_embeddings(fresh_embedded_db):
    migrate.upgrade(fresh_embedded_db, embedding_dimensions=384)
    engine = make_engine(fresh_embedded_db, poolclass=pool.NullPool)
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO users (id) VALUES (1)"))
        connection.execute(text("INSERT INTO episodes (user_id, summary, started_at, ended_at) "
                                "VALUES (1, 'talked about tea', now(), now())"))
    status = migrate.upgrade(fresh_embedded_db, embedding_dimensions=8)
    with engine.connect() as connection:
        assert connection.scalar(text("SELECT summary FROM episodes")) == "talked about tea"
    engine.dispose()
    assert status.dimensions == {"memories": 8, "episodes": 8, "conversation_turns": 8}


def test_the_models_match_the_migrations(fresh_system_db):
    migrate.upgrade(fresh_system_db)
    with connected(fresh_system_db) as connection:
        differences = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    assert differences == []


def test_the_postgresql_that_compose_ships_is_the_major_version_the_pgvector_tests_run_on(embedded_admin_url):
    compose = yaml.safe_load((Path(__file__).resolve().parents[2] / "docker-compose.yml").read_text())
    shipped = int(re.search(r":pg(\d+)", compose["services"]["postgres"]["image"]).group(1))
    engine = make_engine(embedded_admin_url, poolclass=pool.NullPool)
    try:
        with engine.connect() as connection:
            tested = int(connection.scalar(text("SHOW server_version_num"))) // 10000
    finally:
        engine.dispose()
    assert shipped == tested, f"compose ships PostgreSQL {shipped}, the pgvector tests run on {tested}"
