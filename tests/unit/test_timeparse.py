"""Reminder due times from free text and from the LLM's ISO strings (pure calendar rules)."""

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.reminders.timeparse import (
    DEFAULT_HOUR,
    MAX_SCAN_CHARS,
    ResolvedTime,
    TimeOutOfRange,
    asks_for_a_reminder,
    parse_due,
    resolve_when,
    storable_time,
)
from tests.cpu_time import cpu_seconds

SHANGHAI = "Asia/Shanghai"
NEW_YORK = "America/New_York"
SUNDAY = datetime(2026, 11, 22, 10, 30, tzinfo=ZoneInfo(SHANGHAI))
FRIDAY = datetime(2026, 11, 27, 10, 30, tzinfo=ZoneInfo(SHANGHAI))


def due(text: str, now: datetime = SUNDAY, tz: str = SHANGHAI) -> str | None:
    """The resolved due time as local ``YYYY-MM-DD HH:MM``, or None."""
    resolved = resolve_when(text, now, tz)
    if resolved is None:
        return None
    assert resolved.due.tzinfo == ZoneInfo(tz)
    return resolved.due.strftime("%Y-%m-%d %H:%M")


@pytest.mark.parametrize(("text", "expected"), [
    ("今天下午3点", "2026-11-22 15:00"),
    ("明天", f"2026-11-23 {DEFAULT_HOUR:02d}:00"),
    ("后天", "2026-11-24 09:00"),
    ("大后天", "2026-11-25 09:00"),
    ("今晚", "2026-11-22 20:00"),
    ("明早", "2026-11-23 09:00"),
    ("明晚", "2026-11-23 20:00"),
    ("明晚8点", "2026-11-23 20:00"),
    ("明天早上9点", "2026-11-23 09:00"),
    ("明天上午10点", "2026-11-23 10:00"),
    ("明天中午", "2026-11-23 12:00"),
    ("明天傍晚", "2026-11-23 18:00"),
])
def test_chinese_day_words_and_parts_of_the_day(text, expected):
    assert due(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("下午3点", "2026-11-22 15:00"),
    ("晚上8点", "2026-11-22 20:00"),
    ("中午12点", "2026-11-22 12:00"),
    ("中午1点", "2026-11-22 13:00"),
    ("傍晚6点", "2026-11-22 18:00"),
    ("晚上12点", "2026-11-23 00:00"),
    ("下午3:30", "2026-11-22 15:30"),
    ("下午三点半", "2026-11-22 15:30"),
])
def test_chinese_parts_of_the_day_turn_clock_hours_into_the_right_half_of_the_day(text, expected):
    assert due(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("明天九点", "2026-11-23 09:00"),
    ("明天十点半", "2026-11-23 10:30"),
    ("明天十二点", "2026-11-23 12:00"),
    ("明天两点", "2026-11-23 14:00"),
    ("明天二十三点", "2026-11-23 23:00"),
    ("明天9点15分", "2026-11-23 09:15"),
    ("明天九点零五分", "2026-11-23 09:05"),
    ("明天十点四十五", "2026-11-23 10:45"),
    ("明天九点一刻", "2026-11-23 09:15"),
    ("明天9:45", "2026-11-23 09:45"),
    ("明天9点钟", "2026-11-23 09:00"),
    ("明天 下午 3 点", "2026-11-23 15:00"),
])
def test_chinese_clock_times_in_digits_and_numerals(text, expected):
    assert due(text) == expected


def test_a_chinese_time_already_past_today_is_tomorrow():
    assert due("上午9点") == "2026-11-23 09:00"
    assert due("凌晨1点") == "2026-11-23 01:00"


