"""Where shared rate limits count (:mod:`shared.limits`): Redis when it is the broker, else
:class:`PostgresStorage`, a ``limits`` storage in PostgreSQL: one row a counter, its window's end beside it.

Each operation is one short statement on the database's clock. An increment that finds its window
ended starts a new one in the same statement, so concurrent replicas never lose a hit. Rows of ended
windows are removed now and then by the increments themselves.
"""

from __future__ import annotations

import itertools
import time

from limits.storage import Storage, storage_from_string
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from shared.db.limit_models import RateLimitCounter

TABLE = RateLimitCounter.__tablename__
PRUNE_EVERY = 1000
"""One increment in this many also removes the counters whose window ended an hour ago."""

INCREMENT = text(f"""
    INSERT INTO {TABLE} (key, count, expires_at) VALUES (:key, :amount, now() + make_interval(secs => :expiry))
    ON CONFLICT (key) DO UPDATE SET
        count = CASE WHEN {TABLE}.expires_at <= now() THEN EXCLUDED.count ELSE {TABLE}.count + EXCLUDED.count END,
        expires_at = CASE WHEN {TABLE}.expires_at <= now() THEN EXCLUDED.expires_at ELSE {TABLE}.expires_at END
    RETURNING count""")
COUNT = text(f"SELECT count FROM {TABLE} WHERE key = :key AND expires_at > now()")
EXPIRY = text(f"SELECT extract(epoch FROM expires_at) FROM {TABLE} WHERE key = :key AND expires_at > now()")
PRUNE = text(f"DELETE FROM {TABLE} WHERE expires_at < now() - interval '1 hour'")


def shared_storage(redis_url: str | None, engine: Engine) -> Storage:
    """Redis when it is the broker, else the database: where every replica finds the same counts."""
    if not redis_url:
        return PostgresStorage(engine)
    storage = storage_from_string(redis_url)
    if not isinstance(storage, Storage):  # an ``async+`` scheme: the limiters here are not asyncio ones
        raise ValueError(f"the Redis URL for rate limits names an asyncio storage: {redis_url.split('://')[0]}")
    return storage


class PostgresStorage(Storage):
    """Counters of ``limits``' fixed windows in the ``rate_limit_counters`` table."""

    def __init__(self, engine: Engine, wrap_exceptions: bool = False) -> None:
        super().__init__(None, wrap_exceptions=wrap_exceptions)
        self.engine = engine
        self._increments = itertools.count(1)

    @property
    def base_exceptions(self) -> type[Exception]:
        return DBAPIError

    def incr(self, key: str, expiry: float, amount: int = 1) -> int:
        with self.engine.begin() as connection:
            count = connection.scalar(INCREMENT, {"key": key, "amount": amount, "expiry": float(expiry)})
            if next(self._increments) % PRUNE_EVERY == 0:
                connection.execute(PRUNE)
        return int(count)

    def get(self, key: str) -> int:
        with self.engine.connect() as connection:
            return int(connection.scalar(COUNT, {"key": key}) or 0)

    def get_expiry(self, key: str) -> float:
        with self.engine.connect() as connection:
            ends = connection.scalar(EXPIRY, {"key": key})
        return float(ends) if ends is not None else time.time()

    def check(self) -> bool:
        try:
            with self.engine.connect() as connection:
                connection.execute(text("SELECT 1"))
        except DBAPIError:
            return False
        return True

    def clear(self, key: str) -> None:
        with self.engine.begin() as connection:
            connection.execute(text(f"DELETE FROM {TABLE} WHERE key = :key"), {"key": key})

    def reset(self) -> int | None:
        with self.engine.begin() as connection:
            return connection.execute(text(f"DELETE FROM {TABLE}")).rowcount
