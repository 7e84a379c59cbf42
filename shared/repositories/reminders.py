"""Todos and reminders, and the atomic claim of the ones that fall due."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from shared.db.memory_models import Todo
from shared.text import clean_text

CLAIM_LEASE = timedelta(minutes=5)
"""A claimed reminder not marked sent within this time is claimable again (the worker died)."""


class TodoRepository:
    """One user's todos, plus the cross-user claim used by the reminder scan."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def add(self, todo: Todo) -> Todo:
        todo.content = clean_text(todo.content, 2000)
        self.session.add(todo)
        self.session.flush()
        return todo

    def get(self, user_id: int, todo_id: int) -> Todo | None:
        query = select(Todo).where(Todo.user_id == user_id, Todo.id == todo_id)
        return self.session.scalars(query).one_or_none()

    def for_user(self, user_id: int, statuses: tuple[str, ...] = ("pending",)) -> list[Todo]:
        query = select(Todo).where(Todo.user_id == user_id, Todo.status.in_(statuses))
        return list(self.session.scalars(query.order_by(Todo.remind_at, Todo.id)))

    def claim_due(self, now: datetime, limit: int = 100, lease: timedelta = CLAIM_LEASE) -> list[Todo]:
        """Lease pending reminders that are due; concurrent callers never get the same row."""
        due = (
            select(Todo.id)
            .where(Todo.status == "pending", Todo.remind_at <= now,
                   or_(Todo.claimed_until.is_(None), Todo.claimed_until < now))
            .order_by(Todo.remind_at)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        claimed = (
            update(Todo)
            .where(Todo.id.in_(due.scalar_subquery()))
            .values(claimed_until=now + lease, attempts=Todo.attempts + 1)
            .returning(Todo)
        )
        return list(self.session.scalars(claimed))

    def mark_sent(self, todo_id: int, now: datetime) -> bool:
        """Mark a claimed reminder sent; False if it was cancelled or sent meanwhile."""
        result = self.session.execute(
            update(Todo).where(Todo.id == todo_id, Todo.status == "pending")
            .values(status="sent", sent_at=now, claimed_until=None, updated_at=now)
        )
        return result.rowcount == 1
