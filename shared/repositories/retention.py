"""Every user's rows that age (the daily decay, :mod:`shared.lifecycle.decay`): episodes fade and go,
rounds past the retention the operator set and the daily decay audit are deleted, and so are expired
one-time tokens.

The batch methods take the next ``limit`` matching ids after ``after_id`` in id order, locked with
``FOR UPDATE SKIP LOCKED`` (two runs share the work instead of waiting on each other), act on those
rows and return their ids; the caller commits. Loaded objects are not updated.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ColumnElement, delete, or_, select, update
from sqlalchemy.orm import Session

from shared.db.memory_models import Episode, MemoryEvent
from shared.db.models import ConversationTurn
from shared.db.results import rows_changed
from shared.db.token_models import OneTimeToken

Aging = type[Episode] | type[ConversationTurn] | type[MemoryEvent]


class RetentionRepository:
    """Fades and deletes rows by age, whoever's they are."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def delete_episodes(self, *, ended_before: datetime, after_id: int, limit: int) -> list[int]:
        """Delete episodes that ended at or before ``ended_before`` (their turns stay)."""
        return self._delete(Episode, Episode.ended_at <= ended_before, after_id, limit)

    def fade_episodes(self, factor: float, now: datetime, *, ended_before: datetime, not_faded_since: datetime,
                      after_id: int, limit: int) -> list[int]:
        """Multiply the importance of episodes that ended at or before ``ended_before`` by ``factor``,
        unless they faded since ``not_faded_since``."""
        due = (Episode.ended_at <= ended_before) & or_(Episode.decayed_at.is_(None),
                                                        Episode.decayed_at < not_faded_since)
        ids = self._claim(Episode, due, after_id, limit)
        if ids:
            self.session.execute(update(Episode).where(Episode.id.in_(ids)).values(
                importance=Episode.importance * factor, decayed_at=now),
                execution_options={"synchronize_session": False})
        return ids

    def delete_rounds(self, *, said_before: datetime, after_id: int, limit: int) -> list[int]:
        """Delete conversation turns made at or before ``said_before`` and the bot's replies to them (a reply
        made a moment after the cutoff goes with its round); returns the ids of the turns that were due."""
        ids = self._claim(ConversationTurn, ConversationTurn.created_at <= said_before, after_id, limit)
        if ids:
            self.session.execute(delete(ConversationTurn).where(or_(ConversationTurn.id.in_(ids),
                                                                    ConversationTurn.reply_to_turn_id.in_(ids))),
                                 execution_options={"synchronize_session": False})
        return ids

    def delete_decay_events(self, *, made_before: datetime, after_id: int, limit: int) -> list[int]:
        """Delete the audit's daily ``decay`` events written at or before ``made_before``."""
        old_decay = (MemoryEvent.action == "decay") & (MemoryEvent.created_at <= made_before)
        return self._delete(MemoryEvent, old_decay, after_id, limit)

    def delete_expired_tokens(self, now: datetime) -> int:
        """Delete one-time tokens (confirmations, link codes, panel links) past their expiry; returns how many."""
        return rows_changed(self.session.execute(delete(OneTimeToken).where(OneTimeToken.expires_at <= now)))

    def _claim(self, model: Aging, condition: ColumnElement[bool], after_id: int, limit: int) -> list[int]:
        query = (select(model.id).where(condition, model.id > after_id).order_by(model.id).limit(limit)
                 .with_for_update(skip_locked=True))
        return list(self.session.scalars(query))

    def _delete(self, model: Aging, condition: ColumnElement[bool], after_id: int, limit: int) -> list[int]:
        ids = self._claim(model, condition, after_id, limit)
        if ids:
            self.session.execute(delete(model).where(model.id.in_(ids)),
                                 execution_options={"synchronize_session": False})
        return ids