@pytest.mark.parametrize(("text", "expected"), [
    ("10分钟后", "2026-11-22 10:40"),
    ("十五分钟以后", "2026-11-22 10:45"),
    ("2个小时后", "2026-11-22 12:30"),
    ("两小时后", "2026-11-22 12:30"),
    ("半小时后", "2026-11-22 11:00"),
    ("半个小时后", "2026-11-22 11:00"),
    ("一个半小时后", "2026-11-22 12:00"),
    ("3天后", "2026-11-25 10:30"),
    ("三天之后", "2026-11-25 10:30"),
    ("两周后", "2026-12-06 10:30"),
    ("3天后下午3点", "2026-11-25 15:00"),
])
def test_chinese_relative_offsets_count_from_the_message_time(text, expected):
    assert due(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("周一", "2026-11-23 09:00"),
    ("星期三", "2026-11-25 09:00"),
    ("礼拜五", "2026-11-27 09:00"),
    ("周日", "2026-11-29 09:00"),
    ("星期天晚上8点", "2026-11-22 20:00"),
    ("下周一", "2026-11-23 09:00"),
    ("下周五", "2026-11-27 09:00"),
    ("下个星期日", "2026-11-29 09:00"),
    ("这周五", "2026-11-20 09:00"),
    ("本周六下午3点", "2026-11-21 15:00"),
])
def test_chinese_weekdays_on_a_sunday(text, expected):
    assert due(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("12月1日", "2026-12-01 09:00"),
    ("12月1号下午3点", "2026-12-01 15:00"),
    ("十二月一日", "2026-12-01 09:00"),
    ("1月5日", "2027-01-05 09:00"),
    ("11月22日", "2027-11-22 09:00"),
    ("2027年3月5日", "2027-03-05 09:00"),
    ("下个月5号", "2026-12-05 09:00"),
])
def test_chinese_calendar_dates_without_a_year_are_the_next_such_date(text, expected):
    assert due(text) == expected


@pytest.mark.parametrize("text", ["25点", "明天25点", "2月30日", "2027年2月29日", "早上0点"])
def test_invalid_chinese_times_and_dates_give_nothing(text):
    assert due(text) is None


@pytest.mark.parametrize("text", ["我有点饿", "快一点", "一点点", "第一点是", "一周年快乐", "开会"])
def test_chinese_text_that_only_looks_like_a_time_gives_nothing(text):
    assert due(text) is None


@pytest.mark.parametrize(("text", "expected"), [
    ("in 10 minutes", "2026-11-22 10:40"),
    ("in 2 hours", "2026-11-22 12:30"),
    ("in 3 days", "2026-11-25 10:30"),
    ("in half an hour", "2026-11-22 11:00"),
    ("in an hour and a half", "2026-11-22 12:00"),
    ("in 1.5 hours", "2026-11-22 12:00"),
    ("in twenty mins", "2026-11-22 10:50"),
    ("in a week", "2026-11-29 10:30"),
])
def test_english_relative_offsets_count_from_the_message_time(text, expected):
    assert due(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("tomorrow", "2026-11-23 09:00"),
    ("tomorrow at 9", "2026-11-23 09:00"),
    ("tomorrow at 9am", "2026-11-23 09:00"),
    ("tomorrow at 3", "2026-11-23 15:00"),
    ("Tomorrow Morning", "2026-11-23 09:00"),
    ("tomorrow evening at 7", "2026-11-23 19:00"),
    ("at 5pm", "2026-11-22 17:00"),
    ("at 5:30 p.m.", "2026-11-22 17:30"),
    ("at 17:30", "2026-11-22 17:30"),
    ("tonight", "2026-11-22 20:00"),
    ("tonight at 9", "2026-11-22 21:00"),
    ("this evening", "2026-11-22 20:00"),
    ("noon", "2026-11-22 12:00"),
    ("at midnight", "2026-11-23 00:00"),
    ("the day after tomorrow", "2026-11-24 09:00"),
    ("at 5pm tomorrow", "2026-11-23 17:00"),
    ("3pm friday", "2026-11-27 15:00"),
])
def test_english_days_and_clock_times(text, expected):
    assert due(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("at 9am", "2026-11-23 09:00"),
    ("at 3", "2026-11-22 15:00"),
    ("at 11", "2026-11-22 11:00"),
    ("at 9", "2026-11-22 21:00"),
    ("at 9 o'clock", "2026-11-22 21:00"),
    ("3点", "2026-11-22 15:00"),
    ("9点", "2026-11-22 21:00"),
])
def test_a_bare_hour_is_its_next_occurrence_with_one_to_seven_meaning_the_afternoon(text, expected):
    assert due(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("next friday", "2026-11-27 09:00"),
    ("on friday at 3pm", "2026-11-27 15:00"),
    ("friday", "2026-11-27 09:00"),
    ("this friday", "2026-11-27 09:00"),
    ("Dec 1 at 3pm", "2026-12-01 15:00"),
    ("December 1st, 2027", "2027-12-01 09:00"),
    ("1 December", "2026-12-01 09:00"),
    ("the 5th of January", "2027-01-05 09:00"),
    ("2026-12-01 14:00", "2026-12-01 14:00"),
    ("2026-12-01T14:00", "2026-12-01 14:00"),
])
def test_english_weekdays_and_dates(text, expected):
    assert due(text) == expected


