"""The worker's side of ``mnemo bench replay``: the jobs a turn owes, idle sittings, the nightly maintenance.

No broker and no worker process: the Celery tasks of :mod:`worker.tasks` are called in-process (``task.run``,
the body Celery runs) with a worker context whose clock is the replay's (:func:`worker.context.running_with`).
After every played turn the outbox's owed jobs are run (extraction, episode summaries). Between one moment of
the replay and the next, the beat's schedule (:func:`worker.schedule.beat_schedule`) is followed: a sitting
idle for ``SESSION_IDLE_MINUTES`` is closed at the beat's next idle-close run and summarised into an episode,
and every day crossed runs the daily maintenance (decay, reviews, dedup) at its hour, with that time as now.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING

from worker.context import WorkerContext

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from bench.replay_play import ReplayClock
    from shared.llm.client import ChatModel
    from shared.settings import Settings

DAILY_TASKS = ("run_maintenance",)
IDLE_CLOSE_ENTRY = "close-idle-sessions"
NEVER = datetime(9999, 1, 1, tzinfo=UTC)
"""Owed jobs are run whenever their row says they are available (rows are stamped by the database's clock)."""
OWED_BATCH = 100


@dataclass
class ReplayWorkerContext(WorkerContext):
    """A worker context that reads the replay clock."""

    clock: Callable[[], datetime]

    def now(self) -> datetime:  # type: ignore[override]
        return self.clock()


def daily_times(hour_utc: int) -> list[tuple[str, time]]:
    """The nightly tasks and their time of day, as the beat schedule runs them."""
    from worker.schedule import beat_schedule

    schedule = beat_schedule(daily_hour_utc=hour_utc)
    found = []
    for entry in schedule.values():
        name = entry["task"].removeprefix("mnemo.")
        if name in DAILY_TASKS:
            cron = entry["schedule"]
            found.append((name, time(min(cron.hour), min(cron.minute), tzinfo=UTC)))
    return sorted(found, key=lambda item: item[1])


def idle_close_every() -> timedelta:
    from worker.schedule import beat_schedule

    return timedelta(seconds=beat_schedule()[IDLE_CLOSE_ENTRY]["schedule"])


class ReplayWorker:
    """Runs the worker's tasks for the replay, in replay time."""

    def __init__(self, ctx: ReplayWorkerContext, clock: ReplayClock, idle: timedelta, daily_hour_utc: int = 3) -> None:
        self.ctx, self.clock, self.idle = ctx, clock, idle
        self.nightly = daily_times(daily_hour_utc)
        self.idle_every = idle_close_every()
        self.jobs_run = 0
        self.nights = 0
        self.after_drain: Callable[[], None] | None = None
        """Called after every drain (the replay notes what new memories and episodes were drawn from)."""

    def drain(self) -> None:
        """Every owed job, once each, through its task (a job a task leaves owed waits for the next drain)."""
        from worker import tasks

        tried: set[int] = set()
        while True:
            with self.ctx.uow() as uow:
                owed = [(job.id, job.task, dict(job.payload)) for job in uow.outbox.owed(NEVER, limit=OWED_BATCH)
                        if job.id not in tried]
            if not owed:
                if self.after_drain is not None:
                    self.after_drain()
                return
            for job_id, task, payload in owed:
                tried.add(job_id)
                getattr(tasks, task).run(job_id=job_id, **payload)
                self.jobs_run += 1

    def catch_up(self, since: datetime, until: datetime, last_activity: datetime | None) -> None:
        """What the beat runs after ``since`` up to ``until``: the idle close of the sitting last active at
        ``last_activity``, and the nightly tasks of every day crossed, in time order; the clock ends at ``until``."""
        ticks: list[tuple[datetime, str]] = []
        if last_activity is not None and until - last_activity > self.idle:
            ticks.append((min(last_activity + self.idle + self.idle_every, until), "close_idle_sessions"))
        day: date = since.date()
        while day <= until.date():
            ticks += [(at, name) for name, clock_time in self.nightly
                      if since < (at := datetime.combine(day, clock_time)) <= until]
            day += timedelta(days=1)
        for at, name in sorted(ticks):
            self.clock.now = at
            self._tick(name)
            self.drain()
        self.clock.now = until

    def _tick(self, name: str) -> None:
        from worker import tasks

        if name == "close_idle_sessions":
            self._close_idle_sessions()
            return
        getattr(tasks, name).run()
        if name == DAILY_TASKS[0]:
            self.nights += 1

    def _close_idle_sessions(self) -> None:
        """The beat's ``mnemo.close_idle_sessions`` task, but for handing the jobs to a broker: the drain runs them."""
        from shared.lifecycle import episodes

        episodes.close_idle_sittings(self.ctx.uow, self.ctx.now(), self.idle)


def worker_context(settings: Settings, engine: Engine, chat_model: ChatModel | None,
                   clock: Callable[[], datetime]) -> ReplayWorkerContext:
    """What a worker process builds for itself, on the replay's database, model and clock (no embedder: lexical)."""
    from shared.db.engine import session_factory
    from shared.repositories.vectors import VectorIndex
    from shared.usage.policy import QuotaPolicy

    return ReplayWorkerContext(settings=settings, engine=engine, chat_model=chat_model, embedder=None,
                               vectors=VectorIndex(), sessions=session_factory(engine),
                               quota=QuotaPolicy.from_settings(settings), clock=clock)
