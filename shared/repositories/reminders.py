"""Todos and reminders, and the atomic claim of the ones that fall due."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete, func, or_, select, text, update
from sqlalchemy.orm import Session

from shared.db.kinds import TodoStatus
from shared.db.memory_models import Todo
from shared.db.models import Chat
from shared.db.results import rows_changed
from shared.text import clean_text

CLAIM_LEASE = timedelta(minutes=5)
"""A claimed reminder not marked sent within this time is claimable again (the worker died)."""
CLAIMS_PER_USER = 10
"""One scan claims at most this many of one user's due reminders, so one user's backlog (an old file
imported, a worker down for a day) cannot hold back everyone else's: the rest go in later scans."""
MAX_ERROR_CHARS = 1000


class TodoRepository:
    """One user's todos, plus what works across users and says so: the reminder scan's claim, the
    delivery job's lock, and a chat that moved."""

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

    def for_user(self, user_id: int, statuses: tuple[str, ...] = (TodoStatus.PENDING,)) -> list[Todo]:
        query = select(Todo).where(Todo.user_id == user_id, Todo.status.in_(statuses))
        return list(self.session.scalars(query.order_by(Todo.remind_at, Todo.id)))

    def soonest_pending(self, user_id: int, limit: int, *,
                        due_before: datetime | None = None) -> list[tuple[str, datetime]]:
        """(content, due) of the user's first ``limit`` pending reminders, soonest first (only those due
        before ``due_before`` when given): what a turn's note shows."""
        query = select(Todo.content, Todo.due_at).where(Todo.user_id == user_id, Todo.status == TodoStatus.PENDING)
        if due_before is not None:
            query = query.where(Todo.remind_at < due_before)
        return [(content, due) for content, due in self.session.execute(
            query.order_by(Todo.remind_at, Todo.id).limit(limit))]

    def hold_pending_count(self, user_id: int) -> None:
        """Hold the user's row until the transaction ends (``FOR NO KEY UPDATE``: rows that only point at the
        user do not wait): counting their pending reminders and adding one is then one step, whatever runs
        at once on any process (the cap of :mod:`shared.reminders.scheduling`)."""
        self.session.execute(text("SELECT id FROM users WHERE id = :id FOR NO KEY UPDATE"), {"id": user_id})

    def count_pending(self, user_id: int) -> int:
        """How many of the user's reminders are pending (the cap of :mod:`shared.reminders.scheduling`)."""
        query = select(func.count()).select_from(Todo).where(Todo.user_id == user_id, Todo.status == TodoStatus.PENDING)
        return self.session.scalar(query) or 0

    def claim_due(self, now: datetime, limit: int = 100, lease: timedelta = CLAIM_LEASE,
                  per_user: int = CLAIMS_PER_USER) -> list[Todo]:
        """Lease every user's pending reminders that are due (the beat's scan), soonest first but at most
        ``per_user`` of each user's; concurrent callers never get the same row."""
        claimable = (Todo.status == TodoStatus.PENDING, Todo.remind_at <= now,
                     or_(Todo.claimed_until.is_(None), Todo.claimed_until < now))
        place = func.row_number().over(partition_by=Todo.user_id, order_by=(Todo.remind_at, Todo.id))
        ranked = select(Todo.id, place.label("place")).where(*claimable).subquery()
        fair = select(ranked.c.id).where(ranked.c.place <= per_user)
        due = (
            select(Todo.id)
            .where(Todo.id.in_(fair), *claimable)  # checked again on the row it locks
            .order_by(Todo.remind_at, Todo.id)
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

    def lock_for_delivery(self, todo_id: int) -> Todo | None:
        """Any user's todo, locked, for the delivery job that carries only its id: the row's
        ``user_id`` says whose it is, and every change that follows is scoped by it."""
        return self.session.get(Todo, todo_id, with_for_update=True)

    def sent_on_platform(self, user_id: int, platform: str, since: datetime, until: datetime) -> list[Todo]:
        """The user's reminders sent in (``since``, ``until``] to chats on ``platform``, in sending order."""
        chats = select(Chat.id).where(Chat.platform == platform)
        query = (select(Todo)
                 .where(Todo.user_id == user_id, Todo.status == TodoStatus.SENT, Todo.sent_at > since,
                        Todo.sent_at <= until, Todo.chat_id.in_(chats))
                 .order_by(Todo.sent_at, Todo.id))
        return list(self.session.scalars(query))

    def mark_sent(self, user_id: int, todo_id: int, attempt: int, now: datetime) -> bool:
        """Mark a claimed reminder sent; False if it was cancelled, sent or claimed again meanwhile."""
        return self._update_claimed(user_id, todo_id, attempt, status=TodoStatus.SENT, sent_at=now, claimed_until=None,
                                    updated_at=now)

    def cancel_refused(self, user_id: int, todo_id: int, attempt: int, reason: str, now: datetime) -> bool:
        """The platform will never deliver it: cancelled, with ``refused: <reason>`` as its error."""
        return self._update_claimed(user_id, todo_id, attempt, status=TodoStatus.CANCELLED, claimed_until=None,
                                    last_error=f"refused: {reason}"[:MAX_ERROR_CHARS], updated_at=now)

    def note_failure(self, user_id: int, todo_id: int, attempt: int, error: str, now: datetime, *,
                     hold_until: datetime | None = None) -> bool:
        """Record why a send failed; the claim stays, held at least until ``hold_until`` when given."""
        values: dict[str, object] = {"last_error": error[:MAX_ERROR_CHARS], "updated_at": now}
        if hold_until is not None:
            values["claimed_until"] = func.greatest(Todo.claimed_until, hold_until)
        return self._update_claimed(user_id, todo_id, attempt, **values)

    def delete_for_user(self, user_id: int) -> int:
        """Delete every reminder of the user, whatever it holds (no row is read); how many there were."""
        result = self.session.execute(delete(Todo).where(Todo.user_id == user_id)
                                      .execution_options(synchronize_session=False))
        return rows_changed(result)

    def move_pending_to_chat(self, from_chat_id: int, to_chat_id: int) -> None:
        """Every user's pending reminders in a chat that moved go with it (the chat, not a user, moved)."""
        self.session.execute(
            update(Todo).where(Todo.chat_id == from_chat_id, Todo.status == TodoStatus.PENDING)
            .values(chat_id=to_chat_id).execution_options(synchronize_session=False))

    def _update_claimed(self, user_id: int, todo_id: int, attempt: int, **values: object) -> bool:
        """Apply ``values`` only if the todo is still pending under claim ``attempt``."""
        result = self.session.execute(
            update(Todo).where(Todo.user_id == user_id, Todo.id == todo_id, Todo.status == TodoStatus.PENDING,
                               Todo.attempts == attempt)
            .values(**values).execution_options(synchronize_session=False))
        return rows_changed(result) == 1
