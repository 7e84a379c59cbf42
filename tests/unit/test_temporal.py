"""The time a message asks about, read against the user's wall clock and looking back."""

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from shared.search.temporal import TELLING_LAG, asked_span

NOW = datetime(2023, 11, 22, 10, 30, tzinfo=UTC)  # a Wednesday


@pytest.mark.parametrize(("text", "start", "end"), [
    ("What did Melanie paint on October 13, 2023?", date(2023, 10, 13), date(2023, 10, 14)),
    ("what did I find on 1 February, 2023", date(2023, 2, 1), date(2023, 2, 2)),
    ("the trip on 2023-05-04", date(2023, 5, 4), date(2023, 5, 5)),
    ("你还记得我10月13日说的吗", date(2023, 10, 13), date(2023, 10, 14)),
    ("what happened on December 24", date(2022, 12, 24), date(2022, 12, 25)),  # not yet this year: the last one
    ("What setback did she face in October 2023?", date(2023, 10, 1), date(2023, 11, 1)),
    ("2023年5月我在干嘛", date(2023, 5, 1), date(2023, 6, 1)),
    ("When did she go camping in June?", date(2023, 6, 1), date(2023, 7, 1)),
    ("我在12月做了什么", date(2022, 12, 1), date(2023, 1, 1)),
    ("我去年夏天去了哪里", date(2022, 6, 1), date(2022, 9, 1)),
    ("where did I go last summer", date(2023, 6, 1), date(2023, 9, 1)),
    ("a pride parade during the summer", date(2023, 6, 1), date(2023, 9, 1)),
    ("what did I do last week", date(2023, 11, 13), date(2023, 11, 20)),
    ("上周末我们去了哪", date(2023, 11, 18), date(2023, 11, 20)),
    ("上个月的事", date(2023, 10, 1), date(2023, 11, 1)),
    ("what did I eat yesterday", date(2023, 11, 21), date(2023, 11, 22)),
    ("前天", date(2023, 11, 20), date(2023, 11, 21)),
    ("what did I do last year", date(2022, 1, 1), date(2023, 1, 1)),
    ("去年的生日", date(2022, 1, 1), date(2023, 1, 1)),
    ("three days ago", date(2023, 11, 19), date(2023, 11, 20)),
    ("两周前我说过", date(2023, 11, 5), date(2023, 11, 12)),
    ("How many times has she gone to the beach in 2023?", date(2023, 1, 1), date(2024, 1, 1)),
])
def test_a_time_cue_becomes_the_span_it_names(text, start, end):
    span = asked_span(text, NOW)
    assert (span.start.date(), span.end.date()) == (start, end)


@pytest.mark.parametrize("text", ["What may John do next?", "我的猫叫什么", "call me at 2024", "in 2099 we will see",
                                  "I have 3 cats", "", "x" * 100_000])
def test_no_time_cue_no_span(text):
    assert asked_span(text, NOW) is None


def test_a_memory_told_a_few_days_after_the_span_still_counts():
    span = asked_span("what did I do last weekend", NOW)
    assert span.holds(span.end + TELLING_LAG - timedelta(seconds=1))
    assert not span.holds(span.end + TELLING_LAG)
    assert not span.holds(span.start - timedelta(seconds=1))


def test_the_span_is_the_users_local_calendar():
    late_evening = datetime(2023, 11, 22, 23, 0, tzinfo=ZoneInfo("Asia/Shanghai"))
    span = asked_span("昨天", late_evening)
    assert span.start == datetime(2023, 11, 21, tzinfo=ZoneInfo("Asia/Shanghai"))
