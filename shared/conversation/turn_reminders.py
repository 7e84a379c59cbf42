"""Step 3's reminders and time zone: what a turn sets, and what the user is told about it.

- The reminders are the model's (or the offline responder's); when the model set none for a message that asks
  for one, or states a to-do with a deadline, in words the rules read, the rules' (with a confirmation).
- Times count from when the message was SENT: a relative time the rules read ("in 3 minutes", "10分钟后")
  is theirs, however long the model took and whatever it computed. A reminder whose time passed while the
  reply was being written is kept and pings at once (the next scan); only a time before the message was sent is
  refused ("no future time").
- A deadline (the model's kind ``deadline``, or a deadline word next to the time the rules read) pings
  ``heads_up`` ahead of it (:mod:`shared.reminders.deadlines`).
- A message that says where the user is ("我在北京", "I'm in Seattle"; the rules' reading, else the model's
  ``timezone`` when the message supports it) sets their zone, unless they paused remembering; the reply's note
  says so. A user without a zone of their own is told once which zone their reminders use.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from shared.conversation.notice_texts import Notice, NoticeCode
from shared.conversation.offline import extract_reminders
from shared.conversation.offline_compose import confirmation_notice
from shared.conversation.warning_texts import TurnWarning, WarningCode
from shared.db.kinds import TodoKind
from shared.db.memory_models import Todo
from shared.llm.turn_schema import TodoEntry
from shared.reminders.deadlines import reads_as_deadline, timing
from shared.reminders.scheduling import MAX_PENDING_REMINDERS, room_for_reminders
from shared.reminders.timeparse import (
    REMIND_CUE,
    ResolvedTime,
    TimeOutOfRange,
    asks_for_a_reminder,
    parse_due,
    resolve_when,
    zone_of,
)
from shared.reminders.user_zone import ZoneChange, set_user_zone, user_zone, zone_notice_owed
from shared.reminders.zone_texts import moved_lines
from shared.reminders.zones import SeveralZones, ZoneChoice, read_zone, supports_zone, zone_in_message, zone_label
from shared.repositories.uow import UnitOfWork
from shared.text import is_invisible

if TYPE_CHECKING:
    from shared.conversation.prepare import PreparedTurn

log = logging.getLogger(__name__)

MOVED_NOTICES = {"clock_one": NoticeCode.CLOCK_KEPT_ONE, "clock": NoticeCode.CLOCK_KEPT,
                 "moment_one": NoticeCode.MOMENT_KEPT_ONE, "moment": NoticeCode.MOMENT_KEPT}
"""The notice of each line of :data:`shared.reminders.zone_lines.MOVED_LINES`."""
PAST_SLACK = timedelta(minutes=1)
"""A due time this little before the message was sent is "now": the prompt shows the time to the minute."""
SAME_TIME = timedelta(minutes=1)


@dataclass(frozen=True)
class TurnReminders:
    todo_ids: tuple[int, ...] = ()
    warnings: tuple[TurnWarning, ...] = ()
    notices: tuple[Notice, ...] = ()
    """What the user is told: the reminder the rules set, one already due, the zone the message set or used."""


def store_turn_reminders(uow: UnitOfWork, prepared: PreparedTurn, todos: tuple[TodoEntry, ...], model_zone: str | None,
                         *, now: datetime, default_timezone: str, heads_up: timedelta) -> TurnReminders:
    """The reminders and the time zone of the turn, in the caller's transaction (see the module's docstring):
    ``todos`` and ``model_zone`` are what a readable answer of the model (or the offline responder) gave."""
    sent = min(prepared.sent_at or now, now)
    entries, confirmation = _entries(prepared, todos, sent)
    ids, warnings, due_now = _store(uow, prepared, entries, sent, now, heads_up)
    notices = [confirmation] if confirmation and ids else []
    notices += [Notice.of(NoticeCode.REMINDER_DUE_NOW, what=content) for content in due_now]
    zone = _zone_from_message(uow, prepared, model_zone, now, default_timezone)
    if zone:
        notices += zone
    elif ids and zone_notice_owed(uow, prepared.user_id, now):
        notices.append(Notice.of(NoticeCode.DEFAULT_ZONE, zone=user_zone(uow, prepared.user_id, default_timezone).name))
    return TurnReminders(tuple(ids), tuple(warnings), tuple(notices))


def _entries(prepared: PreparedTurn, todos: tuple[TodoEntry, ...],
             sent: datetime) -> tuple[tuple[TodoEntry, ...], Notice | None]:
    """The model's reminders; else the rules' for a message that asks for one or states a deadline, confirmed."""
    view = prepared.offline_view
    if todos or view is None:
        return todos, None
    rules = tuple(extract_reminders(prepared.text, sent.astimezone(zone_of(prepared.timezone)), prepared.timezone))
    return rules, (confirmation_notice(rules[0], view) if rules else None)


def _store(uow: UnitOfWork, prepared: PreparedTurn, entries: tuple[TodoEntry, ...], sent: datetime, now: datetime,
           heads_up: timedelta) -> tuple[list[int], list[TurnWarning], list[str]]:
    """Add the reminders that can be set: their ids, warnings for the others, and those already due."""
    ids: list[int] = []
    warnings: list[TurnWarning] = []
    due_now: list[str] = []
    local_sent = sent.astimezone(zone_of(prepared.timezone))
    reading = _rules_reading(prepared.text, local_sent, prepared.timezone) if len(entries) == 1 else None
    room = room_for_reminders(uow, prepared.user_id) if entries else 0
    asked = bool(entries) and asks_for_a_reminder(prepared.text, now, prepared.timezone)
    for entry in entries:
        if is_invisible(entry.content):  # nothing to remind of: the one definition of visible text
            log.info("dropped a reminder with no visible text")
            continue
        due, deadline, elapsed = _due(entry, reading, local_sent, prepared.timezone)
        if due is None or due < sent - PAST_SLACK:
            if asked:
                warnings.append(TurnWarning.of(WarningCode.REMINDER_WITHOUT_FUTURE_TIME, what=entry.content,
                                               when=entry.due or ""))
            else:  # small models fill the todo list with lines of their own reply
                log.info("dropped a reminder the model proposed without a future time, for a message that "
                         "asks for none")
            continue
        if len(ids) >= room:
            warnings.append(TurnWarning.of(WarningCode.REMINDERS_FULL, what=entry.content,
                                           count=MAX_PENDING_REMINDERS))
            continue
        when = timing(TodoKind.DEADLINE if deadline else TodoKind.REMINDER, due, sent, heads_up)
        if when.remind_at <= now:  # passed while the reply was written: pings at the next scan
            due_now.append(entry.content)
        todo = uow.todos.add(Todo(user_id=prepared.user_id, chat_id=prepared.chat_id, content=entry.content,
                                  due_at=when.due_at, remind_at=max(when.remind_at, now), kind=when.kind,
                                  wall_clock=not elapsed, timezone=prepared.timezone, source="conversation",
                                  source_turn_id=prepared.user_turn_id, created_at=now, updated_at=now))
        ids.append(todo.id)
    return ids, warnings, due_now


def _rules_reading(text: str, sent: datetime, timezone: str) -> tuple[str, ResolvedTime] | None:
    """The time the rules read in the message (after "remind me" when it says so), counted from ``sent``, with the
    text it was read in."""
    cue = REMIND_CUE.search(text)
    try:
        for part in ([text[cue.end():]] if cue else []) + [text]:
            if (found := resolve_when(part, sent, timezone)) is not None:
                return part, found
    except TimeOutOfRange:
        return None
    return None


def _due(entry: TodoEntry, reading: tuple[str, ResolvedTime] | None, sent: datetime,
         timezone: str) -> tuple[datetime | None, bool, bool]:
    """The entry's due time, whether it is a deadline, and whether it is an amount of time from the message. A
    relative time the rules read replaces the model's arithmetic; a deadline word next to the time the rules
    read makes the entry a deadline when the model gave that same time."""
    due = parse_due(entry.due or "", sent, timezone)
    if reading is not None and reading[1].elapsed:
        return reading[1].due, False, True
    if reading is None or due is None:
        return due, entry.deadline, False
    part, found = reading
    deadline = entry.deadline or (abs(due - found.due) < SAME_TIME and reads_as_deadline(part, found))
    return due, deadline, False


def _zone_from_message(uow: UnitOfWork, prepared: PreparedTurn, model_zone: str | None, now: datetime,
                       default_timezone: str) -> list[Notice]:
    """Set the zone the message says the user is in; the notes saying so (none when nothing changed)."""
    if prepared.paused:
        return []
    reading = zone_in_message(prepared.text)
    if reading is None and model_zone:
        named = read_zone(model_zone)
        if isinstance(named, ZoneChoice) and supports_zone(prepared.text, named.name):
            reading = named
    if reading is None:
        return []
    if isinstance(reading, SeveralZones):
        return zone_notices(reading, reading.said, now)
    change = set_user_zone(uow, prepared.user_id, reading.name, default_timezone, now)
    return zone_notices(change, reading.said, now)


def zone_notices(change: ZoneChange | SeveralZones, said: str, now: datetime) -> list[Notice]:
    """The notes under a reply whose message said where the user is (``said``): the zone set and how the pending
    reminders followed, or the cities of a place with several zones; none when it changed nothing."""
    if isinstance(change, SeveralZones):
        return [Notice.of(NoticeCode.SEVERAL_ZONES, said=change.said, city=change.cities[0], cities=change.cities)]
    if change.before == change.after:
        return []
    return [Notice.of(NoticeCode.ZONE_SET, zone=zone_label(change.after.name, now), said=said),
            *(Notice.of(MOVED_NOTICES[key], count=count) for key, count in moved_lines(change))]
