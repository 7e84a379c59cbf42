"""Whole-account operations: every row of one user, across all tables.

Forgetting everything learnt from a user, merging two users when their identities are linked,
handing pending reminders to a split-off user, and reading or adding every row for export and
import. Bulk statements here do not update objects already loaded (``synchronize_session=False``):
the caller reloads them with ``uow.forget_loaded()`` where it still reads them. Imported rows go in
with a few multi-row INSERTs (:mod:`shared.repositories.bulk_rows`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TypeVar

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from shared.db.memory_models import Episode, Memory, MemoryEvent, OutboxJob, Profile, Todo
from shared.db.models import Chat, ConversationSession, ConversationTurn, Identity, User
from shared.db.thread_models import OpenThread
from shared.repositories.bulk_rows import insert_rows

LEARNT_FROM_THE_USER = (ConversationTurn, Episode, ConversationSession, Profile, OutboxJob, OpenThread)
"""Deleted by "forget everything" besides the memories (open threads too); reminders and identities stay."""
MOVED_WITH_THE_USER = (Memory, MemoryEvent, Episode, Todo, ConversationTurn, ConversationSession, OpenThread)
"""Moved as they are when two users merge; owed jobs and the profile need more care."""
OWNED_ROWS = (Memory, Episode, Todo, ConversationTurn, OpenThread)
"""The tables an export reads whole and an import adds to."""
_BULK = {"synchronize_session": False}

Owned = TypeVar("Owned", Memory, Episode, Todo, ConversationTurn, OpenThread)


class AccountDataRepository:
    """Statements that span every table of one user (or move one user's rows to another)."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def delete_learnt(self, user_id: int) -> None:
        """Delete the user's turns, episodes, working memory, profile and owed jobs."""
        for model in LEARNT_FROM_THE_USER:
            self.session.execute(delete(model).where(model.user_id == user_id).execution_options(**_BULK))

    def lock_users(self, *user_ids: int) -> None:
        """Lock the users in id order, so two merges at once cannot interleave."""
        self.session.execute(select(User.id).where(User.id.in_(user_ids)).order_by(User.id).with_for_update())

    def new_user(self, paused_at: datetime | None = None) -> User:
        """A user without identities yet (its id is known on return)."""
        user = User(paused_at=paused_at)
        self.session.add(user)
        self.session.flush()
        return user

    def move_rows(self, source: int, target: int, *, with_profile: bool) -> None:
        """Give every row of ``source`` to ``target``: memories and their audit, episodes, todos, turns,
        working memory, owed jobs (and a ``user_id`` in their payload); the profile when asked."""
        for model in MOVED_WITH_THE_USER:
            self.session.execute(update(model).where(model.user_id == source).values(user_id=target)
                                 .execution_options(**_BULK))
        self.session.execute(
            update(OutboxJob).where(OutboxJob.user_id == source, OutboxJob.payload.has_key("user_id"))
            .values(payload=OutboxJob.payload.op("||")(func.jsonb_build_object("user_id", target)))
            .execution_options(**_BULK))
        self.session.execute(update(OutboxJob).where(OutboxJob.user_id == source).values(user_id=target)
                             .execution_options(**_BULK))
        if with_profile:
            self.session.execute(update(Profile).where(Profile.user_id == source).values(user_id=target)
                                 .execution_options(**_BULK))

    def retire_user(self, source: int, target: int) -> None:
        """Move the identities of ``source`` to ``target`` and delete ``source``."""
        self.session.execute(update(Identity).where(Identity.user_id == source).values(user_id=target)
                             .execution_options(**_BULK))
        self.session.execute(delete(User).where(User.id == source).execution_options(**_BULK))

    def move_pending_reminders(self, source: int, target: int, platform: str) -> None:
        """Give ``target`` the pending reminders of ``source`` that ping in a chat on ``platform``."""
        on_platform = select(Chat.id).where(Chat.platform == platform)
        self.session.execute(update(Todo).where(Todo.user_id == source, Todo.status == "pending",
                                                Todo.chat_id.in_(on_platform))
                             .values(user_id=target).execution_options(**_BULK))

    def owned(self, user_id: int, model: type[Owned]) -> list[Owned]:
        """Every row of ``model`` (one of :data:`OWNED_ROWS`) the user owns, in id order."""
        if model not in OWNED_ROWS:
            raise ValueError(f"not a table of owned rows: {model.__name__}")
        return list(self.session.scalars(select(model).where(model.user_id == user_id).order_by(model.id)))

    def add_owned(self, user_id: int, rows: Sequence[Owned]) -> None:
        """Add new rows of one of :data:`OWNED_ROWS` for the user, a thousand to a statement; their ids and
        server defaults are set on them on return. They stay out of the session (change them by statements)."""
        if rows and type(rows[0]) not in OWNED_ROWS:
            raise ValueError(f"not a table of owned rows: {type(rows[0]).__name__}")
        for row in rows:
            row.user_id = user_id
        insert_rows(self.session, rows)
