"""What the offline rules read as an open thread (pure): an event word ("面试", "exam", "doctor", "搬家") and a
time the reminders' parser reads (:func:`shared.reminders.timeparse.resolve_when`), or "下周"/"next week"; and a
cancellation ("取消了", "got cancelled", "called off") of one.

The same event words tell which open thread a cancellation or a correction ("不是周五，是周六面试") is about.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from shared.reminders.timeparse import DEFAULT_HOUR, REMIND_CUE, TimeOutOfRange, resolve_when, zone_of
from shared.text import language_of


@dataclass(frozen=True)
class EventWord:
    """One kind of event: the words that name it, and how a follow-up names it in each language."""

    key: str
    pattern: re.Pattern[str]
    zh: str
    en: str
    own_words: bool = False
    """A follow-up names it by the user's own words ("科目二", "your driving test"), not the kind's."""

    def named(self, text: str, *, chinese: bool) -> str:
        """How a follow-up names the event ``text`` mentions."""
        found = self.pattern.search(text) if self.own_words else None
        words = " ".join(found[0].split()) if found else ""
        if words and language_of(words).chinese == chinese:
            return words if chinese else f"your {words.lower()}"
        return self.zh if chinese else self.en


def _event(key: str, words: str, zh: str, en: str, *, own_words: bool = False) -> EventWord:
    return EventWord(key, re.compile(words, re.IGNORECASE), zh, en, own_words)


EVENTS: tuple[EventWord, ...] = (
    _event("interview", r"面试|interview", "面试", "your interview"),
    _event("exam", r"考试|期中考|期末考|笔试|考研|高考|路考|科目[一二三四]|\bexams?\b|\bfinals\b|\bmidterms?\b|"
                   r"\b(?:driving|driver'?s|road|entrance|language|english|math|maths|final)\s+test\b", "考试",
           "your exam", own_words=True),
    _event("doctor", r"看医生|看病|看牙|复诊|体检|门诊|\bdoctor\b|\bdentist\b|check-?up|\bappointment\b",
           "看医生", "the doctor's visit"),
    _event("move", r"搬家|\bmoving\b|\bmove\b", "搬家", "the move"),
    _event("surgery", r"手术|surgery|\boperation\b", "手术", "the surgery"),
    _event("presentation", r"答辩|演讲|汇报|presentation|\bpitch\b|\bdefen[cs]e\b", "汇报", "your presentation"),
    _event("match", r"比赛|马拉松|\bmatch\b|\brace\b|marathon|tournament", "比赛", "the match"),
    _event("date", r"约会|相亲|\b(?:a|my|first|blind|dinner)\s+date\b", "约会", "your date"),
    _event("flight", r"航班|飞机|\bflight\b", "航班", "your flight"),
    _event("wedding", r"婚礼|wedding", "婚礼", "the wedding"),
    _event("trip", r"出差|business trip", "出差", "your trip"),
)
_CANCELLED = re.compile(r"取消了?|不去了|不用去了|不办了|不搬了|不考了|黄了|改期|推迟|延期|"
                        r"cancel+ed|called off|postponed|not happening|isn'?t happening|no longer|won'?t happen",
                        re.IGNORECASE)
_NEXT_WEEK = re.compile(r"下(?:个)?(?:周|星期|礼拜)(?![一二三四五六日天七1-7])|next week", re.IGNORECASE)
_CLOCK_OR_PERIOD = re.compile(r"\d|点|點|[ap]\.?m\b|noon|midnight|morning|afternoon|evening|night|tonight|"
                              r"上午|下午|早上|早晨|晚上|中午|凌晨|傍晚|今晚|明晚|明早", re.IGNORECASE)
_QUESTION = re.compile(r"[?？]\s*$")
NEXT_WEEK_DAY = 4
""""下周搬家" is taken to be by the Friday of next week (Monday is 0)."""


@dataclass(frozen=True)
class ThreadReading:
    """A thread the rules read: what (named in the message's language), when, and whether only a day was said."""

    what: str
    happens_at: datetime
    day_only: bool
    event: str


def event_in(text: str) -> EventWord | None:
    """The first event word in ``text``."""
    found = [(match.start(), event) for event in EVENTS if (match := event.pattern.search(text))]
    return min(found, key=lambda pair: pair[0])[1] if found else None


def events_in(text: str) -> set[str]:
    """The keys of every event ``text`` names."""
    return {event.key for event in EVENTS if event.pattern.search(text)}


def says_cancelled(text: str) -> bool:
    return _CANCELLED.search(text) is not None


def read_thread(text: str, sent: datetime, timezone: str, *, chinese: bool) -> ThreadReading | None:
    """The thread in a message that names an event and a time after ``sent`` (local); None for a question, a
    reminder request (the reminders have it), a cancellation, or no event or time."""
    if REMIND_CUE.search(text) or _QUESTION.search(text) or says_cancelled(text):
        return None
    event = event_in(text)
    if event is None:
        return None
    local = sent.astimezone(zone_of(timezone))
    try:
        found = resolve_when(text, local, timezone)
    except TimeOutOfRange:
        return None
    if found is not None and not found.elapsed:
        happens, matched = found.due, found.matched
        day_only = (happens.hour, happens.minute) == (DEFAULT_HOUR, 0) and not _CLOCK_OR_PERIOD.search(matched)
    elif _NEXT_WEEK.search(text):
        monday = (local + timedelta(days=7 - local.weekday())).replace(hour=DEFAULT_HOUR, minute=0, second=0,
                                                                         microsecond=0)
        happens, day_only = monday + timedelta(days=NEXT_WEEK_DAY), True
    else:
        return None
    if happens <= local:
        return None
    return ThreadReading(event.named(text, chinese=chinese), happens, day_only, event.key)


def same_event(what: str, other: str) -> bool:
    """Whether two threads' words name the same event (or are the same words)."""
    if what.strip().casefold() == other.strip().casefold():
        return True
    return bool(events_in(what) & events_in(other))


def cancelled_threads(text: str, open_whats: Sequence[tuple[int, str]]) -> list[int]:
    """Which of the open threads (id, what) a cancellation in ``text`` closes: those whose event it names, or the
    only one when it names none."""
    if not says_cancelled(text):
        return []
    named = events_in(text)
    if named:
        return [thread_id for thread_id, what in open_whats if events_in(what) & named]
    return [open_whats[0][0]] if len(open_whats) == 1 else []
