"""Step 3's open threads (:mod:`shared.followups`): what is coming up for the user, noted from the model's
``threads`` (or, when it gave none, the offline rules' reading of the message), and what the message closes.

- A message in a chat where a follow-up asked the user is their answer: those threads are answered.
- A cancellation ("面试取消了", "the exam got cancelled"; the model's ``cancelled``) closes the open thread it
  names (or the only one); a new time for the same event (a correction) closes the old thread and notes the new.
- The first time a thread is noted for a user who has not turned follow-ups on, the reply offers them in one
  short line, once.
- Nothing is noted while the user paused remembering.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from shared.conversation.notice_texts import Notice, NoticeCode
from shared.db.thread_models import OpenThread
from shared.followups.reading import ThreadReading, cancelled_threads, read_thread, same_event
from shared.llm.turn_schema import ThreadEntry
from shared.reminders.timeparse import parse_due, zone_of
from shared.repositories.uow import UnitOfWork
from shared.text import is_invisible

if TYPE_CHECKING:
    from shared.conversation.prepare import PreparedTurn

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TurnThreads:
    noted: tuple[int, ...] = ()
    closed: int = 0
    answered: int = 0
    """Follow-ups this message answered."""
    notices: tuple[Notice, ...] = ()
    """The once-only offer of follow-ups (empty: nothing to say)."""


def store_turn_threads(uow: UnitOfWork, prepared: PreparedTurn, entries: tuple[ThreadEntry, ...],
                       memory_ids: tuple[int, ...], *, now: datetime) -> TurnThreads:
    """The turn's threads, in the caller's transaction (see the module's docstring); ``entries`` are the model's
    (empty for an offline or untrusted answer)."""
    user_id = prepared.user_id
    answered = uow.threads.answer_in_chat(user_id, prepared.chat_id, prepared.user_turn_id, now)
    if prepared.paused:
        return TurnThreads(answered=answered)
    sent = min(prepared.sent_at or now, now).astimezone(zone_of(prepared.timezone))
    open_threads = {thread.id: thread.what for thread in uow.threads.open_of(user_id)}
    closing = {thread_id: "cancelled" for thread_id in cancelled_threads(prepared.text, list(open_threads.items()))}
    for entry in entries:
        if entry.cancelled:
            closing.update({thread_id: "cancelled" for thread_id, what in open_threads.items()
                            if same_event(what, entry.what)})
    readings = _readings(prepared, entries, sent)
    for reading in readings:
        closing.update({thread_id: "corrected" for thread_id, what in open_threads.items()
                        if thread_id not in closing and same_event(what, reading.what)})
    closed = sum(uow.threads.close(user_id, thread_id, reason, now) for thread_id, reason in closing.items())
    noted = tuple(_note(uow, prepared, reading, memory_ids, now).id for reading in readings)
    offer = (Notice(NoticeCode.FOLLOWUPS_OFFER),) if noted and _offer_owed(uow, user_id, now) else ()
    return TurnThreads(noted, closed, answered, offer)


def _readings(prepared: PreparedTurn, entries: tuple[ThreadEntry, ...], sent: datetime) -> list[ThreadReading]:
    """The model's upcoming threads with a time after the message; else the rules' reading of it."""
    readings = []
    for entry in entries:
        if entry.cancelled or is_invisible(entry.what):
            continue
        happens = parse_due(entry.when or "", sent, prepared.timezone)
        if happens is None or happens <= sent:
            log.info("dropped a thread the model noted without a future time")
            continue
        readings.append(ThreadReading(entry.what, happens, False, ""))
    if readings or any(entry.cancelled for entry in entries):
        return readings
    rules = read_thread(prepared.text, sent, prepared.timezone, chinese=prepared.language.chinese)
    return [rules] if rules is not None else []


def _note(uow: UnitOfWork, prepared: PreparedTurn, reading: ThreadReading, memory_ids: tuple[int, ...],
          now: datetime) -> OpenThread:
    return uow.threads.add(OpenThread(
        user_id=prepared.user_id, chat_id=prepared.chat_id, what=reading.what, happens_at=reading.happens_at,
        day_only=reading.day_only, timezone=prepared.timezone, language=prepared.language.value,
        memory_id=memory_ids[0] if memory_ids else None, source_turn_id=prepared.user_turn_id,
        created_at=now, updated_at=now))


def _offer_owed(uow: UnitOfWork, user_id: int, now: datetime) -> bool:
    """True once per user who has not turned follow-ups on: the reply offers them (and it is recorded)."""
    user = uow.users.get(user_id)
    if user is None or user.followups_on_at is not None or user.followups_offered_at is not None:
        return False
    user.followups_offered_at = now
    return True
