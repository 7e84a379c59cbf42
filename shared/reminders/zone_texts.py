"""What Mnemo says about a user's time zone, in Chinese and English: the answer to ``/timezone``, and the lines it
shares with a reply's notices (:mod:`shared.reminders.zone_lines`)."""

from __future__ import annotations

from datetime import UTC, datetime

from shared.reminders.user_zone import ZoneChange
from shared.reminders.zone_lines import DEFAULT_ZONE_LINES, MOVED_LINES
from shared.reminders.zones import zone_label
from shared.text import is_chinese


def zone_text(change: ZoneChange, locale: str | None, now: datetime | None = None) -> str:
    """``/timezone``: the zone in use, or what setting one did (and what became of the pending reminders)."""
    now = now or datetime.now(UTC)
    zh, after = is_chinese(locale), change.after
    label = zone_label(after.name, now)
    if change.before == after:
        if after.own:
            return (f"你的时区：{label}。用 /timezone 城市名 可以修改。" if zh else
                    f"Your time zone: {label}. /timezone <city or zone> changes it.")
        return (f"你还没有设置时区，现在按本机器人默认的 {label} 计算。告诉我你在哪里，或者发送 /timezone 城市名"
                "（也可以是 Asia/Shanghai 或 UTC+8）。" if zh else
                f"You haven't set a time zone, so I use {label}, this bot's default. Tell me where you are, or use "
                "/timezone <city> (or Asia/Shanghai, or UTC+8).")
    if not after.own:
        head = (f"已恢复为本机器人默认的时区 {label}。" if zh else
                f"Back to this bot's default time zone, {label}.")
    else:
        head = f"时区已设为 {label}。" if zh else f"Time zone set to {label}."
    return ("" if zh else " ").join([head, *_reminders_moved(change, zh)])


def default_zone_text(zone: str, locale: str | None) -> str:
    """Said once, with the first reminder of a user who has not set a zone: which one it used, and how to change it."""
    return DEFAULT_ZONE_LINES[is_chinese(locale)].format(zone=zone)


def moved_lines(change: ZoneChange) -> list[tuple[str, int]]:
    """The lines of :data:`MOVED_LINES` that say how the pending reminders followed a new zone, with their counts."""
    lines = []
    if change.moved:
        lines.append(("clock_one" if change.moved == 1 else "clock", change.moved))
    if change.kept:
        lines.append(("moment_one" if change.kept == 1 else "moment", change.kept))
    return lines


def _reminders_moved(change: ZoneChange, zh: bool) -> list[str]:
    """How the pending reminders follow: clock times stay on the clock, amounts of time keep their moment."""
    return [MOVED_LINES[key][zh].format(count=count) for key, count in moved_lines(change)]
