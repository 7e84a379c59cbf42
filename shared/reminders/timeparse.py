"""Due times for reminders, read from what a user typed or from what the LLM returned.

Everything is resolved against the time the message was sent and the user's IANA time zone, so
"明天早上9点" and "tomorrow at 9" are 09:00 on the user's wall clock, across DST changes too. A time
expression is either one relative offset ("in 10 minutes", "半小时后") or a chain of adjacent
parts: a day, a part of the day, a clock time ("next friday at 3pm", "明天早上9点"). The rules, the
same in Chinese and English:

* A day without a time is ``DEFAULT_HOUR`` (09:00); a part of the day alone is its default hour
  (下午 15:00, 晚上 / tonight 20:00); "3天后" / "in 3 days" keeps the current time of day.
* A time without a day that has already passed today is tomorrow. An hour without am/pm or
  上午/下午 is its next occurrence at or after now, where 1–7 always mean the afternoon ("at 3",
  "3点" are 15:00) and 8–12 may be either ("at 9" at 10:30 is 21:00 today).
* "周五" / "friday" is the coming Friday: today if that time is still ahead, else a week later.
  "下周五" / "next friday" is the Friday of next week, weeks running Monday to Sunday (on a
  Sunday that is five days away, on a Wednesday nine). "这周五" / "本周五" is the Friday of this
  week even when it has passed; English "this friday" is the coming one.
* "12月1日" / "Dec 1" without a year is the next such date. An explicit day (今天, tomorrow, 昨天, last friday, a
  year) is kept even when the time has passed, for the caller to refuse.
* "12/01" is ambiguous (month or day first) and is not read. Only the first ``MAX_SCAN_CHARS``
  characters are searched, so any input is handled in bounded time.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

DEFAULT_HOUR = 9
"""A day named without a time of day means 09:00 local."""

MAX_SCAN_CHARS = 500
"""Time expressions are looked for only this far into a message."""

EARLIEST_TIME = datetime(1970, 1, 1, tzinfo=UTC)
LATEST_TIME = datetime(9999, 1, 1, tzinfo=UTC)
"""Every time Mnemo stores (a due time, a time in an imported file) lies in [EARLIEST_TIME, LATEST_TIME):
UTC years 1970 to 9998, so it can be shown on the wall clock of any zone (a year-9999 time at UTC-14
is year 10000, which PostgreSQL stores but Python cannot read back)."""

AFTERNOON_CLOCK_HOURS = range(1, 8)
"""A bare "at 3" or "3点" means 15:00: nobody sets a reminder for 03:00 without saying so."""

PERIODS: dict[str, tuple[int, int, int]] = {
    # part of the day: (first hour, hour after the last, hour when no time is given). Hours past 23
    # fall on the next day, so 晚上12点 is midnight and 晚上1点 is 01:00 the next morning.
    "small_hours": (0, 7, 6),
    "morning": (1, 13, DEFAULT_HOUR),
    "noon": (11, 15, 12),
    "afternoon": (12, 21, 15),
    "dusk": (16, 21, 18),
    "evening": (17, 29, 20),
}

_PERIOD_WORDS = {
    "凌晨": "small_hours", "早上": "morning", "早晨": "morning", "上午": "morning", "中午": "noon",
    "下午": "afternoon", "傍晚": "dusk", "晚上": "evening", "夜里": "evening",
    "morning": "morning", "in the morning": "morning", "afternoon": "afternoon",
    "in the afternoon": "afternoon", "evening": "evening", "in the evening": "evening", "at night": "evening",
}
_DAY_WORDS: dict[str, tuple[int, str | None]] = {
    "今天": (0, None), "今日": (0, None), "今早": (0, "morning"), "今晚": (0, "evening"),
    "明天": (1, None), "明日": (1, None), "明早": (1, "morning"), "明晚": (1, "evening"),
    "后天": (2, None), "大后天": (3, None),
    "today": (0, None), "this morning": (0, "morning"), "this afternoon": (0, "afternoon"),
    "this evening": (0, "evening"), "tonight": (0, "evening"), "tomorrow": (1, None), "tmrw": (1, None),
    "day after tomorrow": (2, None), "the day after tomorrow": (2, None),
    "昨天": (-1, None), "昨日": (-1, None), "昨晚": (-1, "evening"), "yesterday": (-1, None),
    "last night": (-1, "evening"),  # days gone: read so that a reminder for them is refused, never moved ahead
}
_NAMED_HOURS = {"noon": 12, "midday": 12, "midnight": 24}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_ZH_WEEKDAYS = {**{ch: i for i, ch in enumerate("一二三四五六日")}, "天": 6, "七": 6}
_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
                "october", "november", "december")
_MONTHS = {**{name[:length]: i for i, name in enumerate(_MONTH_NAMES, 1) for length in (3, None)}, "sept": 9}
_EN_NUMBERS = {**{word: i for i, word in enumerate(("one", "two", "three", "four", "five", "six", "seven", "eight",
                                                   "nine", "ten", "eleven", "twelve"), 1)},
               "a": 1, "an": 1, "fifteen": 15, "twenty": 20, "thirty": 30, "forty-five": 45, "ninety": 90}
_ZH_DIGITS = {**{ch: i for i, ch in enumerate("零一二三四五六七八九")}, "〇": 0, "两": 2}
_UNITS = {"分钟": "minutes", "分": "minutes", "小时": "hours", "钟头": "hours", "天": "days", "周": "weeks",
          "星期": "weeks", "礼拜": "weeks", "minute": "minutes", "min": "minutes", "hour": "hours", "hr": "hours",
          "day": "days", "week": "weeks"}
_KINDS = {"days": "day", "weekday": "day", "ymd": "day", "next_month_day": "day", "period": "period",
          "hour": "clock", "elapsed": "elapsed"}
"""Which part of an expression each parsed field fills; a chain takes each part at most once."""


def _alternation(words: Iterable[str]) -> str:
    """Longest first; English words only as whole words, with any run of spaces between them.

    The English words share one pair of lookarounds, so each alternative starts with its literal and the
    engine skips those whose first letter differs: trying every word at every position stays cheap."""
    def one(word: str) -> str:
        return re.escape(word).replace(r"\ ", r"\s+")
    ordered = sorted(words, key=len, reverse=True)
    english = "|".join(one(word) for word in ordered if word.isascii())
    other = [one(word) for word in ordered if not word.isascii()]
    return "|".join([rf"(?<![A-Za-z])(?:{english})(?![A-Za-z])"] * bool(english) + other)


_ZH_NUMBER = r"\d{1,4}|[零〇一二两三四五六七八九十百]{1,5}"
_ZH_SMALL = r"\d{1,2}|[一二三四五六七八九十]{1,3}"
_ZH_HOUR = r"\d{1,2}|[零〇一二两三四五六七八九十]{2,3}|[零〇二两三四五六七八九十]|(?<![快慢早晚多少好大小高低有差第])一"
_ZH_MINUTE = r"\d{1,2}|[二三四五]?十[一二三四五六七八九]?|零[一二三四五六七八九]|[一二三四五六七八九](?=分)"
_AT = r"(?:(?<![A-Za-z])at\s+)?"
_ON = r"(?:(?<![A-Za-z])on\s+)?"
_YEAR_AFTER = r"(?:,?\s+(?P<year>\d{4})(?!\d))?"

_ZH_RELATIVE = re.compile(rf"(?<![\d.])(?P<amount>{_ZH_NUMBER}|半)(?P<half>个半|半)?个?"
                          r"(?P<unit>分钟|分|小时|钟头|天|周|星期|礼拜)(?:以后|之后|后)")
_EN_RELATIVE = re.compile(
    rf"(?<![A-Za-z])in\s+(?:(?P<half>half\s+an?)|(?P<amount>\d{{1,4}}(?:\.\d{{1,2}})?|{_alternation(_EN_NUMBERS)}))"
    r"\s+(?P<unit>minutes?|mins?|hours?|hrs?|days?|weeks?)(?![A-Za-z])(?P<and_half>\s+and\s+a\s+half)?", re.I)
_DAY_WORD = re.compile(_alternation(_DAY_WORDS), re.I)
_ZH_WEEKDAY = re.compile(r"(?P<week>下个?|上个?|这个?|本)?(?:周|星期|礼拜)(?P<weekday>[一二三四五六日天七1-7])")
_EN_WEEKDAY = re.compile(rf"{_ON}(?:(?P<week>next|last|this|coming)\s+)?(?P<weekday>{_alternation(_WEEKDAYS)})", re.I)
_ZH_DATE = re.compile(rf"(?<!\d)(?:(?P<year>\d{{4}})\s*年\s*)?(?P<month>{_ZH_SMALL})\s*月\s*"
                      rf"(?P<day>{_ZH_SMALL})\s*[日号號]")
_ZH_NEXT_MONTH = re.compile(rf"下个?月(?P<day>{_ZH_SMALL})\s*[日号號]")
_ISO_DAY = re.compile(r"(?<![\d-])(?P<year>\d{4})-(?P<month>\d{1,2})-(?P<day>\d{1,2})(?![\d-])(?:T(?=\d))?")
_EN_MONTH_DAY = re.compile(rf"{_ON}(?P<month>{_alternation(_MONTHS)})\.?\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?"
                           rf"(?![\d:A-Za-z]){_YEAR_AFTER}", re.I)
_EN_DAY_MONTH = re.compile(rf"{_ON}(?:the\s+)?(?<![\d.])(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?"
                           rf"(?P<month>{_alternation(_MONTHS)}){_YEAR_AFTER}", re.I)
_PERIOD_WORD = re.compile(_alternation(_PERIOD_WORDS), re.I)
_ZH_CLOCK = re.compile(rf"(?<![\d:：])(?P<hour>{_ZH_HOUR})\s*(?:点钟?|點)(?![点儿])"
                       rf"(?:(?P<half>半)|(?P<quarter>[一三])刻|(?P<minute>{_ZH_MINUTE})分?|整)?")
_DIGIT_CLOCK = re.compile(_AT + r"(?<![\d:：/.-])(?P<hour>\d{1,2})(?=[:：]\d{2}|\s*[ap]\.?m\b)"
                          r"(?:[:：](?P<minute>\d{2})(?::\d{2})?(?![\d/]))?(?:\s*(?P<meridiem>[ap])\.?m\b\.?)?", re.I)
_AT_HOUR = re.compile(r"(?<![A-Za-z])at\s+(?P<hour>\d{1,2})(?:\s*o'?clock)?(?![\d:：/]|\.\d|\s*[ap]\.?m\b)", re.I)
_NAMED_CLOCK = re.compile(_AT + rf"(?P<word>{_alternation(_NAMED_HOURS)})", re.I)
REMIND_CUE = re.compile(r"提醒我|记得叫我|remind me|don't let me forget", re.IGNORECASE)
"""Words that ask for a reminder."""
_CONNECTOR = re.compile(r"[\s,，]*")
_LEADING_FILLER = re.compile(
    r"(?:[\s,，、:：;；.。!！~\-—]+|/remind\S*|(?:remind\s+me|please|to|that|about)(?![A-Za-z])"
    r"|请|麻烦你?|提醒我?(?:一下)?|叫我|记得|帮我|的)*", re.I)
_TRAILING_PUNCTUATION = " \t\r\n,，、:：;；"


class TimeOutOfRange(ValueError):
    """A time expression names a time outside what Mnemo stores (:func:`storable_time`)."""

    def __init__(self, matched: str) -> None:
        self.matched = matched
        super().__init__(f"{matched!r} is not between 1970 and 9998")


def storable_time(value: object) -> datetime | None:
    """``value`` in UTC when it is an aware time within [EARLIEST_TIME, LATEST_TIME), else None: the one
    check of every time that comes from a user, a model or a file."""
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
        return None
    try:
        utc = value.astimezone(UTC)
    except (OverflowError, ValueError):
        return None
    return utc if EARLIEST_TIME <= utc < LATEST_TIME else None


def storable_later(moment: datetime, delay: timedelta) -> datetime | None:
    """``moment + delay`` when it is a :func:`storable_time` (a snooze), else None (never an OverflowError)."""
    try:
        return storable_time(moment + delay)
    except OverflowError:
        return None


@dataclass(frozen=True)
class ResolvedTime:
    """A time expression found in a message, and what is left of the message without it."""

    due: datetime
    matched: str
    rest: str
    elapsed: bool = False
    """An amount of time from the message ("in 10 minutes", "半小时后"), not a time on the clock: a fixed
    moment, which a change of the user's time zone does not move."""
    span: tuple[int, int] = (0, 0)
    """Where ``matched`` is in the text."""


