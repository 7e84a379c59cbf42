"""The time a message asks about: "last week", "在去年夏天", "in June 2023", "10月13日", "yesterday".

Recall favours memories noted within that span (:func:`shared.search.scoring.in_span_boost`). Pure
rules, no database. The span is read against the user's local ``now`` and looks back: a month or a
date without a year is the latest one not after today, "summer" alone the latest summer begun. A
memory is often noted a few days after what it tells of ("we went camping last weekend"), so the
span is widened by ``TELLING_LAG`` at its end. Seasons are the northern hemisphere's meteorological
ones. Only the first ``MAX_SCAN_CHARS`` characters are read; the most precise cue wins (a date, then a
month, a season, "… ago", a relative word, a year).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta

TELLING_LAG = timedelta(days=7)
MAX_SCAN_CHARS = 500

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_MONTH = {name[:length]: number for number, name in enumerate(_MONTHS, 1) for length in (3, None)} | {"sept": 9}
_SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12, "春": 3, "夏": 6, "秋": 9, "冬": 12}
_UNITS = {"day": 1, "week": 7, "month": 30, "year": 365, "天": 1, "日": 1, "周": 7, "星期": 7, "个月": 30, "月": 30,
          "年": 365}
_ZH_NUMBERS = {**{ch: i for i, ch in enumerate("零一二三四五六七八九")}, "两": 2, "十": 10}
_MONTH_WORD = r"(?P<month>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|" \
              r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"

_RULES = (
    ("iso", r"(?<!\d)(?P<year>\d{4})-(?P<month>\d\d?)-(?P<day>\d\d?)(?!\d)"),
    ("zh_date", r"(?:(?P<year>\d{4})\s*年\s*)?(?P<month>\d{1,2})\s*月\s*(?P<day>\d{1,2})\s*[日号]"),
    ("zh_month", r"(?:(?P<year>\d{4})\s*年\s*)?(?<!\d)(?P<month>\d{1,2})\s*月(?!份?\s*\d)"),
    ("en_date", rf"\b{_MONTH_WORD}\.?\s+{_DAY}\b(?:,?\s+{_YEAR}\b)?"),
    ("en_date", rf"\b{_DAY}\s+(?:of\s+)?{_MONTH_WORD}\b(?:,?\s+{_YEAR}\b)?"),
    ("en_month", rf"\b{_MONTH_WORD}\b,?\s+{_YEAR}\b"),
    ("en_month", rf"\b(?:in|during|since|of|last|this)\s+{_MONTH_WORD}\b"),
    ("season", r"(?P<which>去年|今年|前年)?的?(?P<season>[春夏秋冬])(?:天|季)"),
    ("season", rf"\b(?P<which>last|this)?\s*(?P<season>spring|summer|autumn|fall|winter)\b(?:\s+(?:of\s+)?{_YEAR})?"),
    ("ago", r"(?P<amount>\d+|[一二两三四五六七八九十]+|a|an|one|two|three|few|several)\s*"
            r"(?P<unit>days?|weeks?|months?|years?|天|日|周|星期|个月|年)\s*(?:ago|前|以前|之前)"),
    ("relative", r"\b(?P<word>yesterday|last\s+(?:week(?:end)?|month|year)|this\s+(?:week|month|year)|"
                 r"the\s+day\s+before\s+yesterday)\b|(?P<zh>前天|昨天|上周末|上个?周|上个?星期|上个?礼拜|上个月|"
                 r"去年|前年|今年|这个月|本月|这周|本周)"),
    ("year", rf"\b(?:in\s+)?{_YEAR}\b|(?P<zh_year>(?:19|20)\d\d)\s*年"),
)
"""(kind, pattern), the most precise first."""
_PATTERNS = tuple((kind, re.compile(pattern, re.IGNORECASE)) for kind, pattern in _RULES)
Parts = Mapping[str, str | None]
"""A match's named groups (None: the group took no part in it)."""


@dataclass(frozen=True)
class TimeSpan:
    """A stretch of the user's local calendar, ``start`` inclusive, ``end`` exclusive."""

    start: datetime
    end: datetime

    def holds(self, moment: datetime, lag: timedelta = TELLING_LAG) -> bool:
        """Whether ``moment`` falls in the span, or within ``lag`` after it."""
        return self.start <= moment < self.end + lag


def asked_span(text: str, now: datetime) -> TimeSpan | None:
    """The span of time ``text`` asks about, read against ``now`` (timezone-aware, the user's local time)."""
    scanned = text[:MAX_SCAN_CHARS]
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(scanned):
            days = _READERS[kind](match.groupdict(), now.date())
            if days is not None:
                start, end = days
                return TimeSpan(_midnight(start, now), _midnight(end, now))
    return None


def _midnight(day: date, now: datetime) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=now.tzinfo)


