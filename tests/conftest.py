"""Shared fixtures: a fresh database on the system PostgreSQL (no pgvector) and one on the embedded
PostgreSQL (pgvector), both migrated; a clean unit of work per test."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import Engine, text

from shared.db import migrate
from shared.db.embedded import EmbeddedPostgres
from shared.db.engine import make_engine, session_factory
from shared.repositories.uow import UnitOfWork

SYSTEM_PG_ADMIN_URL = os.environ.get("MNEMO_TEST_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
APP_TABLES = ("web_sessions", "one_time_tokens", "memory_events", "jobs_outbox", "profiles", "todos", "memories",
              "conversation_turns", "episodes", "sessions", "chats", "identities", "users")


def create_database(admin_url: str) -> str:
    """A new empty database next to ``admin_url``'s; returns its URL."""
    name = f"mnemo_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    base, _, query = admin_url.partition("?")
    url = base.rsplit("/", 1)[0] + "/" + name
    return f"{url}?{query}" if query else url


def drop_database(admin_url: str, url: str) -> None:
    name = url.partition("?")[0].rsplit("/", 1)[1]
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def system_pg_admin_url() -> str:
    return SYSTEM_PG_ADMIN_URL


@contextmanager
def server_data_dir() -> Iterator[Path]:
    """A data directory for an embedded server, outside pytest's private temp root: another pytest
    run locks that root down (mode 0700) when it starts, while the server, running as its own user,
    must still reach its files."""
    path = Path(tempfile.mkdtemp(prefix="mnemo-test-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def embedded_pg() -> Iterator[EmbeddedPostgres]:
    """The embedded PostgreSQL 18 with pgvector, in a temporary data directory."""
    with server_data_dir() as data_dir, EmbeddedPostgres(data_dir) as server:
        yield server


@pytest.fixture(scope="session")
def embedded_admin_url(embedded_pg: EmbeddedPostgres) -> str:
    return embedded_pg.url.replace("/mnemo?", "/postgres?")


@pytest.fixture
def fresh_system_db(system_pg_admin_url: str) -> Iterator[str]:
    """An empty database on the system PostgreSQL 15, dropped afterwards."""
    url = create_database(system_pg_admin_url)
    yield url
    drop_database(system_pg_admin_url, url)


@pytest.fixture
def fresh_embedded_db(embedded_admin_url: str) -> Iterator[str]:
    """An empty database on the embedded PostgreSQL 18 with pgvector, dropped afterwards."""
    url = create_database(embedded_admin_url)
    yield url
    drop_database(embedded_admin_url, url)


@pytest.fixture(scope="session", params=["system", "embedded"])
def migrated_url(request: pytest.FixtureRequest, system_pg_admin_url: str) -> Iterator[str]:
    """A migrated database on each server: without pgvector (system) and with it (embedded)."""
    admin = system_pg_admin_url if request.param == "system" else request.getfixturevalue("embedded_admin_url")
    url = create_database(admin)
    migrate.upgrade(url)
    yield url
    drop_database(admin, url)


@pytest.fixture(scope="session")
def engine(migrated_url: str) -> Iterator[Engine]:
    engine = make_engine(migrated_url)
    yield engine
    engine.dispose()


@pytest.fixture
def uow_factory(engine: Engine) -> Iterator[callable]:
    """Units of work on a migrated database that is emptied after each test."""
    factory = session_factory(engine)
    yield lambda: UnitOfWork(factory)
    with engine.begin() as connection:
        connection.execute(text(f"TRUNCATE {', '.join(APP_TABLES)} RESTART IDENTITY CASCADE"))
