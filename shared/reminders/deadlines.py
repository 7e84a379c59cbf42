"""A time something is due by, and when to ping ahead of it (pure; DESIGN.md §2 ``todos``, the seeds' deadline
heads-up).

"提醒我下午3点开会" / "remind me at 3 to call Mum" pings at 3. "周五下午五点前交报告" / "the report is due
Friday 5pm" is a deadline: it pings ``DEADLINE_HEADS_UP_MINUTES`` (an hour unless set) before it, or, when the
deadline is nearer than that when it is said, halfway between then and the deadline. A time reads as a deadline
when a deadline word stands next to it: 前 / 之前 / 以前 after it, 截止 / ddl around it, "due", "deadline", "by",
"before" or "no later than" in front of it, or, for a time put first ("Friday 5pm the tax return is due"), "due" at
the end.

Without "remind me", a message still states a to-do with a deadline when it is not a question, not said of the
past ("周五前交了", "was due", "已经") and leaves something to do once the time and the deadline words are taken
out; that is :func:`deadline_todo`, which the offline rules use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from shared.db.kinds import TodoKind
from shared.reminders.timeparse import ResolvedTime, TimeOutOfRange, resolve_when

DEFAULT_HEADS_UP = timedelta(hours=1)
"""How long before a deadline it pings (``DEADLINE_HEADS_UP_MINUTES``)."""

_ZH_AFTER = re.compile(r"^\s*(?:之前|以前|前(?![天年月周])|截止|为止)")
_ZH_AROUND = re.compile(r"截止|ddl|deadline", re.I)
_EN_DUE_AFTER = re.compile(r"(?<![A-Za-z])(?:due|deadline)\s*[.!]*\s*$", re.I)
"""A time put first, what is due after it: "/remind Friday 5pm the tax return is due"."""
AFTER_CHARS = 200
_EN_BEFORE = re.compile(r"(?:\bdue(?:\s+date)?(?:\s+is)?|\bdeadline(?:\s+is)?\s*:?|\bby|\bbefore|\bno\s+later\s+than"
                        r"|\buntil|\b(?:deadline|due\s+date)\b[^.!?。！？]{0,30}\b(?:is|:))\s*$", re.I)
_PAST = re.compile(r"了|已经|早就|\bwas\s+due\b|\bwere\s+due\b|\bhad\b|\balready\b|\bmissed\b", re.I)
"""Said of the past ("周五前交了报告", "was due"); "周五前把报告交了" may be a plan, but without "remind me"
the rules leave such a message to the model."""
_QUESTION = re.compile(r"[?？]|吗\s*[。.]*$|^\s*(?:when|what|is|are|do|does|did)\b", re.I)
_FILLER_START = re.compile(r"^(?:\s|[，,:：、]|之前|以前|前|截止(?:到|时间是|日期是)?|为止|要|得|必须|需要|记得|的"
                           r"|to\b|the\s+deadline\s+(?:for|of)\b|deadline\s+(?:for|of)\b)+", re.I)
_END_WORD = re.compile(r"(?:(?<![A-Za-z])(?:is|are|due|deadline|by|before|on|at)|的?截止(?:时间|日期)?(?:是|到|为)?"
                       r"|ddl(?:是)?|要|之前|以前)$", re.I)
MAX_END_WORDS = 4
_TRIM = " \t\r\n，,。.!！:：;；、"


@dataclass(frozen=True)
class Timing:
    """When a to-do is due and when it pings; ``kind`` is ``reminder`` (the same time) or ``deadline``."""

    kind: str
    due_at: datetime
    remind_at: datetime


def reads_as_deadline(text: str, resolved: ResolvedTime) -> bool:
    """Whether the time ``resolved`` found in ``text`` is one something is due by (a deadline word next to it)."""
    if resolved.elapsed:
        return False
    start, end = resolved.span
    before, after = text[max(0, start - 30):start], text[end:end + AFTER_CHARS]
    return bool(_ZH_AFTER.match(after) or _EN_BEFORE.search(before) or _ZH_AROUND.search(before[-6:] + after[:6])
                or (start == 0 and _EN_DUE_AFTER.search(after)))


def timing(kind: str, due: datetime, said_at: datetime, heads_up: timedelta = DEFAULT_HEADS_UP) -> Timing:
    """A ``reminder`` pings at ``due``; a ``deadline`` ``heads_up`` before it, or halfway from ``said_at`` to it
    when that is already past (at ``due`` when the deadline itself has passed)."""
    if kind != TodoKind.DEADLINE:
        return Timing(TodoKind.REMINDER, due, due)
    ping = due - heads_up
    if ping < said_at:
        ping = said_at + (due - said_at) / 2 if due > said_at else due
    return Timing(TodoKind.DEADLINE, due, ping)


def deadline_todo(text: str, now: datetime, tz: str) -> ResolvedTime | None:
    """A to-do with a deadline stated in ``text`` without "remind me" ("周五下午五点前交报告"), with what is to be
    done as its ``rest``; None when there is none."""
    try:
        resolved = resolve_when(text, now, tz)
    except TimeOutOfRange:
        return None
    if resolved is None or not reads_as_deadline(text, resolved) or _PAST.search(text) or _QUESTION.search(text):
        return None
    what = todo_content(resolved.rest)
    return ResolvedTime(resolved.due, resolved.matched, what, span=resolved.span) if what else None


def todo_content(rest: str) -> str:
    """What is to be done, without the deadline words left around it ("前交报告" → "交报告", "the report is due"
    → "the report")."""
    what = _FILLER_START.sub("", rest.strip()).strip(_TRIM)
    for _ in range(MAX_END_WORDS):
        found = _END_WORD.search(what)
        if found is None:
            break
        what = what[:found.start()].strip(_TRIM)
    return what
