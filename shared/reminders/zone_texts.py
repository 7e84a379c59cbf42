"""What Mnemo says about a user's time zone, in Chinese and English: the answer to ``/timezone``, the note under
a reply when a message said where the user is ("我在杭州", "I'm in Seattle"), and the one-time note on which zone a
reminder used while the user had none."""

from __future__ import annotations

from datetime import UTC, datetime

from shared.reminders.user_zone import ZoneChange
from shared.reminders.zones import SeveralZones, zone_label
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


def zone_notice(change: ZoneChange | SeveralZones, said: str, locale: str | None,
                now: datetime | None = None) -> str | None:
    """The note under a reply whose message said where the user is; None when it changed nothing."""
    zh = is_chinese(locale)
    if isinstance(change, SeveralZones):
        cities = ("、" if zh else ", ").join(change.cities)
        return (f"{change.said}有好几个时区，我没有改你的时区。告诉我城市，或发送 /timezone {change.cities[0]}"
                f"（可选：{cities}）。" if zh else
                f"{change.said} has several time zones, so I left yours as it was. Tell me your city, or use "
                f"/timezone {change.cities[0]} (or {cities}).")
    if change.before == change.after:
        return None
    label = zone_label(change.after.name, now or datetime.now(UTC))
    head = (f"已按“{said}”把你的时区设为 {label}（/timezone 可以修改）。" if zh else
            f"Time zone set to {label}, from “{said}” (/timezone changes it).")
    return ("" if zh else " ").join([head, *_reminders_moved(change, zh)])


def default_zone_text(zone: str, locale: str | None) -> str:
    """Said once, with the first reminder of a user who has not set a zone: which one it used, and how to change it."""
    if is_chinese(locale):
        return (f"（时间按本机器人默认的 {zone} 计算，因为你还没设置时区。告诉我你在哪里，比如“我在上海”，"
                "或者发送 /timezone 城市名。）")
    return (f"(Times are in {zone}, this bot's default, as you haven't set your time zone. Tell me where you are, "
            "like “I'm in Seattle”, or use /timezone <city>.)")


def _reminders_moved(change: ZoneChange, zh: bool) -> list[str]:
    """How the pending reminders follow: clock times stay on the clock, amounts of time keep their moment."""
    lines = []
    if change.moved:
        lines.append(f"{change.moved} 个待提醒事项保持原来的钟点（比如 8:30 还是新时区的 8:30）。" if zh else
                     f"{change.moved} pending {'reminder keeps its' if change.moved == 1 else 'reminders keep their'}"
                     " clock time (08:30 is still 08:30, now in this zone).")
    if change.kept:
        lines.append(f"{change.kept} 个按“几分钟后”设置的提醒时间不变。" if zh else
                     f"{change.kept} set as “in N minutes” {'keeps its' if change.kept == 1 else 'keep their'} "
                     "moment.")
    return lines