@pytest.mark.parametrize("text", ["12/01", "at 12/01", "Feb 30", "at 13pm", "see you later", "I sat down",
                                  "3 marathons"])
def test_ambiguous_or_invalid_english_gives_nothing(text):
    assert due(text) is None


@pytest.mark.parametrize(("chinese", "english"), [
    ("周五", "friday"), ("周五下午3点", "friday at 3pm"), ("周五早上9点", "friday at 9am"),
    ("下周五", "next friday"), ("明天", "tomorrow"), ("下午3点", "at 3pm"), ("10分钟后", "in 10 minutes"),
])
@pytest.mark.parametrize("now", [SUNDAY, FRIDAY])
def test_chinese_and_english_agree(chinese, english, now):
    assert due(chinese, now) == due(english, now)


def test_the_weekday_of_today_is_today_while_its_time_is_ahead_and_next_week_once_passed():
    assert due("friday at 3pm", FRIDAY) == "2026-11-27 15:00"
    assert due("周五下午3点", FRIDAY) == "2026-11-27 15:00"
    assert due("friday at 9am", FRIDAY) == "2026-12-04 09:00"
    assert due("周五", FRIDAY) == "2026-12-04 09:00"


def test_next_weekday_is_that_day_of_next_monday_to_sunday_week():
    assert due("next friday", FRIDAY) == due("下周五", FRIDAY) == "2026-12-04 09:00"
    wednesday = datetime(2026, 11, 25, 10, 30, tzinfo=ZoneInfo(SHANGHAI))
    assert due("next friday", wednesday) == due("下周五", wednesday) == "2026-12-04 09:00"
    assert due("friday", wednesday) == due("周五", wednesday) == "2026-11-27 09:00"


def test_an_explicit_day_is_kept_even_when_its_time_has_passed():
    assert due("今天早上8点") == "2026-11-22 08:00"


def test_the_calendar_is_the_users_even_when_now_is_given_in_utc():
    late_sunday_utc = datetime(2026, 11, 22, 20, 0, tzinfo=UTC)  # Monday 04:00 in Shanghai
    assert due("明天", late_sunday_utc) == "2026-11-24 09:00"
    assert due("tomorrow", late_sunday_utc, "UTC") == "2026-11-23 09:00"
    assert due("at 5pm", SUNDAY, "UTC") == "2026-11-22 17:00"  # SUNDAY is 02:30 UTC


def test_tomorrow_at_nine_across_the_end_of_daylight_saving_is_nine_on_the_wall_clock():
    saturday = datetime(2026, 10, 31, 10, 0, tzinfo=ZoneInfo(NEW_YORK))
    resolved = resolve_when("tomorrow at 9", saturday, NEW_YORK)
    assert resolved.due.strftime("%Y-%m-%d %H:%M") == "2026-11-01 09:00"
    assert resolved.due.utcoffset() == timedelta(hours=-5)


def test_whole_days_keep_the_wall_clock_but_hours_are_elapsed_time_across_dst():
    saturday = datetime(2026, 10, 31, 10, 0, tzinfo=ZoneInfo(NEW_YORK))
    assert due("in 1 day", saturday, NEW_YORK) == "2026-11-01 10:00"
    assert due("in 24 hours", saturday, NEW_YORK) == "2026-11-01 09:00"


def test_a_wall_time_skipped_by_the_spring_change_moves_forward_by_the_gap():
    saturday = datetime(2026, 3, 7, 10, 0, tzinfo=ZoneInfo(NEW_YORK))
    resolved = resolve_when("tomorrow at 2:30am", saturday, NEW_YORK)
    assert resolved.due.strftime("%H:%M %Z") == "03:30 EDT"


@pytest.mark.parametrize(("text", "matched", "rest"), [
    ("/remind 明天早上9点 开会", "明天早上9点", "开会"),
    ("remind me next Friday at 3pm to call mom", "next Friday at 3pm", "call mom"),
    ("提醒我明天下午3点去取快递", "明天下午3点", "去取快递"),
    ("明天下午3点，提醒我交报告", "明天下午3点", "交报告"),
    ("我明天9点要开会", "明天9点", "我要开会"),
    ("call mom at 5pm please", "at 5pm", "call mom please"),
    ("remind me about the dentist in 2 hours", "in 2 hours", "the dentist"),
    ("10分钟后 关火", "10分钟后", "关火"),
])
def test_the_rest_is_what_to_be_reminded_of(text, matched, rest):
    resolved = resolve_when(text, SUNDAY, SHANGHAI)
    assert (resolved.matched, resolved.rest) == (matched, rest)


