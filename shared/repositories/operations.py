"""What the whole deployment's data says about its health, for the metrics: work owed in the outbox, memories
per tier, reminders past their time. Counts over every user, never one user's rows; read at scrape time by
beat (``shared/app/state_metrics.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from shared.db.memory_models import Memory, OutboxJob, Todo
from shared.repositories.memories import active

OWED_STATUSES = ("pending", "sent")


@dataclass(frozen=True)
class OperationalSnapshot:
    """Owed outbox jobs by status and when the oldest was owed; active memories by tier; pending reminders
    whose time has passed and the time of the oldest."""

    owed_jobs: dict[str, int] = field(default_factory=dict)
    oldest_owed_at: datetime | None = None
    memories_by_tier: dict[str, int] = field(default_factory=dict)
    overdue_reminders: int = 0
    oldest_overdue_at: datetime | None = None


class OperationsRepository:
    """Three aggregate queries; the outbox and reminder ones read only their partial indexes' rows."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def snapshot(self, now: datetime) -> OperationalSnapshot:
        owed = self.session.execute(
            select(OutboxJob.status, func.count(), func.min(OutboxJob.created_at))
            .where(OutboxJob.status.in_(OWED_STATUSES)).group_by(OutboxJob.status)).all()
        tiers = self.session.execute(select(Memory.tier, func.count()).where(active()).group_by(Memory.tier)).all()
        overdue, oldest_due = self.session.execute(
            select(func.count(), func.min(Todo.remind_at)).where(Todo.status == "pending", Todo.remind_at <= now)).one()
        return OperationalSnapshot(
            owed_jobs={status: count for status, count, _ in owed},
            oldest_owed_at=min((oldest for _, _, oldest in owed), default=None),
            memories_by_tier={tier: count for tier, count in tiers},
            overdue_reminders=overdue, oldest_overdue_at=oldest_due)
