"""Which of the user's pending reminders a turn's note shows: all of them (the first few) when the message asks
about reminders ("what did I ask you to remind me of?", "我有什么提醒？"), else those due within a day. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from shared.reminders.timeparse import zone_of

DUE_SOON = timedelta(hours=24)
"""A reminder due within this is in the note whatever the message says."""
MAX_IN_NOTE = 5
ASKS_ABOUT_REMINDERS = re.compile(
    r"(?:我|我的)(?:有|还有)?(?:什么|哪些|几个|多少)?(?:待办|提醒)|提醒(?:了)?我(?:什么|啥|哪些)|提醒(?:列表|事项)"
    r"|让你提醒我(?:的)?(?:什么|啥|事)|有(?:什么|没有|哪些)提醒"
    r"|\b(?:my|any|what|which|pending|upcoming)\s+reminders?\b|\bremind(?:ers?)?\s+(?:do\s+)?i\s+have\b"
    r"|\b(?:ask(?:ed)?|tell|told)\s+you\s+to\s+remind\s+me\b|\bremind\s+me\s+(?:of|about)\s+what\b",
    re.IGNORECASE)


@dataclass(frozen=True)
class PendingReminder:
    """A pending reminder as the note and the offline answer show it."""

    content: str
    due_at: datetime


def reminders_for_note(text: str, pending: Sequence[PendingReminder], now: datetime) -> list[PendingReminder]:
    """The reminders the note of a message shows, soonest first."""
    soonest = sorted(pending, key=lambda reminder: reminder.due_at)
    if ASKS_ABOUT_REMINDERS.search(text):
        return soonest[:MAX_IN_NOTE]
    return [reminder for reminder in soonest if reminder.due_at <= now + DUE_SOON][:MAX_IN_NOTE]


def due_limit(text: str, now: datetime) -> datetime | None:
    """Only reminders due before this can be in the note of ``text`` (None: any, it asks about them)."""
    return None if ASKS_ABOUT_REMINDERS.search(text) else now + DUE_SOON


def asks_about_reminders(text: str) -> bool:
    return bool(ASKS_ABOUT_REMINDERS.search(text))


def reminder_line(reminder: PendingReminder, timezone: str) -> str:
    """"2026-05-03 09:00: call Mum" on the user's clock."""
    return f"{reminder.due_at.astimezone(zone_of(timezone)):%Y-%m-%d %H:%M}: {reminder.content}"
