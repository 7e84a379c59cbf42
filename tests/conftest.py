"""Shared fixtures: migrated databases on the system PostgreSQL 15 (no pgvector) and on the embedded
PostgreSQL 18 (pgvector), and units of work on them.

A database test runs on the system server; one marked ``pgvector`` runs on both. ``uow_factory``
gives units of work inside one transaction that is rolled back after the test (a commit releases a
savepoint), so tests start clean without emptying tables. A test whose data must be seen by another
connection (a worker, the API's own engine, a second thread) is marked ``committed``: its commits
are real and the tables are emptied afterwards."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import Engine, select, text
from sqlalchemy.orm import sessionmaker

from bench.databases import create_database, drop_database
from bench.fakes.discord_api import FakeDiscord
from bench.fakes.telegram_api import FakeTelegram
from shared.db import migrate
from shared.db.embedded import PGDATA_DIR, EmbeddedPostgres
from shared.db.engine import make_engine, session_factory
from shared.db.memory_models import MemoryEvent
from shared.db.update_log import marked_in
from shared.repositories.uow import UnitOfWork

SYSTEM_PG_ADMIN_URL = os.environ.get("MNEMO_TEST_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
APP_TABLES = ("llm_usage_daily", "llm_usage", "web_sessions", "one_time_tokens", "memory_events", "jobs_outbox",
              "profiles", "open_threads", "todos", "memories",
              "conversation_turns", "episodes", "sessions", "chats", "identities", "users")
DEPLOYMENT_TABLES = ("access_entries", "platform_updates")
"""Tables of the deployment rather than of a user (the operators' access lists, the updates received): emptied
after a test too."""


@pytest.fixture(scope="session")
def system_pg_admin_url() -> str:
    return SYSTEM_PG_ADMIN_URL


@contextmanager
def server_data_dir() -> Iterator[Path]:
    """A data directory for an embedded server, outside pytest's private temp root: another pytest
    run locks that root down (mode 0700) when it starts, while the server, running as its own user,
    must still reach its files. Removed afterwards without waiting (see :func:`remove_in_background`)."""
    path = Path(tempfile.mkdtemp(prefix="mnemo-test-"))
    try:
        yield path
    finally:
        remove_in_background(path)


def remove_in_background(path: Path) -> None:
    """``rm -rf path`` in a process of its own that nobody waits for. Deleting the files a server synced to
    disk takes seconds where the file system discards freed blocks as it goes (ext4 ``discard``, as here:
    3.5 s for a data directory after initdb), and no test needs the directory gone."""
    subprocess.run(["sh", "-c", 'rm -rf "$1" &', "sh", str(path)], stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, check=True)


@pytest.fixture(scope="session")
def initialised_pgdata() -> Iterator[Path]:
    """The ``pgdata`` an embedded server's first start leaves behind (initdb run, the ``mnemo`` database
    made, the server stopped), made once per test process."""
    with server_data_dir() as data_dir:
        with EmbeddedPostgres(data_dir):
            pass
        yield data_dir / PGDATA_DIR


@contextmanager
def used_data_dir(pgdata: Path) -> Iterator[Path]:
    """A data directory holding a copy of ``pgdata``: its server starts without initdb (about 2 s of CPU)."""
    with server_data_dir() as data_dir:
        # cp -a: the files keep their owner, the user the server runs as when the tests run as root
        subprocess.run(["cp", "-a", str(pgdata), str(data_dir / PGDATA_DIR)], check=True)
        yield data_dir


@pytest.fixture(scope="session")
def embedded_pg(initialised_pgdata: Path) -> Iterator[EmbeddedPostgres]:
    """The embedded PostgreSQL 18 with pgvector, running for the whole session in a temporary data directory."""
    with used_data_dir(initialised_pgdata) as data_dir, EmbeddedPostgres(data_dir) as server:
        yield server


@pytest.fixture
def data_dir(initialised_pgdata: Path) -> Iterator[Path]:
    """A data directory (``MNEMO_DATA_DIR``) whose embedded server an earlier run set up and stopped, for a
    test about anything but the very first start (test_embedded.py's ``empty_data_dir`` is for that one)."""
    with used_data_dir(initialised_pgdata) as path:
        yield path


@pytest.fixture(scope="session")
def embedded_admin_url(embedded_pg: EmbeddedPostgres) -> str:
    return embedded_pg.url.replace("/mnemo?", "/postgres?")


@pytest.fixture
def fresh_system_db(system_pg_admin_url: str) -> Iterator[str]:
    """An empty database on the system PostgreSQL 15, dropped afterwards."""
    url = create_database(system_pg_admin_url)
    yield url
    drop_database(system_pg_admin_url, url)


@pytest.fixture(scope="session")
def migrated_system_template(system_pg_admin_url: str) -> Iterator[str]:
    """A migrated database on the system PostgreSQL 15 that the tests' migrated databases are copied from
    (a copy takes about 0.15 s, migrating an empty one about 0.5 s). Nothing connects to it."""
    url = create_database(system_pg_admin_url)
    migrate.upgrade(url)
    yield url
    drop_database(system_pg_admin_url, url)


@pytest.fixture
def migrated_system_db(system_pg_admin_url: str, migrated_system_template: str) -> Iterator[str]:
    """A migrated database of its own on the system PostgreSQL 15, dropped afterwards."""
    url = create_database(system_pg_admin_url, template=migrated_system_template)
    yield url
    drop_database(system_pg_admin_url, url)


@pytest.fixture
def fresh_embedded_db(embedded_admin_url: str) -> Iterator[str]:
    """An empty database on the embedded PostgreSQL 18 with pgvector, dropped afterwards."""
    url = create_database(embedded_admin_url)
    yield url
    drop_database(embedded_admin_url, url)


SPLITTABLE_E2E = frozenset({"test_offline_console", "test_embedded"})
"""End-to-end files whose tests share no Redis database, server or browser: they may run in parallel."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests under tests/e2e (processes, the browser, benchmarks) carry the ``e2e`` marker, and, but for
    the splittable ones, stay together on one test process (``--dist loadgroup``): a file's tests share a
    Redis database, a browser or a server. Every other test may run on any process.

    It runs before pytest-xdist's own hook, which reads the ``xdist_group`` marker."""
    for item in items:
        if item.path.parent.name == "e2e":
            item.add_marker(pytest.mark.e2e)
            if item.path.stem not in SPLITTABLE_E2E:
                item.add_marker(pytest.mark.xdist_group(item.path.stem))


def pytest_collection_finish(session: pytest.Session) -> None:
    """On a pytest-xdist worker under ``--dist loadgroup``, every grouped test carries its group in its id
    (that is how xdist schedules it). A pytest that ignores that (9.2 with xdist 3.8, pytest-xdist#1386)
    would split the groups silently and let two tests share a Redis database: stop the run instead."""
    if not getattr(session.config.option, "loadgroup", False):
        return
    ungrouped = [item.nodeid for item in session.items
                 if item.get_closest_marker("xdist_group") and "@" not in item.nodeid]
    if ungrouped:
        raise pytest.UsageError(f"--dist loadgroup lost the group of {len(ungrouped)} tests, e.g. {ungrouped[0]}; "
                                "this pytest and pytest-xdist do not group (pytest-xdist#1386)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Database tests run on the system server; those marked ``pgvector`` on the embedded one too."""
    if "migrated_url" in metafunc.fixturenames:
        both = metafunc.definition.get_closest_marker("pgvector") is not None
        metafunc.parametrize("migrated_url", ["system", "embedded"] if both else ["system"], indirect=True,
                             scope="session")


@pytest.fixture(scope="session")
def migrated_url(request: pytest.FixtureRequest, system_pg_admin_url: str) -> Iterator[str]:
    """A migrated database: without pgvector (system) or with it (embedded)."""
    if request.param == "system":
        admin = system_pg_admin_url
        url = create_database(admin, template=request.getfixturevalue("migrated_system_template"))
    else:
        admin = request.getfixturevalue("embedded_admin_url")
        url = create_database(admin)
        migrate.upgrade(url)
    yield url
    drop_database(admin, url)


@pytest.fixture(scope="session")
def engine(migrated_url: str) -> Iterator[Engine]:
    """The database tests' engine, as the bots and workers make theirs (DATABASE_PREPARED_STATEMENTS on)."""
    engine = make_engine(migrated_url, prepared_statements=True)
    yield engine
    engine.dispose()


@pytest.fixture
def uow_factory(request: pytest.FixtureRequest, engine: Engine) -> Iterator[callable]:
    """Units of work inside one transaction that is rolled back after the test; for a test marked
    ``committed``, units of work that really commit, with the tables emptied after the test."""
    if request.node.get_closest_marker("committed"):
        factory = session_factory(engine)
        yield lambda: UnitOfWork(factory)
        with engine.begin() as connection:
            connection.execute(text(f"TRUNCATE {', '.join(APP_TABLES + DEPLOYMENT_TABLES)} RESTART IDENTITY CASCADE"))
        return
    with engine.connect() as connection:
        outer = connection.begin()
        factory = sessionmaker(bind=connection, expire_on_commit=False, join_transaction_mode="create_savepoint")
        yield lambda: UnitOfWork(factory)
        outer.rollback()


@pytest.fixture
def marking_uow_factory(request: pytest.FixtureRequest, uow_factory: callable, engine: Engine) -> callable:
    """Units of work as the Telegram webhook's wiring makes them: each commit marks the update in hand handled in
    its transaction (:func:`shared.db.update_log.marked_in`). For tests marked ``committed`` (``uow_factory``
    empties the tables afterwards)."""
    assert request.node.get_closest_marker("committed"), "marking units of work commit for real: mark the test"
    sessions = session_factory(engine)
    return lambda: UnitOfWork(sessions, around_commit=marked_in)


@pytest.fixture
def telegram() -> Iterator[FakeTelegram]:
    """The fake Telegram Bot API on loopback."""
    with FakeTelegram() as server:
        yield server


@pytest.fixture
def discord() -> Iterator[FakeDiscord]:
    """The fake Discord REST API on loopback."""
    with FakeDiscord() as server:
        yield server


def audit_of(uow: UnitOfWork, user_id: int, memory_id: int) -> list[MemoryEvent]:
    """A memory's audit trail, oldest first (read from the table: no service reads it back)."""
    query = select(MemoryEvent).where(MemoryEvent.user_id == user_id, MemoryEvent.memory_id == memory_id)
    return list(uow.session.scalars(query.order_by(MemoryEvent.id)))