def _day(parts: Parts, today: date) -> tuple[date, date] | None:
    month, year = _month_number(parts["month"]), parts.get("year")
    if month is None:
        return None
    number = int(_group(parts, "day"))
    try:
        if year:
            day = date(int(year), month, number)
        else:
            day = date(today.year, month, number)
            day = day if day <= today else date(today.year - 1, month, number)
    except ValueError:  # no such day (31 June, 29 February of that year)
        return None
    return day, day + timedelta(days=1)


def _month(parts: Parts, today: date) -> tuple[date, date] | None:
    month, given_year = _month_number(parts["month"]), parts.get("year")
    if month is None:
        return None
    year = int(given_year) if given_year else (today.year if month <= today.month else today.year - 1)
    return _months(year, month, 1)


def _season(parts: Parts, today: date) -> tuple[date, date] | None:
    first = _SEASONS[_group(parts, "season").lower()]
    which, given_year = (parts.get("which") or "").lower(), parts.get("year")
    if given_year:
        year = int(given_year)
    elif which == "去年":
        year = today.year - 1
    elif which == "last":  # the latest that has ended
        year = today.year if date(*_shift_month(today.year, first, 3), 1) <= today else today.year - 1
    elif which == "前年":
        year = today.year - 2
    else:
        year = today.year if date(today.year, first, 1) <= today else today.year - 1
    return _months(year, first, 3)


def _ago(parts: Parts, today: date) -> tuple[date, date] | None:
    amount = _amount(_group(parts, "amount").lower())
    unit = _UNITS[_group(parts, "unit").lower().rstrip("s")]
    back = today - timedelta(days=amount * unit)
    return back - timedelta(days=unit // 2), back + timedelta(days=unit // 2 + 1)


def _relative(parts: Parts, today: date) -> tuple[date, date] | None:
    word = " ".join((parts.get("word") or parts.get("zh") or "").lower().split())
    monday = today - timedelta(days=today.weekday())
    spans = {
        "yesterday": (today - timedelta(days=1), today), "昨天": (today - timedelta(days=1), today),
        "the day before yesterday": (today - timedelta(days=2), today - timedelta(days=1)),
        "前天": (today - timedelta(days=2), today - timedelta(days=1)),
        "last week": (monday - timedelta(days=7), monday), "last weekend": (monday - timedelta(days=2), monday),
        "上周末": (monday - timedelta(days=2), monday), "this week": (monday, today + timedelta(days=1)),
        "last month": _months(*_shift_month(today.year, today.month, -1), 1),
        "上个月": _months(*_shift_month(today.year, today.month, -1), 1),
        "this month": _months(today.year, today.month, 1), "这个月": _months(today.year, today.month, 1),
        "last year": (date(today.year - 1, 1, 1), date(today.year, 1, 1)),
        "去年": (date(today.year - 1, 1, 1), date(today.year, 1, 1)),
        "前年": (date(today.year - 2, 1, 1), date(today.year - 1, 1, 1)),
        "this year": (date(today.year, 1, 1), today + timedelta(days=1)),
        "今年": (date(today.year, 1, 1), today + timedelta(days=1)),
    }
    for alias, same in (("上周", "last week"), ("上个周", "last week"), ("上星期", "last week"),
                        ("上个星期", "last week"), ("上礼拜", "last week"), ("上个礼拜", "last week"),
                        ("本月", "this month"), ("这周", "this week"), ("本周", "this week")):
        spans[alias] = spans[same]
    return spans.get(word)


def _year(parts: Parts, today: date) -> tuple[date, date] | None:
    year = int(_group(parts, "year", "zh_year"))
    return (date(year, 1, 1), date(year + 1, 1, 1)) if year <= today.year else None


def _group(parts: Parts, *names: str) -> str:
    """The first of ``names`` that took part in the match: the rule's pattern makes sure one did."""
    value = next((parts[name] for name in names if parts.get(name)), None)
    assert value is not None, f"the pattern has no group {names} that matched"
    return value


def _months(year: int, month: int, count: int) -> tuple[date, date]:
    return date(year, month, 1), date(*_shift_month(year, month, count), 1)


def _shift_month(year: int, month: int, by: int) -> tuple[int, int]:
    index = year * 12 + month - 1 + by
    return index // 12, index % 12 + 1


def _month_number(word: str | None) -> int | None:
    if word is None:
        return None
    if word.isdigit():
        return int(word) if 1 <= int(word) <= 12 else None
    return _MONTH.get(word.lower().rstrip("."))


def _amount(word: str) -> int:
    if word.isdigit():
        return int(word)
    if word in ("a", "an", "one"):
        return 1
    if word in ("two",):
        return 2
    if word in ("few", "several", "three"):
        return 3
    tens, _, ones = word.partition("十")
    if "十" in word:
        return (_ZH_NUMBERS.get(tens, 1) if tens else 1) * 10 + (_ZH_NUMBERS.get(ones, 0) if ones else 0)
    return _ZH_NUMBERS.get(word, 1)


_READERS: dict[str, Callable[[Parts, date], tuple[date, date] | None]] = {
    "iso": _day, "zh_date": _day, "en_date": _day, "zh_month": _month, "en_month": _month, "season": _season,
    "ago": _ago, "relative": _relative, "year": _year}
