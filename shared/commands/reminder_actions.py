"""``/remind cancel 4``, ``/remind done 2``, ``/remind snooze 3 30``: a change to a reminder typed after /remind.

The short commands ``/cancel``, ``/done`` and ``/snooze`` mean the same on every front-end. Pure: it only
reads the words. Only an action word followed by a number (and, for snooze, at most a number of minutes)
is an action; anything else after /remind is a new reminder ("done 5 pushups tomorrow 7am").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shared.errors import InvalidCommand

ACTION_WORDS = {
    "cancel": "cancel", "取消": "cancel",
    "done": "done", "完成": "done", "已完成": "done",
    "snooze": "snooze", "推迟": "snooze", "稍后": "snooze", "稍后提醒": "snooze", "延后": "snooze",
}
"""The words of each action, English and Chinese."""
DEFAULT_SNOOZE_MINUTES = 10

_WORDS = "|".join(sorted(map(re.escape, ACTION_WORDS), key=len, reverse=True))
_ACTION = re.compile(rf"(?P<word>{_WORDS})\s*#?\s*(?P<id>\d{{1,30}})"
                     r"(?:\s+(?P<minutes>\d{1,6})\s*(?:m|min|mins|minutes?|分钟|分)?)?", re.I)
_REMINDER_ID = re.compile(r"#?\d{1,30}")


@dataclass(frozen=True)
class ReminderAction:
    """What to do (cancel, done or snooze) to which reminder; ``minutes`` for a snooze."""

    action: str
    reminder_id: int
    minutes: int = DEFAULT_SNOOZE_MINUTES


def reminder_action(text: str) -> ReminderAction | None:
    """The action ``text`` asks for, or None when it is a new reminder."""
    found = _ACTION.fullmatch(text.strip())
    if found is None:
        return None
    action = ACTION_WORDS[found["word"].lower()]
    if found["minutes"] is not None and action != "snooze":
        return None
    minutes = int(found["minutes"]) if found["minutes"] else DEFAULT_SNOOZE_MINUTES
    return ReminderAction(action, int(found["id"]), minutes)


def action_of(action: str, argument: str) -> ReminderAction:
    """``/cancel 4``, ``/done 4``, ``/snooze 4 [minutes]``; InvalidCommand when the numbers are not numbers."""
    reminder, _, minutes = argument.strip().partition(" ")
    if not _REMINDER_ID.fullmatch(reminder):
        raise InvalidCommand("bad_id")
    minutes = minutes.strip()
    if minutes and (action != "snooze" or not minutes.isdecimal() or len(minutes) > 6):
        raise InvalidCommand("bad_minutes", low=1, high=7 * 24 * 60) if action == "snooze" else (
            InvalidCommand("bad_id"))
    return ReminderAction(action, int(reminder.lstrip("#")), int(minutes) if minutes else DEFAULT_SNOOZE_MINUTES)
