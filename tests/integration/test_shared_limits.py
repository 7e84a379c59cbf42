"""Limits shared by replicas: two limiters over separate storage clients (two processes, as far as the
storage can tell) count one key together, on Redis and on PostgreSQL; keys and limits stay apart."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis
from sqlalchemy import Engine, pool

from shared.db.engine import make_engine
from shared.limits import SharedLimit, shared_storage

REDIS_URL = "redis://127.0.0.1:6379/3"  # a Redis database no other test uses


@pytest.fixture
def database(migrated_system_db: str) -> Iterator[Engine]:
    engine = make_engine(migrated_system_db, poolclass=pool.NullPool)
    yield engine
    engine.dispose()


@pytest.fixture(params=["redis", "postgresql"])
def two_replicas(request: pytest.FixtureRequest, database: Engine) -> Iterator[tuple]:
    """Two storage clients of one shared store, as two replicas would open them."""
    if request.param == "redis":
        redis.Redis.from_url(REDIS_URL).flushdb()
        yield shared_storage(REDIS_URL, database), shared_storage(REDIS_URL, database)
    else:
        other = make_engine(database.url.render_as_string(hide_password=False), poolclass=pool.NullPool)
        yield shared_storage(None, database), shared_storage(None, other)
        other.dispose()


def test_two_replicas_count_one_key_together(two_replicas) -> None:
    first, second = (SharedLimit(storage, "sign-in", "3/minute") for storage in two_replicas)
    assert [first.hit("198.51.100.7"), second.hit("198.51.100.7"), first.hit("198.51.100.7")] == [None] * 3
    waits = [second.hit("198.51.100.7"), first.hit("198.51.100.7")]
    assert all(wait is not None and 1 <= wait <= 60 for wait in waits)
    assert second.hit("203.0.113.9") is None  # another key: counted apart
    assert SharedLimit(two_replicas[0], "messages", "3/minute").hit("198.51.100.7") is None  # another limit


def test_a_window_that_ended_counts_again_from_zero(two_replicas) -> None:
    first, second = (SharedLimit(storage, "burst", "2 per 1 second") for storage in two_replicas)
    assert first.hit("u") is None
    assert second.hit("u") is None
    assert first.hit("u") is not None
    time.sleep(1.1)  # the behaviour under test is the window's end
    assert second.hit("u") is None
