"""One holder at a time for a named duty (beat), as a lease row that the holder renews.

A lease is taken when it is free or expired, renewed every third of its time by the holder, and
given back on a clean stop; a holder that died loses it when it expires, so another process can
take over. Every statement is one short transaction on the database's own clock, which a pooler in
transaction mode (PgBouncer) passes through unchanged (docs/scaling.md).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, TextClause, text

from shared.db.lease_models import LeaseRow

log = logging.getLogger(__name__)

TABLE = LeaseRow.__tablename__
TAKE = text(f"""
    INSERT INTO {TABLE} (name, holder, expires_at)
    VALUES (:name, :holder, now() + make_interval(secs => :seconds))
    ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
    WHERE {TABLE}.expires_at < now() OR {TABLE}.holder = EXCLUDED.holder
    RETURNING holder""")
RENEW = text(f"""
    UPDATE {TABLE} SET expires_at = now() + make_interval(secs => :seconds)
    WHERE name = :name AND holder = :holder RETURNING holder""")
GIVE_BACK = text(f"DELETE FROM {TABLE} WHERE name = :name AND holder = :holder")
HOLDER_OF = text(f"SELECT holder FROM {TABLE} WHERE name = :name AND expires_at >= now()")


def new_holder() -> str:
    """Who this process is, as a lease names it: host, pid and a random part (pids repeat in containers)."""
    return f"{socket.gethostname()[:100]}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


class Lease:
    """The lease ``name`` for ``seconds``, as held (or not) by this process."""

    def __init__(self, engine: Engine, name: str, seconds: float = 30.0, holder: str | None = None) -> None:
        self.engine, self.name, self.seconds = engine, name, seconds
        self.holder = holder or new_holder()

    def take(self) -> bool:
        """True when this process holds the lease now (it was free, expired, or already ours)."""
        return self._run(TAKE)

    def renew(self) -> bool:
        """True while this process still holds the lease; False once another took it after it expired."""
        return self._run(RENEW)

    def give_back(self) -> None:
        with self.engine.begin() as connection:
            connection.execute(GIVE_BACK, {"name": self.name, "holder": self.holder})

    def current_holder(self) -> str | None:
        with self.engine.connect() as connection:
            holder: str | None = connection.scalar(HOLDER_OF, {"name": self.name})
        return holder

    @contextmanager
    def kept(self, on_lost: Callable[[], None]) -> Iterator[None]:
        """Renew the lease in a thread while the block runs; ``on_lost`` is called (once, from that
        thread) if it cannot be renewed: it expired and another process took it, or the database stayed
        away for the whole lease. The lease is given back when the block ends."""
        stop = threading.Event()
        thread = threading.Thread(target=self._keep, args=(stop, on_lost), name=f"lease-{self.name}", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=self.seconds)
            try:
                self.give_back()
            except Exception:  # it expires on its own
                log.warning("could not give back the %s lease; it expires in %.0f s", self.name, self.seconds)

    def _keep(self, stop: threading.Event, on_lost: Callable[[], None]) -> None:
        failures = 0
        while not stop.wait(self.seconds / 3):
            try:
                held = self.renew()
            except Exception as exc:  # the database is away: try again until the lease would have run out
                failures += 1
                log.warning("could not renew the %s lease (%s)", self.name, type(exc).__name__)
                held = failures < 3
            else:
                failures = 0
            if not held:
                log.error("the %s lease was lost; stopping", self.name)
                on_lost()
                return

    def _run(self, statement: TextClause) -> bool:
        with self.engine.begin() as connection:
            holder: str | None = connection.scalar(statement, {"name": self.name, "holder": self.holder,
                                                               "seconds": self.seconds})
        return holder == self.holder