def test_the_first_time_expression_wins():
    resolved = resolve_when("in 10 minutes, and again tomorrow", SUNDAY, SHANGHAI)
    assert resolved == ResolvedTime(SUNDAY + timedelta(minutes=10), "in 10 minutes", "and again tomorrow",
                                    elapsed=True, span=(0, 13))


@pytest.mark.parametrize(("value", "expected"), [
    ("2026-12-01T14:00:00+00:00", "2026-12-01 22:00 +0800"),
    ("2026-12-01T14:00:00Z", "2026-12-01 22:00 +0800"),
    ("2026-12-01T14:00", "2026-12-01 14:00 +0800"),
    ("2026-12-01 14:00:00", "2026-12-01 14:00 +0800"),
    ("2026-12-01", "2026-12-01 09:00 +0800"),
    (" 明天下午3点 ", "2026-11-23 15:00 +0800"),
    ("tomorrow at 3pm", "2026-11-23 15:00 +0800"),
])
def test_parse_due_reads_iso_with_and_without_offset_dates_and_words(value, expected):
    assert parse_due(value, SUNDAY, SHANGHAI).strftime("%Y-%m-%d %H:%M %z") == expected


def test_parse_due_reads_a_naive_time_on_the_users_wall_clock_across_dst():
    assert parse_due("2026-11-01T09:00", SUNDAY, NEW_YORK).utcoffset() == timedelta(hours=-5)
    assert parse_due("2026-03-08T02:30", SUNDAY, NEW_YORK).strftime("%H:%M %Z") == "03:30 EDT"


@pytest.mark.parametrize("value", ["", "soon", "2026-02-30", "2026-13-01T10:00", "0001-01-01T00:00+14:00", None, 42])
def test_parse_due_gives_none_for_anything_unparseable(value):
    assert parse_due(value, SUNDAY, SHANGHAI) is None


@pytest.mark.parametrize("tz", ["Mars/Olympus", "", "../etc/passwd", "UTC\x00", None])
def test_an_unknown_time_zone_gives_none_instead_of_raising(tz):
    assert resolve_when("tomorrow", SUNDAY, tz) is None
    assert parse_due("2026-12-01", SUNDAY, tz) is None


def test_a_naive_now_is_taken_as_utc():
    assert due("in 10 minutes", datetime(2026, 11, 22, 2, 30)) == "2026-11-22 10:40"


@pytest.mark.parametrize("text", ["", "\x00" * 50, "🙂" * 5000, "a" * 100_000, "9" * 100_000, "点" * 100_000,
                                  "x" * MAX_SCAN_CHARS + " tomorrow", "in " * 30_000 + "minutes"])
def test_hostile_input_gives_none_quickly(text):
    assert resolve_when(text, SUNDAY, SHANGHAI) is None
    assert parse_due(text, SUNDAY, SHANGHAI) is None
    took = cpu_seconds(lambda: (resolve_when(text, SUNDAY, SHANGHAI), parse_due(text, SUNDAY, SHANGHAI)), 1.0)
    assert took < 1.0, f"{took:.2f} s of CPU"


def test_a_huge_message_with_a_time_at_the_start_still_resolves():
    resolved = resolve_when("明天9点\x00🙂" + "开会" * 50_000, SUNDAY, SHANGHAI)
    assert resolved.due.strftime("%Y-%m-%d %H:%M") == "2026-11-23 09:00"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("0123456789:：点半分后天周月日号年下午晚上明今 atinpmonextday"
                                           "hourminutesfriday,，一二两三十百个\x00🙂")), max_size=60))
def test_any_mix_of_time_like_fragments_never_raises(text):
    resolved = resolve_when(text, SUNDAY, SHANGHAI)
    assert resolved is None or resolved.due.tzinfo == ZoneInfo(SHANGHAI)
    parse_due(text, SUNDAY, SHANGHAI)


