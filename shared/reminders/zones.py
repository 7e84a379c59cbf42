"""A user's time zone as they name it, and as they mention it in chat (pure).

:func:`read_zone` reads what ``/timezone`` and the panel are given: an IANA name in any case
("asia/tokyo"), a city or country in Chinese or English ("杭州", "Lisbon"), a zone's name ("Pacific time",
"北京时间", "PST") or an offset from UTC ("+8", "UTC-7", "GMT+5:30", "东八区"). An offset is kept as
"UTC+05:30" (:data:`~shared.reminders.timeparse.FIXED_OFFSET_NAME`): it has no summer time. A country that
spans several zones ("美国", "Australia") is :class:`SeveralZones`, with cities to choose by.

:func:`zone_in_message` finds a statement of where the user is, or which zone they use, in a chat message:
"我在北京", "我现在住在温哥华", "我的时区是东八区", "my time zone is Pacific", "I'm in Seattle", "I live in
Lisbon now". Only a present statement counts: "我明天在北京", "我在北京的时候", "I'm in Paris next week", "I'm
not in Seattle" and questions do not. It is read by rules so that a model cannot change a user's zone on its
own; a zone a model read from a message is kept only when :func:`supports_zone` finds it there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from zoneinfo import available_timezones

from shared.reminders.timeparse import MAX_OFFSET, known_zone
from shared.reminders.zone_places import PLACES, SEVERAL_ZONES, ZONE_WORDS

MAX_ZONE_CHARS = 64
"""What names a zone is never longer than this (the column is 64 characters)."""
_OFFSET = re.compile(r"(?:utc|gmt)?\s*(?P<sign>[+\-−])\s*(?P<hours>\d{1,2})(?:\s*[:：.]?\s*(?P<minutes>\d{2}))?"
                     r"(?:\s*(?:区|时区|hours?|h))?", re.I)
_ZH_OFFSET = re.compile(r"(?P<side>[东西])(?P<hours>\d{1,2}|十[一二]?|[一二三四五六七八九十])区")
_ZERO_ZONE = re.compile(r"(?:utc|gmt|z|零时区)\s*(?:[+\-−]\s*0{1,2}(?::?00)?)?", re.I)
_AROUND = " \t\r\n,，.。!！:：;；\"'“”‘’()（）「」"
_SUFFIXES = ("standard time zone", "time zone", "timezone", "standard time", "time", "时区", "标准时间", "时间", "区")
_LEADING_ARTICLE = re.compile(r"^(?:the|my)\s+", re.I)
_WORD = re.compile(r"[A-Za-zÀ-ÿ.'’-]+")
_ZH_NUMBERS = {**{ch: n for n, ch in enumerate("一二三四五六七八九十", 1)}, "十一": 11, "十二": 12}


@dataclass(frozen=True)
class ZoneChoice:
    """A time zone that was named: what is stored (an IANA name or "UTC+05:30") and the words it came from."""

    name: str
    said: str


@dataclass(frozen=True)
class SeveralZones:
    """A place with several time zones ("美国"): the words, and cities that tell them apart."""

    said: str
    cities: tuple[str, ...]


ZoneReading = ZoneChoice | SeveralZones


def read_zone(text: object) -> ZoneReading | None:
    """The zone ``text`` names as a whole, or None when it names none."""
    if not isinstance(text, str):
        return None
    said = text.strip(_AROUND)
    if not said or len(said) > MAX_ZONE_CHARS:
        return None
    dotted = text.strip(_AROUND.replace(".", ""))  # "U.S.", "Washington D.C."
    forms = [*_without_suffixes(" ".join(dotted.split())), *_without_suffixes(" ".join(said.split()))]
    for candidate in dict.fromkeys(forms):
        found = _named(candidate)
        if found is not None:
            return found if isinstance(found, SeveralZones) else ZoneChoice(found, said)
    return None


def zone_label(name: str, now: datetime) -> str:
    """"Asia/Shanghai (UTC+08:00)": the zone and its offset at ``now``; an offset zone is its own label."""
    zone = known_zone(name)
    if zone is None or name.startswith("UTC"):
        return name
    return f"{name} ({offset_name(now.astimezone(zone).utcoffset() or timedelta())})"


def offset_name(offset: timedelta) -> str:
    """"UTC+05:30" for five and a half hours east of UTC; "UTC" for none."""
    if not offset:
        return "UTC"
    minutes = int(abs(offset).total_seconds() // 60)
    return f"UTC{'+' if offset > timedelta() else '-'}{minutes // 60:02d}:{minutes % 60:02d}"


def _without_suffixes(text: str) -> list[str]:
    """``text``, then ``text`` without "the" and a trailing "time zone" / "时间" and the like."""
    candidates = [text]
    bare = _LEADING_ARTICLE.sub("", text)
    for suffix in _SUFFIXES:
        if bare.casefold().endswith(suffix) and len(bare) > len(suffix):
            bare = bare[: -len(suffix)].strip(_AROUND + "-")
    return list(dict.fromkeys([*candidates, bare]))


def _named(text: str) -> str | SeveralZones | None:
    key = text.casefold()
    if key in ZONE_WORDS or key in PLACES:
        return ZONE_WORDS.get(key) or PLACES[key]
    if key in SEVERAL_ZONES:
        return SeveralZones(text, SEVERAL_ZONES[key])
    if key in _iana_names():
        return _iana_names()[key]
    return _offset(text)


@cache
def _iana_names() -> dict[str, str]:
    """Every IANA zone name, case-folded, also with spaces for underscores ("america/new york")."""
    names = {name.casefold(): name for name in available_timezones()} | {"utc": "UTC"}
    return names | {key.replace("_", " "): name for key, name in names.items()}


def _offset(text: str) -> str | None:
    """"+8", "UTC-7", "GMT+5:30", "东八区" as a stored offset name; None for none or one no zone has."""
    if _ZERO_ZONE.fullmatch(text):
        return "UTC"
    if found := _ZH_OFFSET.fullmatch(text):
        hours = int(found["hours"]) if found["hours"].isdecimal() else _ZH_NUMBERS.get(found["hours"], 99)
        offset = timedelta(hours=hours) * (1 if found["side"] == "东" else -1)
    elif found := _OFFSET.fullmatch(text):
        minutes = int(found["minutes"] or 0)
        if minutes not in (0, 30, 45):
            return None
        offset = timedelta(hours=int(found["hours"]), minutes=minutes) * (1 if found["sign"] == "+" else -1)
    else:
        return None
    if abs(offset) > MAX_OFFSET or offset < -timedelta(hours=12):
        return None
    return offset_name(offset)


# -- in chat -----------------------------------------------------------------------------------------------------

_ZH_FOLLOWERS = re.compile(r"$|[，,。.!！~～;；、\s]|工作|生活|上班|上学|读书|念书|定居|住|这边|那边"
                           r"|了|呢|啊|呀|哦|哈|嘛|出差|旅游|玩")
"""What may follow the place in "我在北京…" for it to say where the speaker is ("我在北京的时候" does not)."""
_EN_FOLLOWERS = re.compile(r"\s*(?:$|[,.!;:~)]|(?:and|so|but|now|right\s+now|currently|these\s+days|at\s+the\s+moment"
                           r"|today|too|as\s+well|btw|nowadays|for\s+work|lol|haha)(?![A-Za-z]))", re.I)
"""The same in English: "I'm in Paris next week" and "I'm in Paris?" do not say where the speaker is now."""
_ZH_WHERE = re.compile(r"(?:我(?:(?:现在|目前|如今|这会儿|平时|一直)?人?(?:住|待|呆|定居)?在"
                       r"|(?:已经|刚)?搬(?:到|去)了?)|(?:^|(?<=[，,。；;！!]))\s*(?:现在|目前|如今|一直)?(?:住|定居)在)"
                       r"(?P<place>[\u3400-\u9fff（）]{2,10})")
"""Where a Chinese message says where the speaker is: "我在…", "我住在…", "我搬到…"; and "住在…" opening a clause,
its subject "我" left out as Chinese does ("我叫小雨，住在成都")."""
_EN_WHERE = re.compile(r"(?<![A-Za-z])I(?:(?:'m|’m|\s+am)\s+(?:now\s+|currently\s+|still\s+)?"
                       r"(?:(?:living|based|located|staying)\s+)?in|\s+(?:now\s+|currently\s+)?live\s+in"
                       r"|(?:'ve|\s+have)?\s+(?:just\s+)?moved\s+to)"
                       r"\s+(?:the\s+)?(?P<place>[A-Za-zÀ-ÿ][A-Za-zÀ-ÿ.' -]{0,30})", re.I)
_ZH_OFFSET_WORDS = r"[东西](?:\d{1,2}|十[一二]?|[一二三四五六七八九十])区|(?:UTC|GMT)\s*[+\-−]\s*\d{1,2}(?:[:：]\d{2})?"
_ZONE_STATEMENTS = (
    re.compile(r"时区(?:是|为|改成|改为|设为|设成|设置为|设置成|换成|调成|调到|用)(?P<zone>[^，,。.!！?？;；\n]{1,40})"),
    re.compile(rf"我(?:这边|这里|们)?(?:(?:是|在)(?P<zone>{_ZH_OFFSET_WORDS})"
               r"|用(?:的是)?(?P<uses>[^，,。.!！?？;；\n]{2,12}?时间))"),
    re.compile(r"(?<![A-Za-z])(?:(?:my|our)\s+time\s*zone\s+(?:is|=|:)|(?:set|change|switch|update)\s+my\s+time\s*zone"
               r"\s+to)\s*(?P<zone>[^,.!?;\n]{1,40})", re.I),
    re.compile(r"(?<![A-Za-z])I(?:'m|’m|\s+am)\s+(?:on|in)\s+(?:the\s+)?(?P<zone>[A-Za-z]{2,12}(?:\s[A-Za-z]{2,12})?"
               r"\s+time)(?:\s*zone)?(?![A-Za-z])", re.I),
)
"""Where a message names the user's zone itself: "我的时区是东八区", "我这边是西五区", "my time zone is Pacific",
"I'm on Eastern time"."""
_EXPLICIT = re.compile(r"时区|时差|[东西].{1,2}区|time\s*zone|\b(?:UTC|GMT)\b|\btime\b", re.I)
_WORD_END = re.compile(r"(?<!\s)\s+(?:and|so|but|now|I|which|because|btw)\b.*$"
                       r"|(?<![吧啦了呀哦哈嘛])[吧啦了呀哦哈嘛]+$", re.I)
MAX_PLACE_WORDS = 5


def zone_in_message(text: str) -> ZoneReading | None:
    """The zone a chat message says the user is in, or None (see the module's docstring)."""
    if not isinstance(text, str) or not text.strip():
        return None
    window = text[:500]
    for pattern in _ZONE_STATEMENTS:
        for found in pattern.finditer(window):
            words = found["zone"] or found.groupdict().get("uses") or ""
            reading = read_zone(_WORD_END.sub("", words)) or read_zone(words)
            if reading is not None:
                return reading
    for pattern, place_in in ((_ZH_WHERE, _zh_place), (_EN_WHERE, _en_place)):
        for found in pattern.finditer(window):
            place = place_in(window, found.start("place"))
            if place is not None:
                return read_zone(place)
    return None


def _zh_place(text: str, start: int) -> str | None:
    """The longest place name at ``start`` that is followed by what a statement of where one is allows."""
    for end in range(min(len(text), start + 10), start + 1, -1):
        name = text[start:end]
        if (name in PLACES or name in SEVERAL_ZONES) and _ZH_FOLLOWERS.match(text, end):
            return name
    return None


def _en_place(text: str, start: int) -> str | None:
    """The same in English: whole words, at most ``MAX_PLACE_WORDS`` of them."""
    ends = [match.end() for match in _WORD.finditer(text, start, start + 40)][:MAX_PLACE_WORDS]
    for end in reversed(ends):
        for name in dict.fromkeys((text[start:end], text[start:end].rstrip("."))):  # "… City." ends a sentence
            known = name.casefold() in PLACES or name.casefold() in SEVERAL_ZONES
            if known and _EN_FOLLOWERS.match(text, start + len(name)):
                return name
    return None


def supports_zone(text: str, name: str) -> bool:
    """Whether a message could have told a model that the user's zone is ``name``: it talks about time zones
    ("时区", "time zone", "UTC", "Pacific time"), or it names a place in that zone ("Lisbon" for
    Europe/Lisbon, from the tables or the zone's own city). A zone a model reads from a message without
    either is its own guess ("我在家" → UTC), and is not kept."""
    if not isinstance(text, str) or known_zone(name) is None:
        return False
    if _EXPLICIT.search(text):
        return True
    folded = " ".join(text.casefold().split())
    city = name.rsplit("/", 1)[-1].replace("_", " ").casefold()
    places = [place for place, zone in PLACES.items() if zone == name]
    return ("/" in name and city in folded) or any(_contains_word(folded, place) for place in places)


def _contains_word(text: str, name: str) -> bool:
    """``name`` in ``text``, an English one as a whole word."""
    start = text.find(name)
    while start >= 0:
        end = start + len(name)
        if not name.isascii() or not (text[start - 1:start].isalpha() or text[end:end + 1].isalpha()):
            return True
        start = text.find(name, start + 1)
    return False
