"""The deployment's state as gauges, read from the database when Prometheus scrapes: outbox depth and the age
of its oldest owed job, active memories per tier, reminders past their time.

Beat registers it (exactly one beat runs, so each figure is exported once however many workers there are).
A reading is kept for :data:`STATE_CACHE_SECONDS`, so scrapes from several Prometheus servers cost one set
of queries; while the database cannot be read, ``mnemo_database_state_up`` is 0 and the other gauges are absent.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from prometheus_client import REGISTRY
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import pool

from shared.db.engine import make_engine, session_factory
from shared.db.kinds import MEMORY_TIERS
from shared.repositories.operations import OWED_STATUSES, OperationalSnapshot
from shared.repositories.uow import UnitOfWork

STATE_CACHE_SECONDS = 10.0
log = logging.getLogger(__name__)


@contextmanager
def watch_database_state(database_url: str) -> Iterator[DatabaseStateCollector]:
    """The collector, in the default registry for as long as the block runs, reading through connections of its
    own (none is kept open between scrapes)."""
    engine = make_engine(database_url, poolclass=pool.NullPool, connect_args={"connect_timeout": 2})
    sessions = session_factory(engine)

    def read(now: datetime) -> OperationalSnapshot:
        with UnitOfWork(sessions) as uow:
            return uow.operations.snapshot(now)

    collector = DatabaseStateCollector(read)
    REGISTRY.register(collector)
    try:
        yield collector
    finally:
        REGISTRY.unregister(collector)
        engine.dispose()


class DatabaseStateCollector(Collector):
    """A Prometheus collector over ``read`` (one :class:`OperationalSnapshot` from the database)."""

    def __init__(self, read: Callable[[datetime], OperationalSnapshot],
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._read, self._clock = read, clock
        self._lock = threading.Lock()
        self._kept: tuple[float, OperationalSnapshot | None] | None = None

    def describe(self) -> Iterator[GaugeMetricFamily]:
        """The names only (registering does not query the database)."""
        yield from _families(None, None)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        now = self._clock()
        yield from _families(self._snapshot(now), now)

    def _snapshot(self, now: datetime) -> OperationalSnapshot | None:
        with self._lock:
            if self._kept is not None and time.monotonic() - self._kept[0] < STATE_CACHE_SECONDS:
                return self._kept[1]
            try:
                snapshot = self._read(now)
            except Exception as exc:  # a scrape reports the database as unreadable; it never fails
                log.warning("the database state could not be read for the metrics: %s", type(exc).__name__)
                snapshot = None
            self._kept = (time.monotonic(), snapshot)
            return snapshot


def _families(snapshot: OperationalSnapshot | None, now: datetime | None) -> Iterator[GaugeMetricFamily]:
    up = GaugeMetricFamily("mnemo_database_state_up", "1 when the last reading of the database's state succeeded.")
    jobs = GaugeMetricFamily("mnemo_outbox_jobs", "Jobs owed in the outbox (not done), by status.", labels=["status"])
    oldest = GaugeMetricFamily("mnemo_outbox_oldest_job_age_seconds",
                               "Age of the oldest job still owed in the outbox (0 when none is).")
    tiers = GaugeMetricFamily("mnemo_memories", "Active memories (not deleted, not superseded), by tier.",
                              labels=["tier"])
    overdue = GaugeMetricFamily("mnemo_reminders_overdue", "Pending reminders whose time has passed.")
    late = GaugeMetricFamily("mnemo_reminder_oldest_overdue_seconds",
                             "How long the oldest pending reminder is past its time (0 when none is).")
    if snapshot is not None and now is not None:
        for status in OWED_STATUSES:
            jobs.add_metric([status], snapshot.owed_jobs.get(status, 0))
        oldest.add_metric([], _age(snapshot.oldest_owed_at, now))
        for tier in MEMORY_TIERS:
            tiers.add_metric([tier], snapshot.memories_by_tier.get(tier, 0))
        overdue.add_metric([], snapshot.overdue_reminders)
        late.add_metric([], _age(snapshot.oldest_overdue_at, now))
    if now is not None:
        up.add_metric([], 1 if snapshot is not None else 0)
    yield from (up, jobs, oldest, tiers, overdue, late)


def _age(since: datetime | None, now: datetime) -> float:
    return max((now - since).total_seconds(), 0.0) if since is not None else 0.0