def test_a_time_zone_is_checked_in_one_place_and_falls_back_to_the_default():
    from shared.reminders.timeparse import known_zone, zone_or_default
    assert known_zone("Asia/Shanghai") is not None
    assert [known_zone(bad) for bad in ("Mars/Olympus", "", None, 8, "../etc/passwd", "UTC\x00")] == [None] * 6
    assert zone_or_default("Europe/Lisbon", "UTC") == "Europe/Lisbon"
    assert zone_or_default("Nowhere/Else", "Asia/Shanghai") == zone_or_default(None, "Asia/Shanghai") == "Asia/Shanghai"


@pytest.mark.parametrize("text", ["0000-01-01 开会", "9999-12-30 23:59 party", "1969-07-20 moon", "1200年3月4日 开会"])
def test_a_date_outside_the_stored_years_is_out_of_range_not_another_date(text):
    with pytest.raises(TimeOutOfRange) as refused:
        resolve_when(text, SUNDAY, SHANGHAI)
    assert refused.value.matched
    assert refused.value.matched in text


def test_the_last_storable_day_is_kept_in_every_zone_and_one_past_it_is_out_of_range():
    assert due("9998-12-31 10:00 wrap up", tz="Pacific/Kiritimati") == "9998-12-31 10:00"
    assert due("9998-12-31 10:00 wrap up", tz="Etc/GMT+12") == "9998-12-31 10:00"
    assert parse_due("9998-12-31T23:30:00-11:00", SUNDAY, SHANGHAI) is None  # 9999-01-01 in UTC
    assert parse_due("9999-12-31T23:59:59-14:00", SUNDAY, SHANGHAI) is None  # year 10000 in UTC
    assert parse_due("0001-01-01", SUNDAY, SHANGHAI) is None


@pytest.mark.parametrize(("value", "kept"), [
    (datetime(1970, 1, 1, tzinfo=UTC), True), (datetime(1969, 12, 31, 23, 59, tzinfo=UTC), False),
    (datetime(9998, 12, 31, 23, 59, tzinfo=UTC), True), (datetime(9999, 1, 1, tzinfo=UTC), False),
    (datetime(9999, 12, 31, 22, 0, tzinfo=timezone(timedelta(hours=-13))), False),
    (datetime(2030, 5, 1, 8, 0), False), ("2030-05-01", False)])
def test_a_storable_time_is_an_aware_time_from_1970_to_9998_in_utc(value, kept):
    stored = storable_time(value)
    assert (stored is not None) == kept
    if kept:
        assert stored == value
        assert stored.tzinfo == UTC


@pytest.mark.parametrize(("text", "asked"), [
    ("remind me to water the bees", True), ("提醒我开会", True),  # the words, without a time
    ("I have a dentist appointment tomorrow at 3", True), ("周五下午三点面试", True),  # a time, without the words
    ("I keep bees on my balcony.", False), ("我在阳台上养了蜜蜂", False), ("", False),
])
def test_a_message_asks_for_a_reminder_with_the_words_or_by_naming_a_time(text, asked):
    assert asks_for_a_reminder(text, SUNDAY, SHANGHAI) is asked


@pytest.mark.parametrize(("text", "expected", "matched", "rest"), [
    ("yesterday 4:30pm water the ferns", "2026-11-21 16:30", "yesterday 4:30pm", "water the ferns"),
    ("call the vet last night at 11pm", "2026-11-21 23:00", "last night at 11pm", "call the vet"),
    ("last tuesday at 10am send the invoice", "2026-11-10 10:00", "last tuesday at 10am", "send the invoice"),
    ("昨天晚上9点 给奶奶打电话", "2026-11-21 21:00", "昨天晚上9点", "给奶奶打电话"),
    ("昨晚10点半 关窗", "2026-11-21 22:30", "昨晚10点半", "关窗"),
    ("上周三下午2点 交表", "2026-11-11 14:00", "上周三下午2点", "交表"),
])
def test_a_day_gone_by_is_read_as_that_day_weeks_running_monday_to_sunday_so_the_caller_can_refuse_it(
        text, expected, matched, rest):
    resolved = resolve_when(text, SUNDAY, SHANGHAI)
    assert (resolved.due.strftime("%Y-%m-%d %H:%M"), resolved.matched, resolved.rest) == (expected, matched, rest)
    assert resolved.due < SUNDAY


def test_a_day_word_inside_other_words_is_no_past_day():
    assert due("我以前天天跑步，明天早上7点提醒我") == "2026-11-23 07:00"
