"""Open threads (:mod:`shared.followups`): one user's, plus the follow-up scan's claim across users and the
delivery job's lock, which say so."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import CursorResult, Update, and_, func, or_, select, text, update
from sqlalchemy.orm import Session

from shared.db.kinds import ThreadStatus
from shared.db.models import Chat, ConversationTurn, User
from shared.db.thread_models import OpenThread
from shared.repositories.reminders import MAX_ERROR_CHARS
from shared.text import clean_text

MAX_WHAT_CHARS = 300


class ThreadRepository:
    """Notes, closes and answers a user's open threads; claims and locks the follow-ups that are due."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def add(self, thread: OpenThread) -> OpenThread:
        thread.what = clean_text(thread.what, MAX_WHAT_CHARS).strip()
        self.session.add(thread)
        self.session.flush()
        return thread

    def open_of(self, user_id: int) -> list[OpenThread]:
        """The user's threads still waiting for their follow-up, soonest first."""
        query = select(OpenThread).where(OpenThread.user_id == user_id, OpenThread.status == ThreadStatus.OPEN)
        return list(self.session.scalars(query.order_by(OpenThread.happens_at, OpenThread.id)))

    def listed(self, user_id: int, limit: int) -> list[OpenThread]:
        """What ``/followups list`` shows: the open threads, then those asked and not yet answered."""
        query = (select(OpenThread)
                 .where(OpenThread.user_id == user_id,
                        OpenThread.status.in_((ThreadStatus.OPEN, ThreadStatus.ASKED)))
                 .order_by(OpenThread.status.desc(), OpenThread.happens_at, OpenThread.id).limit(limit))
        return list(self.session.scalars(query))

    def close(self, user_id: int, thread_id: int, reason: str, now: datetime) -> bool:
        """Close an open thread (cancelled, corrected); False when it was no longer open."""
        return self._changed(
            update(OpenThread).where(OpenThread.user_id == user_id, OpenThread.id == thread_id,
                                     OpenThread.status == ThreadStatus.OPEN)
            .values(status=ThreadStatus.CLOSED, closed_reason=reason, claimed_until=None, updated_at=now)) == 1

    def answer_in_chat(self, user_id: int, chat_id: int, turn_id: int, now: datetime) -> int:
        """The user wrote (their turn ``turn_id``) in a chat where a follow-up asked them before: those threads
        are answered (how many). "Before" is by the turns' order, not by clocks: a worker's clock ahead of the
        bot's (or a follow-up sent as of a later moment) must not leave the answer unseen."""
        asked_before = or_(OpenThread.followup_turn_id < turn_id,
                           and_(OpenThread.followup_turn_id.is_(None), OpenThread.asked_at <= now))
        return self._changed(
            update(OpenThread).where(OpenThread.user_id == user_id, OpenThread.chat_id == chat_id,
                                     OpenThread.status == ThreadStatus.ASKED, asked_before)
            .values(status=ThreadStatus.ANSWERED, answered_at=now, updated_at=now))

    def claim_due(self, now: datetime, after: timedelta, lease: timedelta, limit: int = 100) -> list[OpenThread]:
        """Lease the open threads whose time was ``after`` ago or more, of users who turned follow-ups on and
        are not paused (the scan); concurrent callers never get the same row. Whether now is a good moment for
        each is the caller's rule (:mod:`shared.followups.timing`), checked again at delivery."""
        consenting = select(User.id).where(User.followups_on_at.is_not(None), User.paused_at.is_(None))
        due = (select(OpenThread.id)
               .where(OpenThread.status == ThreadStatus.OPEN, OpenThread.happens_at <= now - after,
                      or_(OpenThread.claimed_until.is_(None), OpenThread.claimed_until <= now),
                      OpenThread.user_id.in_(consenting), OpenThread.chat_id.is_not(None))
               .order_by(OpenThread.happens_at, OpenThread.id).limit(limit).with_for_update(skip_locked=True))
        claimed = (update(OpenThread).where(OpenThread.id.in_(due.scalar_subquery()))
                   .values(claimed_until=now + lease, attempts=OpenThread.attempts + 1).returning(OpenThread))
        return list(self.session.scalars(claimed))

    def release(self, user_id: int, thread_id: int, attempt: int) -> bool:
        """Give a claim back (not a good moment after all): the next scan may claim it again."""
        return self._update_claimed(user_id, thread_id, attempt, claimed_until=None)

    def lock_for_delivery(self, thread_id: int) -> OpenThread | None:
        """Any user's thread, locked, for the delivery job that carries only its id; every change that
        follows is scoped by the row's ``user_id``."""
        return self.session.get(OpenThread, thread_id, with_for_update=True)

    def hold_user(self, user_id: int) -> None:
        """Hold the user's row until the transaction ends, so two deliveries to one user check "one a day" in
        turn (``FOR NO KEY UPDATE``: rows that only point at the user do not wait)."""
        self.session.execute(text("SELECT id FROM users WHERE id = :id FOR NO KEY UPDATE"), {"id": user_id})

    def last_asked_at(self, user_id: int, other_than: int | None = None) -> datetime | None:
        """When the user was last sent (or is being sent) a follow-up, on a thread other than ``other_than``."""
        query = select(func.max(OpenThread.asked_at)).where(OpenThread.user_id == user_id)
        if other_than is not None:
            query = query.where(OpenThread.id != other_than)
        return self.session.scalar(query)

    def last_written_at(self, user_id: int) -> datetime | None:
        """When the user last wrote to Mnemo (their newest turn)."""
        query = select(func.max(ConversationTurn.created_at)).where(ConversationTurn.user_id == user_id,
                                                                     ConversationTurn.role == "user")
        return self.session.scalar(query)

    def asked_on_platform(self, user_id: int, platform: str, since: datetime,
                          until: datetime) -> list[tuple[datetime, str]]:
        """When each of the user's follow-ups sent in (``since``, ``until``] to chats on ``platform`` went, and its
        words, in order."""
        query = (select(OpenThread.asked_at, ConversationTurn.text)
                 .join(OpenThread, OpenThread.followup_turn_id == ConversationTurn.id)
                 .join(Chat, Chat.id == OpenThread.chat_id)
                 .where(OpenThread.user_id == user_id, Chat.platform == platform, OpenThread.asked_at > since,
                        OpenThread.asked_at <= until)
                 .order_by(OpenThread.asked_at, OpenThread.id))
        return [(asked_at, text) for asked_at, text in self.session.execute(query) if asked_at is not None]

    def mark_asked(self, user_id: int, thread_id: int, attempt: int, now: datetime, turn_id: int | None) -> bool:
        """The follow-up was sent under claim ``attempt``; False if the thread changed meanwhile."""
        return self._update_claimed(user_id, thread_id, attempt, status=ThreadStatus.ASKED, asked_at=now,
                                    followup_turn_id=turn_id, claimed_until=None, updated_at=now)

    def close_refused(self, user_id: int, thread_id: int, attempt: int, reason: str, now: datetime) -> bool:
        """The platform will never deliver it: closed, with ``refused: <reason>``."""
        return self._update_claimed(user_id, thread_id, attempt, status=ThreadStatus.CLOSED, claimed_until=None,
                                    closed_reason=f"refused: {reason}"[:MAX_ERROR_CHARS], updated_at=now)

    def hold_claim(self, user_id: int, thread_id: int, attempt: int, until: datetime) -> bool:
        """Keep the claim at least until ``until`` (a platform asked us to wait)."""
        return self._update_claimed(user_id, thread_id, attempt,
                                    claimed_until=func.greatest(OpenThread.claimed_until, until))

    def counts_since(self, user_id: int, since: datetime) -> tuple[int, int]:
        """(follow-ups sent, follow-ups answered) to the user since ``since``."""
        sent = func.count().filter(OpenThread.asked_at >= since,
                                   OpenThread.status.in_((ThreadStatus.ASKED, ThreadStatus.ANSWERED)))
        answered = func.count().filter(OpenThread.answered_at >= since)
        row = self.session.execute(select(sent, answered).where(OpenThread.user_id == user_id)).one()
        return int(row[0]), int(row[1])

    def _update_claimed(self, user_id: int, thread_id: int, attempt: int, **values: object) -> bool:
        return self._changed(
            update(OpenThread).where(OpenThread.user_id == user_id, OpenThread.id == thread_id,
                                     OpenThread.status == ThreadStatus.OPEN, OpenThread.attempts == attempt)
            .values(**values)) == 1

    def _changed(self, statement: Update) -> int:
        """How many rows ``statement`` changed (the loaded objects are not synchronised)."""
        result = self.session.execute(statement.execution_options(synchronize_session=False))
        assert isinstance(result, CursorResult)
        return int(result.rowcount)
