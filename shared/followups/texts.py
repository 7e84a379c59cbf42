"""Every word of follow-ups a user reads, in Chinese and English (pure): the offline follow-up made from the
thread itself, the once-only offer, and what ``/followups`` answers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo

from shared.reminders.timeparse import zone_of
from shared.text import is_chinese

_WEEKDAYS_ZH = "一二三四五六日"
OFFER = ("(I can ask you afterwards how it went, if you like: /followups on)",
         "（需要的话，我可以事后问问你进展如何：/followups on）")
"""(English, Chinese) of the once-only offer under a reply (a notice: :mod:`shared.conversation.notice_texts`)."""


@dataclass(frozen=True)
class ThreadItem:
    """A thread as ``/followups list`` shows it."""

    id: int
    what: str
    happens_at: datetime
    timezone: str
    asked: bool


@dataclass(frozen=True)
class FollowupSettings:
    """What ``/followups`` says: on or off, the quiet hours, and the threads."""

    on: bool
    quiet_hours: str
    threads: tuple[ThreadItem, ...] = ()
    changed: bool = False


@dataclass(frozen=True)
class GroupFollowups:
    """What ``/followups group`` says: whether the group takes follow-ups, and whether this command changed it."""

    on: bool
    changed: bool = False


def day_phrase(happens_at: datetime, now: datetime, zone: tzinfo, *, chinese: bool) -> str:
    """The thread's day as seen from ``now``: today, yesterday, a weekday within the week, else the date."""
    day, today = happens_at.astimezone(zone).date(), now.astimezone(zone).date()
    days = (today - day).days
    if days == 0:
        return "今天" if chinese else "today"
    if days == 1:
        return "昨天" if chinese else "yesterday"
    if 1 < days < 7:
        return f"周{_WEEKDAYS_ZH[day.weekday()]}" if chinese else f"on {day:%A}"
    return f"{day.month}月{day.day}日" if chinese else f"on {day.day} {day:%B}"


def offline_followup(what: str, happens_at: datetime, now: datetime, zone: tzinfo, *, chinese: bool) -> str:
    """The follow-up without a model: "你周五的面试怎么样了？", "How did your exam go yesterday?"."""
    day = day_phrase(happens_at, now, zone, chinese=chinese)
    if chinese:
        return f"你{day}的{what}怎么样了？"
    return f"How did {what} go {day}?"


def settings_text(state: FollowupSettings, locale: str | None) -> str:
    """What ``/followups`` (on, off, list, quiet) answers, in the locale's language."""
    chinese = is_chinese(locale)
    if chinese:
        head = ("已开启回访：事情过后，我会在合适的时候问问你进展如何（安静时段 {q} 点不打扰，每天最多一次）。"
                if state.on else "回访已关闭。发送 /followups on 开启。").format(q=state.quiet_hours)
    else:
        head = (f"Follow-ups are on: after something you mentioned, I'll ask how it went at a good moment (never "
                f"during quiet hours {state.quiet_hours}, at most once a day)." if state.on
                else "Follow-ups are off. Send /followups on to turn them on.")
    return "\n".join([head, *_thread_lines(state.threads, chinese=chinese)])


def _thread_lines(threads: Sequence[ThreadItem], *, chinese: bool) -> list[str]:
    if not threads:
        return ["没有待回访的事。" if chinese else "Nothing to follow up on."]
    lines = ["待回访：" if chinese else "To follow up on:"]
    for item in threads:
        when = item.happens_at.astimezone(zone_of(item.timezone))
        stamp = f"{when.month}月{when.day}日 {when:%H:%M}" if chinese else f"{when:%a %d %b %H:%M}"
        asked = ("（已问，等你回复）" if chinese else " (asked, waiting for your answer)") if item.asked else ""
        lines.append(f"#{item.id} {item.what} — {stamp}{asked}")
    return lines


def group_text(state: GroupFollowups, locale: str | None) -> str:
    """What ``/followups group [on|off]`` answers in the group, in the locale's language."""
    if is_chinese(locale):
        return ("本群已开启回访：开启了自己回访的成员，可能会在群里被问到在群里提过的事进展如何。"
                "发送 /followups group off 关闭。" if state.on
                else "本群没有开启回访：在群里提过的事不会在群里回访。群管理员可以发送 /followups group on 开启。")
    return ("Follow-ups are on in this group: members who turned their own follow-ups on may be asked here how "
            "something they mentioned here went. /followups group off turns them off." if state.on
            else "Follow-ups are off in this group: nothing mentioned here is followed up here. A group admin can "
                 "send /followups group on.")