def resolve_when(text: str, now: datetime, tz: str) -> ResolvedTime | None:
    """The first time expression in ``text``, or None when there is none or it is invalid (25点);
    :class:`TimeOutOfRange` when it names a time Mnemo does not store (year 0, 9999-12-31)."""
    zone = known_zone(tz)
    if zone is None or not isinstance(text, str):
        return None
    window = text[:MAX_SCAN_CHARS]
    found = _find(window)
    if found is None:
        return None
    start, end, parts = found
    matched = window[start:end]
    year = parts.get("ymd", (None,))[0]
    if year is not None and not EARLIEST_TIME.year <= year < LATEST_TIME.year:
        raise TimeOutOfRange(matched)
    try:
        due = _resolve(parts, _local(now, zone), zone)
    except OverflowError as exc:
        raise TimeOutOfRange(matched) from exc
    except ValueError:
        return None
    if due is None:
        return None
    if storable_time(due) is None:
        raise TimeOutOfRange(matched)
    return ResolvedTime(due=due, matched=matched, rest=_what_is_left(text, start, end), elapsed="elapsed" in parts,
                        span=(start, end))


def asks_for_a_reminder(text: str, now: datetime, tz: str) -> bool:
    """Whether ``text`` asks for a reminder ("提醒我…", "remind me …") or names a time: only then is a reminder
    the model could not schedule worth telling the user about (one it proposed unasked is just dropped)."""
    if REMIND_CUE.search(text or ""):
        return True
    try:
        return resolve_when(text, now, tz) is not None
    except TimeOutOfRange:
        return True


