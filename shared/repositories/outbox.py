"""The jobs outbox: background work recorded in the same transaction as its cause.

A job remembers the log context it was owed in (the turn, platform and user hash of
:mod:`shared.log_context`), so the worker's log lines about it carry the same fields.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, or_, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from shared import log_context
from shared.db.memory_models import OutboxJob
from shared.repositories.bulk_rows import insert_values


class OutboxRepository:
    """Adds owed jobs (deduplicated by key) and tracks them until a worker has done them."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def add(self, task: str, payload: dict[str, Any], *, dedup_key: str | None = None,
            user_id: int | None = None, available_at: datetime | None = None) -> int | None:
        """Record a job; returns its id, or None when a job with the same key already exists."""
        values: dict[str, Any] = {"task": task, "payload": payload, "dedup_key": dedup_key, "user_id": user_id,
                                  "log_context": log_context.carried() or None}
        if available_at is not None:
            values["available_at"] = available_at
        statement = insert(OutboxJob).values(**values)
        if dedup_key is not None:
            statement = statement.on_conflict_do_nothing(
                index_elements=["dedup_key"], index_where=OutboxJob.dedup_key.is_not(None))
        return self.session.execute(statement.returning(OutboxJob.id)).scalar_one_or_none()

    def add_each(self, task: str, jobs: dict[str, dict[str, Any]], *, user_id: int | None = None) -> None:
        """Record one job per dedup key (key) with its payload (value), in one statement; a key already
        owed is skipped."""
        context = log_context.carried() or None
        insert_values(self.session, OutboxJob, [{"task": task, "payload": payload, "dedup_key": key,
                                                 "user_id": user_id, "log_context": context}
                                                for key, payload in jobs.items()],
                      skip_conflicts=True)

    def owed(self, older_than: datetime, limit: int = 100) -> list[OutboxJob]:
        """Jobs not done whose last dispatch (or creation) is older than ``older_than``, and that no worker has
        been running since then (a job whose worker still renews its claim is never owed again)."""
        query = (
            select(OutboxJob)
            .where(OutboxJob.status.in_(("pending", "sent")), OutboxJob.available_at <= older_than,
                   or_(OutboxJob.running_until.is_(None), OutboxJob.running_until <= older_than))
            .order_by(OutboxJob.available_at)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        return list(self.session.scalars(query))

    def still_owed(self, job_ids: list[int]) -> list[OutboxJob]:
        """Those of the jobs that are not done yet."""
        query = select(OutboxJob).where(OutboxJob.id.in_(job_ids), OutboxJob.status.in_(("pending", "sent")))
        return list(self.session.scalars(query))

    def is_done(self, job_id: int) -> bool:
        """True when the job is done, or gone (its user was forgotten)."""
        job = self.session.get(OutboxJob, job_id)
        return job is None or job.status == "done"

    def user_of(self, job_id: int) -> int | None:
        """Whose work the job is (None for a job of no one, or one gone)."""
        return self.session.scalar(select(OutboxJob.user_id).where(OutboxJob.id == job_id))

    def put_off(self, job_id: int, until: datetime) -> None:
        """Owe the job again from ``until`` (a user over quota): the sweep sends it after that, not before."""
        self.session.execute(
            update(OutboxJob).where(OutboxJob.id == job_id, OutboxJob.status != "done")
            .values(status="pending", available_at=until)
        )

    def mark_sent(self, job_id: int, now: datetime) -> None:
        self.session.execute(
            update(OutboxJob).where(OutboxJob.id == job_id, OutboxJob.status != "done")
            .values(status="sent", sent_at=now, available_at=now, attempts=OutboxJob.attempts + 1)
        )

    def mark_done(self, job_id: int, now: datetime) -> tuple[str, datetime] | None:
        """Mark a job done; its task and when it was owed, or None when it already was done (the task ran twice)."""
        row = self.session.execute(
            update(OutboxJob).where(OutboxJob.id == job_id, OutboxJob.status != "done")
            .values(status="done", done_at=now, running_until=None).returning(OutboxJob.task, OutboxJob.created_at)
        ).one_or_none()
        return (row.task, row.created_at) if row is not None else None

    def extraction_owed_up_to(self, user_id: int) -> int:
        """The latest user turn an extraction job still owed for the user reads up to (0: none owed)."""
        turn_id = OutboxJob.payload["turn_id"].as_integer()
        query = select(func.max(turn_id)).where(OutboxJob.user_id == user_id, OutboxJob.task == "extract_turn",
                                                OutboxJob.status.in_(("pending", "sent")))
        return self.session.scalar(query) or 0

    def claim(self, job_id: int, now: datetime, until: datetime) -> bool:
        """This worker runs the job until ``until``; False when it is done, or another worker's claim still runs."""
        claimed = self.session.execute(
            update(OutboxJob).where(OutboxJob.id == job_id, OutboxJob.status != "done",
                                    or_(OutboxJob.running_until.is_(None), OutboxJob.running_until <= now))
            .values(running_until=until).returning(OutboxJob.id)
        ).one_or_none()
        return claimed is not None

    def renew_claim(self, job_id: int, until: datetime) -> None:
        self.session.execute(update(OutboxJob).where(OutboxJob.id == job_id, OutboxJob.status != "done")
                             .values(running_until=until))

    def release_claim(self, job_id: int) -> None:
        """The worker stopped running the job without finishing it (it failed, or was put off)."""
        self.session.execute(update(OutboxJob).where(OutboxJob.id == job_id).values(running_until=None))
