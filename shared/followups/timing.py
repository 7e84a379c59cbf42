"""When a follow-up may go (pure): after the thread's time, outside the user's quiet hours, at most one a day per
user, never to someone who wrote within the last hour, never in a group that did not turn follow-ups on, and
never about something a week past (it is stale).

:func:`follow_up_verdict` answers for one moment: go now, or wait until when (or never, for a group without
follow-ups). The scan and the delivery both ask it, the delivery again under the user's row lock, so a follow-up
that became unwelcome between the two is not sent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo

DEFAULT_QUIET_HOURS = "22-9"
DEFAULT_AFTER = timedelta(hours=3)
"""How long after a thread's time its follow-up may go (an interview at 10:00 is asked about from 13:00)."""
RECENT_WRITER = timedelta(hours=1)
"""No follow-up to someone who wrote this recently: they are talking already."""
DAY_ONLY_HOUR = 18
"""A thread with a day and no time of day ("my exam is tomorrow") is asked about from this local hour that day."""
STALE_AFTER = timedelta(days=7)
"""A thread this long past is not asked about any more (follow-ups turned on late, a long pause): it expires."""
STALE = "stale"
GROUP_RECHECK = timedelta(days=1)
"""A thread noted in a group without follow-ups is looked at again this much later (the group may turn them on)."""
GROUP_SETTING = "followups"
"""``chats.settings['followups'] = true``: the group took follow-ups on (``/followups group on`` by an admin)."""


def group_takes_followups(chat_settings: Mapping[str, object] | None) -> bool:
    """Whether a group's ``chats.settings`` turned follow-ups on."""
    return (chat_settings or {}).get(GROUP_SETTING) is True


_HOURS = re.compile(r"^\s*(\d{1,2})(?::00)?\s*[-–~到至]\s*(\d{1,2})(?::00)?\s*$")


@dataclass(frozen=True)
class QuietHours:
    """Local hours with no follow-up: from ``start`` until ``end`` (wrapping midnight when ``start > end``);
    ``start == end`` means none."""

    start: int = 22
    end: int = 9

    def covers(self, local: datetime) -> bool:
        hour = local.hour
        if self.start == self.end:
            return False
        if self.start < self.end:
            return self.start <= hour < self.end
        return hour >= self.start or hour < self.end

    def ends_after(self, local: datetime) -> datetime:
        """The first moment after ``local`` outside the quiet hours (``local`` itself when it is outside)."""
        if not self.covers(local):
            return local
        end = local.replace(hour=self.end, minute=0, second=0, microsecond=0)
        return end if end > local else end + timedelta(days=1)

    def __str__(self) -> str:
        return f"{self.start}-{self.end}"


def quiet_hours(text: str | None, default: str = DEFAULT_QUIET_HOURS) -> QuietHours:
    """The quiet hours ``text`` names ("22-9", "23:00-08:00"), else ``default``'s."""
    return read_quiet_hours(text or "") or read_quiet_hours(default) or QuietHours()


def read_quiet_hours(text: str) -> QuietHours | None:
    """"22-9" → 22:00 to 09:00; None when it is not two hours 0-23 with a dash between."""
    found = _HOURS.match(text)
    if found is None:
        return None
    start, end = int(found[1]), int(found[2])
    if start > 23 or end > 23:
        return None
    return QuietHours(start, end)


@dataclass(frozen=True)
class Moment:
    """What the rules weigh for one thread at ``now``."""

    now: datetime
    happens_at: datetime
    zone: tzinfo
    quiet: QuietHours = QuietHours()
    after: timedelta = DEFAULT_AFTER
    day_only: bool = False
    last_asked_at: datetime | None = None
    last_written_at: datetime | None = None
    group: bool = False
    group_enabled: bool = False


@dataclass(frozen=True)
class Verdict:
    """``go`` now; else why not, and the first moment worth asking again (None: never, as things stand)."""

    go: bool
    reason: str = ""
    not_before: datetime | None = None


GO = Verdict(True)


def earliest(moment: Moment) -> datetime:
    """The first moment the thread's follow-up may go, its time and the quiet hours considered."""
    local = moment.happens_at.astimezone(moment.zone)
    if moment.day_only:
        start = local.replace(hour=DAY_ONLY_HOUR, minute=0, second=0, microsecond=0)
        start = max(start, local + moment.after)
    else:
        start = local + moment.after
    return moment.quiet.ends_after(start)


def follow_up_verdict(moment: Moment) -> Verdict:
    """May the follow-up go at ``moment.now``? See the module's docstring."""
    if moment.now - moment.happens_at > STALE_AFTER:
        return Verdict(False, STALE)
    if moment.group and not moment.group_enabled:
        return Verdict(False, "the group did not turn follow-ups on", moment.now + GROUP_RECHECK)
    local = moment.now.astimezone(moment.zone)
    first = earliest(moment)
    if local < first:
        return Verdict(False, "not yet", first)
    if moment.quiet.covers(local):
        return Verdict(False, "quiet hours", moment.quiet.ends_after(local))
    if moment.last_asked_at is not None and moment.last_asked_at.astimezone(moment.zone).date() == local.date():
        tomorrow = (local + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
        return Verdict(False, "one follow-up a day", moment.quiet.ends_after(tomorrow))
    if moment.last_written_at is not None and moment.now - moment.last_written_at < RECENT_WRITER:
        return Verdict(False, "the user wrote within the hour", moment.last_written_at + RECENT_WRITER)
    return GO