def parse_due(value: str, now: datetime, tz: str) -> datetime | None:
    """A due time from the LLM: ISO 8601 (naive means the user's zone, a date alone 09:00) or words;
    None when there is none or it is not a :func:`storable_time`."""
    zone = known_zone(tz)
    if zone is None or not isinstance(value, str):
        return None
    text = value.strip()[:MAX_SCAN_CHARS]
    due: datetime | None
    try:
        due = _from_iso(text, zone)
    except (ValueError, OverflowError):
        try:
            resolved = resolve_when(text, now, tz)
        except TimeOutOfRange:
            return None
        due = resolved.due if resolved else None
    return due if storable_time(due) is not None else None


def _from_iso(text: str, zone: tzinfo) -> datetime:
    """``text`` as an ISO date or date-time in ``zone``; ValueError when it is neither."""
    try:
        return _wall(date.fromisoformat(text), DEFAULT_HOUR, 0, zone)
    except ValueError:
        parsed = datetime.fromisoformat(text)
    return parsed.astimezone(zone) if parsed.tzinfo else _attach(parsed, zone)


FIXED_OFFSET_NAME = re.compile(r"UTC(?P<sign>[+-])(?P<hours>\d{2}):(?P<minutes>[0-5]\d)")
"""How a time zone that is only an offset is stored ("UTC+05:30", "UTC-07:00"), as a user may set it."""
MAX_OFFSET = timedelta(hours=14)


