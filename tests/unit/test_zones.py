"""Time zones as people name them, in Chinese and English, and as they say where they are in chat (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from shared.reminders.timeparse import known_zone, resolve_when, same_wall_time
from shared.reminders.zones import (
    SeveralZones,
    ZoneChoice,
    offset_name,
    read_zone,
    supports_zone,
    zone_in_message,
    zone_label,
)

JANUARY = datetime(2027, 1, 15, 12, 0, tzinfo=UTC)
JULY = datetime(2027, 7, 15, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(("said", "zone"), [
    ("europe/lisbon", "Europe/Lisbon"),
    ("America/Sao Paulo", "America/Sao_Paulo"),
    ("  Pacific/Auckland。", "Pacific/Auckland"),
    ("大阪", "Asia/Tokyo"),
    ("成都", "Asia/Shanghai"),
    ("温哥华", "America/Vancouver"),
    ("新西兰", "Pacific/Auckland"),
    ("Denver", "America/Denver"),
    ("the Netherlands", "Europe/Amsterdam"),
    ("melbourne", "Australia/Melbourne"),
    ("Kathmandu", "Asia/Kathmandu"),
    ("Mountain time", "America/Denver"),
    ("the Eastern time zone", "America/New_York"),
    ("MDT", "America/Denver"),
    ("EST", "America/New_York"),  # the US zone with summer time, not IANA's fixed "EST"
    ("日本时间", "Asia/Tokyo"),
    ("美国东部时间", "America/New_York"),
    ("GMT", "UTC"),
    ("零时区", "UTC"),
])
def test_a_zone_is_read_from_an_iana_name_a_city_a_country_or_a_zones_own_name(said, zone):
    assert read_zone(said) == ZoneChoice(zone, said.strip(" 。"))


@pytest.mark.parametrize(("said", "zone"), [
    ("+9", "UTC+09:00"),
    ("UTC-3", "UTC-03:00"),
    ("utc + 10", "UTC+10:00"),
    ("GMT+9:30", "UTC+09:30"),
    ("-0930", "UTC-09:30"),
    ("UTC+5:45", "UTC+05:45"),
    ("UTC+14", "UTC+14:00"),
    ("UTC-12", "UTC-12:00"),
    ("东九区", "UTC+09:00"),
    ("西三区", "UTC-03:00"),
    ("东十一区", "UTC+11:00"),
    ("UTC+0", "UTC"),
])
def test_an_offset_from_utc_is_kept_as_a_fixed_offset(said, zone):
    assert read_zone(said) == ZoneChoice(zone, said)
    assert known_zone(zone).utcoffset(JULY) == known_zone(zone).utcoffset(JANUARY)  # no summer time


@pytest.mark.parametrize("said", ["UTC+15", "UTC-13", "+5:20", "东十三区", "Mars/Olympus", "Springfield", "", "  ",
                                  "x" * 65, "Asia/Shanghai; DROP TABLE users", "时区", "the", None, 8])
def test_what_names_no_zone_is_none(said):
    assert read_zone(said) is None


@pytest.mark.parametrize(("said", "first"), [("美国", "New York"), ("Canada", "Toronto"), ("澳洲", "Sydney"),
                                             ("CST", "Chicago"), ("the US", "New York")])
def test_a_country_with_several_zones_asks_for_a_city(said, first):
    reading = read_zone(said)
    assert isinstance(reading, SeveralZones)
    assert reading.cities[0] == first


def test_a_fixed_offset_is_a_known_zone_and_an_out_of_range_or_malformed_one_is_not():
    assert known_zone("UTC+05:30").utcoffset(None) == timedelta(hours=5, minutes=30)
    assert known_zone("UTC-07:00").utcoffset(None) == -timedelta(hours=7)
    assert known_zone("UTC+15:00") is None
    assert known_zone("UTC+5:30") is None
    assert known_zone("UTC+05:61") is None


def test_a_time_is_read_on_the_clock_of_a_fixed_offset():
    found = resolve_when("明天早上7点", JANUARY, "UTC-03:00")
    assert found.due.isoformat() == "2027-01-16T07:00:00-03:00"


def test_the_same_wall_time_in_another_zone_keeps_the_clock_across_summer_time():
    moment = datetime(2027, 7, 1, 8, 30, tzinfo=UTC)  # 08:30 on a UTC clock
    moved = same_wall_time(moment, UTC, ZoneInfo("America/Chicago"))  # CDT, UTC-5 in July
    assert moved.strftime("%Y-%m-%d %H:%M %z") == "2027-07-01 08:30 -0500"
    assert moved - moment == timedelta(hours=5)


def test_a_label_shows_the_zone_and_its_offset_at_that_moment():
    assert zone_label("Europe/Lisbon", JANUARY) == "Europe/Lisbon (UTC)"
    assert zone_label("Europe/Lisbon", JULY) == "Europe/Lisbon (UTC+01:00)"
    assert zone_label("UTC-09:30", JULY) == "UTC-09:30"
    assert offset_name(-timedelta(hours=3, minutes=30)) == "UTC-03:30"


@pytest.mark.parametrize(("message", "zone", "said"), [
    ("我现在在杭州", "Asia/Shanghai", "杭州"),
    ("我住在大阪，最近很冷", "Asia/Tokyo", "大阪"),
    ("我人在伦敦出差呢", "Europe/London", "伦敦"),
    ("我刚搬到温哥华了", "America/Vancouver", "温哥华"),
    ("你好，我叫阿杰，住在广州。", "Asia/Shanghai", "广州"),
    ("住在首尔，挺好的", "Asia/Seoul", "首尔"),
    ("我的时区是西五区", "UTC-05:00", "西五区"),
    ("把时区改成柏林吧", "Europe/Berlin", "柏林"),
    ("我这边是东九区", "UTC+09:00", "东九区"),
    ("我用的是美东时间", "America/New_York", "美东时间"),
    ("I'm in Denver right now", "America/Denver", "Denver"),
    ("I live in Auckland", "Pacific/Auckland", "Auckland"),
    ("I am currently based in Lisbon, and loving it", "Europe/Lisbon", "Lisbon"),
    ("I've just moved to Salt Lake City!", "America/Denver", "Salt Lake City"),
    ("My time zone is Mountain time", "America/Denver", "Mountain time"),
    ("please set my timezone to UTC+9:30", "UTC+09:30", "UTC+9:30"),
    ("I'm on Central European time these days", "Europe/Berlin", "Central European time"),
    ("I'm in the Pacific time zone", "America/Los_Angeles", "Pacific time"),
    ("so yeah, I'm in Kathmandu.", "Asia/Kathmandu", "Kathmandu"),
])
def test_a_message_that_says_where_the_user_is_names_their_zone(message, zone, said):
    assert zone_in_message(message) == ZoneChoice(zone, said)


@pytest.mark.parametrize("message", [
    "我明天在杭州", "我在杭州的时候很开心", "我在杭州吗？", "我不在杭州", "我在家", "我在杭州路上", "我在公司加班",
    "我在北京时间下午三点开会", "他在伦敦", "他住在伦敦", "我妈妈住在广州",
    "我叫阿杰，住在广州的时候很开心", "I'm in Denver next week", "I'm not in Denver", "I was in Lisbon",
    "I'm in Denver?", "I'm in a meeting", "I'm in love", "My friend lives in Auckland", "I'm in PT on Tuesdays",
    "what is my time zone?", "my time zone is something else", "I'm in Lisbonland", "",
])
def test_a_message_that_does_not_say_where_the_user_is_now_names_no_zone(message):
    assert zone_in_message(message) is None


def test_a_country_with_several_zones_in_chat_asks_which():
    reading = zone_in_message("I live in Canada")
    assert isinstance(reading, SeveralZones)
    assert "Vancouver" in reading.cities


def test_a_zone_a_model_read_is_kept_only_where_the_message_names_it_or_talks_of_zones():
    assert supports_zone("just relocated to Reykjavik", "Atlantic/Reykjavik")  # the zone's own city
    assert supports_zone("刚到大阪", "Asia/Tokyo")  # a place the tables know in that zone
    assert supports_zone("my tz? UTC minus three", "UTC-03:00")  # talk of UTC
    assert not supports_zone("我在家", "UTC")  # a small model's guess
    assert not supports_zone("I love Osaka food", "Europe/Paris")
    assert not supports_zone("anything", "Mars/Olympus")