def known_zone(name: object) -> tzinfo | None:
    """The IANA zone of that name, or a fixed offset written as :data:`FIXED_OFFSET_NAME`; None for anything
    else (the one check of a user's or a file's time zone)."""
    if not isinstance(name, str) or not name:
        return None
    if found := FIXED_OFFSET_NAME.fullmatch(name):
        offset = timedelta(hours=int(found["hours"]), minutes=int(found["minutes"]))
        return timezone(offset if found["sign"] == "+" else -offset, name) if offset <= MAX_OFFSET else None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError, OSError):
        return None


def zone_of(name: str) -> tzinfo:
    """The zone of a name that was checked with :func:`known_zone` when it was stored; UTC if it is unknown now."""
    return known_zone(name) or UTC


def zone_or_default(preferred: str | None, default: str) -> str:
    """The user's own time zone when it is a valid one, else the configured default."""
    return preferred if preferred and known_zone(preferred) is not None else default


def same_wall_time(moment: datetime, old: tzinfo, new: tzinfo) -> datetime:
    """The moment whose clock time in ``new`` is the clock time ``moment`` has in ``old`` (08:30 stays 08:30)."""
    return _attach(moment.astimezone(old).replace(tzinfo=None), new)


def _local(now: datetime, zone: tzinfo) -> datetime:
    """``now`` on the user's wall clock; a naive ``now`` is taken to be UTC."""
    return (now if now.tzinfo else now.replace(tzinfo=UTC)).astimezone(zone)


def _wall(day: date, hour: int, minute: int, zone: tzinfo) -> datetime:
    """``hour:minute`` on ``day`` in ``zone``; hours past 23 run into the next day."""
    return _attach(datetime.combine(day, time()) + timedelta(hours=hour, minutes=minute), zone)


def _attach(naive: datetime, zone: tzinfo) -> datetime:
    """A wall time in ``zone``: one skipped by a DST change moves forward by the gap, one that
    happens twice is its first occurrence."""
    return naive.replace(tzinfo=zone).astimezone(UTC).astimezone(zone)


def _find(text: str) -> tuple[int, int, dict[str, Any]] | None:
    """Span and fields of the earliest expression, extended over adjacent parts of other kinds."""
    matches = [(m, read) for pattern, read in _COMPONENTS if (m := pattern.search(text))]
    if not matches:
        return None
    first, read = min(matches, key=lambda item: (item[0].start(), -item[0].end()))
    start, end, parts = first.start(), first.end(), read(first)
    while (extra := _adjacent(text, _skipped(_CONNECTOR, text, end), parts)) is not None:
        end, more = extra
        parts = {**parts, **more}
    return start, end, parts


def _adjacent(text: str, pos: int, parts: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    """End and fields of a part starting at ``pos`` that fills a slot ``parts`` has left empty."""
    for pattern, read in _COMPONENTS:
        if (match := pattern.match(text, pos)) and match.end() > pos:
            more = read(match)
            have, new = _kinds_of(parts), _kinds_of(more)
            if not have & new and "elapsed" not in have | new:
                return match.end(), more
    return None


def _kinds_of(parts: dict[str, Any]) -> set[str]:
    return {_KINDS[field] for field in parts if field in _KINDS}


def _resolve(parts: dict[str, Any], now: datetime, zone: tzinfo) -> datetime | None:
    """The first candidate at or after ``now`` (the wall clock in ``zone``); the first candidate when all have
    passed."""
    if "elapsed" in parts:
        elapsed: timedelta = parts["elapsed"]
        return (now.astimezone(UTC) + elapsed).astimezone(zone)
    clock = _clock_options(parts, now)
    dues = [_wall(day, hour, minute, zone) for day in _day_options(parts, now.date())
            for hour, minute in clock]
    return next((due for due in dues if due >= now), dues[0]) if dues else None


def _clock_options(parts: dict[str, Any], now: datetime) -> list[tuple[int, int]]:
    """Candidate (hour, minute) pairs in order of preference; empty when the time is invalid."""
    period = parts.get("period")
    if "hour" not in parts:
        if period:
            return [(PERIODS[period][2], 0)]
        return [(now.hour, now.minute)] if parts.get("keep_time") else [(DEFAULT_HOUR, 0)]
    hour, minute, meridiem = parts["hour"], parts.get("minute", 0), parts.get("meridiem")
    if not 0 <= minute < 60 or hour > 24 or (hour == 24 and minute):
        return []
    if meridiem:
        return [(hour % 12 + (12 if meridiem == "pm" else 0), minute)] if 1 <= hour <= 12 else []
    if period:
        first, stop, _ = PERIODS[period]
        options = [hour % 12 + shift for shift in (0, 12, 24)] if 1 <= hour <= 12 else [hour]
        return [(h, minute) for h in options if first <= h < stop][:1]
    if parts.get("exact") or not 1 <= hour <= 12:
        return [(hour, minute)]
    if hour in AFTERNOON_CLOCK_HOURS:
        return [(hour + 12, minute)]
    return [(hour, minute), (hour + 12, minute)]


def _day_options(parts: dict[str, Any], today: date) -> list[date]:
    if "days" in parts:
        return [today + timedelta(days=parts["days"])]
    if "weekday" in parts:
        weekday, week = parts["weekday"], parts["week"]
        if week == "coming":
            coming = today + timedelta(days=(weekday - today.weekday()) % 7)
            return [coming, coming + timedelta(days=7)]
        monday = today - timedelta(days=today.weekday())
        return [monday + timedelta(days=weekday + {"next": 7, "last": -7}.get(week, 0))]
    if "next_month_day" in parts:
        return _valid_dates([(today.year + today.month // 12, today.month % 12 + 1, parts["next_month_day"])])
    if "ymd" in parts:
        year, month, day = parts["ymd"]
        years = [year] if year is not None else [today.year, today.year + 1]
        return _valid_dates([(y, month, day) for y in years])
    return [today, today + timedelta(days=1)]


def _valid_dates(triples: list[tuple[int, int, int]]) -> list[date]:
    """The real calendar dates among (year, month, day) triples; Feb 30 is dropped."""
    dates = []
    for year, month, day in triples:
        try:
            dates.append(date(year, month, day))
        except ValueError:
            continue
    return dates


def _what_is_left(text: str, start: int, end: int) -> str:
    """``text`` without the expression and the filler around it ("remind me to", "提醒我", "，")."""
    before, after = text[:start].rstrip(), text[end:].lstrip()
    both_cjk = before and after and before[-1] >= "\u2e80" and after[0] >= "\u2e80"
    rest = before + ("" if both_cjk else " ") + after
    rest = rest[_skipped(_LEADING_FILLER, rest, 0):].rstrip(_TRAILING_PUNCTUATION)
    return rest.removesuffix("提醒我").rstrip(_TRAILING_PUNCTUATION)


def _skipped(pattern: re.Pattern[str], text: str, pos: int) -> int:
    """Where ``pattern`` (one that may match nothing, so it always matches) stops, from ``pos``."""
    found = pattern.match(text, pos)
    return found.end() if found else pos


def _number(token: str) -> int:
    """``"23"``, ``"二十三"``, ``"两"`` or ``"一百二十"`` as an int."""
    if token.isdecimal():
        return int(token)
    total = current = 0
    for char in token:
        if char in "十百":
            total += (current or 1) * (10 if char == "十" else 100)
            current = 0
        else:
            current = _ZH_DIGITS[char]
    return total + current


def _key(words: str) -> str:
    return " ".join(words.lower().split())


def _offset(amount: float, unit: str) -> dict[str, Any]:
    """Whole days keep the wall-clock time; minutes, hours and fractions are elapsed time."""
    if unit in ("days", "weeks") and amount == int(amount):
        return {"days": int(amount) * (7 if unit == "weeks" else 1), "keep_time": True}
    return {"elapsed": timedelta(**{unit: amount})}


def _read_zh_relative(m: re.Match[str]) -> dict[str, Any]:
    amount = 0.5 if m["amount"] == "半" else _number(m["amount"])
    return _offset(amount + (0.5 if m["half"] else 0), _UNITS[m["unit"]])


def _read_en_relative(m: re.Match[str]) -> dict[str, Any]:
    word = m["amount"]  # None when the pattern read "half an"
    amount = 0.5 if m["half"] else _EN_NUMBERS.get(word.lower()) or float(word)
    amount += 0.5 if m["and_half"] else 0
    return _offset(amount, _UNITS[m["unit"].lower().rstrip("s")])


def _read_day_word(m: re.Match[str]) -> dict[str, Any]:
    days, period = _DAY_WORDS[_key(m[0])]
    return {"days": days, "period": period} if period else {"days": days}


def _read_zh_weekday(m: re.Match[str]) -> dict[str, Any]:
    week = {"": "coming", "下": "next", "下个": "next", "上": "last", "上个": "last"}.get(m["week"] or "", "this")
    weekday = m["weekday"]
    return {"weekday": int(weekday) - 1 if weekday.isdecimal() else _ZH_WEEKDAYS[weekday], "week": week}


def _read_en_weekday(m: re.Match[str]) -> dict[str, Any]:
    week = (m["week"] or "").lower() if (m["week"] or "").lower() in ("next", "last") else "coming"
    return {"weekday": _WEEKDAYS.index(m["weekday"].lower()), "week": week}


def _read_date(m: re.Match[str]) -> dict[str, Any]:
    month = _MONTHS.get(m["month"].lower()) or _number(m["month"])
    return {"ymd": (int(m["year"]) if m["year"] else None, month, _number(m["day"]))}


def _read_zh_clock(m: re.Match[str]) -> dict[str, Any]:
    minute = 30 if m["half"] else 15 * _number(m["quarter"]) if m["quarter"] else _number(m["minute"] or "0")
    return {"hour": _number(m["hour"]), "minute": minute}


def _read_digit_clock(m: re.Match[str]) -> dict[str, Any]:
    hour, meridiem = m["hour"], m["meridiem"] and m["meridiem"].lower() + "m"
    return {"hour": int(hour), "minute": int(m["minute"] or 0), "meridiem": meridiem, "exact": hour[0] == "0"}


_COMPONENTS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], dict[str, Any]]], ...] = (
    (_ZH_RELATIVE, _read_zh_relative),
    (_EN_RELATIVE, _read_en_relative),
    (_DAY_WORD, _read_day_word),
    (_ZH_WEEKDAY, _read_zh_weekday),
    (_EN_WEEKDAY, _read_en_weekday),
    (_ZH_DATE, _read_date),
    (_ZH_NEXT_MONTH, lambda m: {"next_month_day": _number(m["day"])}),
    (_ISO_DAY, _read_date),
    (_EN_MONTH_DAY, _read_date),
    (_EN_DAY_MONTH, _read_date),
    (_PERIOD_WORD, lambda m: {"period": _PERIOD_WORDS[_key(m[0])]}),
    (_ZH_CLOCK, _read_zh_clock),
    (_DIGIT_CLOCK, _read_digit_clock),
    (_AT_HOUR, lambda m: {"hour": int(m["hour"])}),
    (_NAMED_CLOCK, lambda m: {"hour": _NAMED_HOURS[m["word"].lower()], "exact": True}),
)
"""Every part a time expression can be built from, tried in this order where two start together."""
