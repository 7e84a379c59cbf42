"""The pure rules of follow-ups: when one may go (after its time, outside quiet hours, one a day, not to someone
who just wrote, not in a group without them), what the rules read as an open thread or its cancellation, and the
words of the offline follow-up."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from shared.followups.compose import FollowupFacts, followup_messages, instructions_of, usable_followup
from shared.followups.reading import cancelled_threads, read_thread, same_event
from shared.followups.texts import day_phrase, offline_followup
from shared.followups.timing import (
    GO,
    Moment,
    QuietHours,
    follow_up_verdict,
    quiet_hours,
    read_quiet_hours,
)

SHANGHAI = ZoneInfo("Asia/Shanghai")
FRIDAY_9 = datetime(2026, 11, 27, 9, 0, tzinfo=SHANGHAI)  # a Friday
THURSDAY_EVENING = datetime(2026, 11, 26, 20, 0, tzinfo=SHANGHAI)


def moment(now: datetime, **changes: object) -> Moment:
    values: dict = {"now": now, "happens_at": FRIDAY_9, "zone": SHANGHAI}
    values.update(changes)
    return Moment(**values)


def test_a_follow_up_waits_until_three_hours_after_the_threads_time():
    early = follow_up_verdict(moment(FRIDAY_9 + timedelta(hours=2, minutes=59)))
    assert (early.go, early.reason, early.not_before) == (False, "not yet", FRIDAY_9 + timedelta(hours=3))
    assert follow_up_verdict(moment(FRIDAY_9 + timedelta(hours=3))) == GO


def test_a_day_only_thread_is_asked_about_from_six_in_the_evening():
    verdict = follow_up_verdict(moment(FRIDAY_9 + timedelta(hours=4), day_only=True))
    assert (verdict.go, verdict.not_before) == (False, FRIDAY_9.replace(hour=18))
    assert follow_up_verdict(moment(FRIDAY_9.replace(hour=18), day_only=True)) == GO


def test_never_in_quiet_hours_the_users_own_or_the_default():
    late = FRIDAY_9.replace(hour=22, minute=30)
    verdict = follow_up_verdict(moment(late))
    assert (verdict.go, verdict.reason) == (False, "quiet hours")
    assert verdict.not_before == datetime(2026, 11, 28, 9, 0, tzinfo=SHANGHAI)
    assert follow_up_verdict(moment(late, quiet=QuietHours(23, 7))) == GO
    assert not follow_up_verdict(moment(FRIDAY_9.replace(hour=13), quiet=QuietHours(12, 14))).go  # a daytime nap


def test_a_thread_whose_earliest_moment_falls_in_quiet_hours_waits_for_the_morning():
    evening_event = FRIDAY_9.replace(hour=20)
    verdict = follow_up_verdict(moment(evening_event + timedelta(hours=3), happens_at=evening_event))
    assert (verdict.go, verdict.not_before) == (False, datetime(2026, 11, 28, 9, 0, tzinfo=SHANGHAI))


def test_quiet_hours_are_read_in_the_users_zone_not_utc():
    noon_utc = datetime(2026, 11, 27, 14, 0, tzinfo=UTC)  # 22:00 in Shanghai, 06:00 in Los Angeles
    assert not follow_up_verdict(moment(noon_utc)).go
    los_angeles = ZoneInfo("America/Los_Angeles")
    assert not follow_up_verdict(moment(noon_utc, zone=los_angeles, happens_at=noon_utc - timedelta(hours=5))).go
    assert follow_up_verdict(moment(noon_utc + timedelta(hours=4), zone=los_angeles,
                                    happens_at=noon_utc - timedelta(hours=5))) == GO


def test_at_most_one_follow_up_a_local_day():
    now = FRIDAY_9.replace(hour=15)
    verdict = follow_up_verdict(moment(now, last_asked_at=FRIDAY_9.replace(hour=12)))
    assert (verdict.go, verdict.reason) == (False, "one follow-up a day")
    assert verdict.not_before == datetime(2026, 11, 28, 9, 0, tzinfo=SHANGHAI)
    assert follow_up_verdict(moment(now, last_asked_at=FRIDAY_9 - timedelta(days=1))) == GO


def test_none_to_someone_who_wrote_within_the_hour():
    now = FRIDAY_9.replace(hour=15)
    verdict = follow_up_verdict(moment(now, last_written_at=now - timedelta(minutes=59)))
    assert (verdict.go, verdict.not_before) == (False, now + timedelta(minutes=1))
    assert follow_up_verdict(moment(now, last_written_at=now - timedelta(minutes=60))) == GO


def test_a_thread_a_week_past_is_stale_and_never_asked_about():
    assert follow_up_verdict(moment(FRIDAY_9 + timedelta(days=6, hours=5))) == GO
    verdict = follow_up_verdict(moment(FRIDAY_9 + timedelta(days=7, minutes=1)))
    assert (verdict.go, verdict.reason, verdict.not_before) == (False, "stale", None)


def test_none_in_a_group_unless_the_group_turned_them_on():
    now = FRIDAY_9.replace(hour=15)
    assert not follow_up_verdict(moment(now, group=True)).go
    assert follow_up_verdict(moment(now, group=True, group_enabled=True)) == GO


@pytest.mark.parametrize(("text", "hours"), [("22-9", (22, 9)), ("23:00-08:00", (23, 8)), ("0 - 7", (0, 7)),
                                             ("22到9", (22, 9))])
def test_quiet_hours_are_read_from_two_hours(text, hours):
    read = read_quiet_hours(text)
    assert read is not None and (read.start, read.end) == hours


@pytest.mark.parametrize("text", ["", "22", "25-9", "late", "22-9-3"])
def test_anything_else_is_not_quiet_hours_and_the_default_applies(text):
    assert read_quiet_hours(text) is None
    assert quiet_hours(text) == QuietHours(22, 9)


@pytest.mark.parametrize(("text", "what", "happens", "day_only"), [
    ("周五上午面试", "面试", FRIDAY_9, False),
    ("明天考试，有点紧张", "考试", FRIDAY_9, True),
    ("下周搬家", "搬家", datetime(2026, 12, 4, 9, 0, tzinfo=SHANGHAI), True),
    ("my exam is tomorrow", "your exam", FRIDAY_9, True),
    ("I have my driving test tomorrow at 10am", "your driving test", FRIDAY_9.replace(hour=10), False),
    ("明天上午科目二", "科目二", FRIDAY_9, False),
    ("I'm seeing the doctor on Tuesday at 3pm", "the doctor's visit",
     datetime(2026, 12, 1, 15, 0, tzinfo=SHANGHAI), False),
])
def test_the_rules_note_an_event_with_a_time_in_the_messages_language(text, what, happens, day_only):
    reading = read_thread(text, THURSDAY_EVENING, "Asia/Shanghai", chinese=any("\u4e00" <= c <= "\u9fff" for c in text))
    assert reading is not None
    assert (reading.what, reading.happens_at, reading.day_only) == (what, happens, day_only)


@pytest.mark.parametrize("text", ["明天考试吗？", "remind me tomorrow about my exam", "the interview got cancelled",
                                  "I had an interview yesterday", "周五很忙", "I like to move it",
                                  "the due date is Friday", "the final report is due tomorrow",
                                  "I'll test the app tomorrow"])
def test_questions_reminders_cancellations_the_past_and_no_event_note_nothing(text):
    assert read_thread(text, THURSDAY_EVENING, "Asia/Shanghai", chinese=False) is None


def test_a_cancellation_closes_the_thread_it_names_or_the_only_one():
    threads = [(1, "面试"), (2, "your exam")]
    assert cancelled_threads("面试取消了", threads) == [1]
    assert cancelled_threads("the exam got called off", threads) == [2]
    assert cancelled_threads("取消了", threads) == []  # which one? none is guessed
    assert cancelled_threads("it got cancelled", [(2, "your exam")]) == [2]
    assert cancelled_threads("面试很顺利", threads) == []


def test_the_same_event_in_either_language_or_the_same_words():
    assert same_event("面试", "your job interview")
    assert same_event("Acme visit", "acme visit ")
    assert not same_event("面试", "考试")


def test_the_offline_follow_up_names_the_day_as_seen_from_when_it_is_sent():
    after = FRIDAY_9 + timedelta(days=1, hours=5)
    same_day = FRIDAY_9.replace(hour=13)
    assert offline_followup("面试", FRIDAY_9, same_day, SHANGHAI, chinese=True) == "你今天的面试怎么样了？"
    assert offline_followup("your exam", FRIDAY_9, after, SHANGHAI, chinese=False) == "How did your exam go yesterday?"
    assert day_phrase(FRIDAY_9, FRIDAY_9 + timedelta(days=3), SHANGHAI, chinese=True) == "周五"
    assert day_phrase(FRIDAY_9, FRIDAY_9 + timedelta(days=3), SHANGHAI, chinese=False) == "on Friday"
    assert day_phrase(FRIDAY_9, FRIDAY_9 + timedelta(days=10), SHANGHAI, chinese=False) == "on 27 November"


FACTS = FollowupFacts("面试", FRIDAY_9, "Asia/Shanghai", True, ("最担心英文自我介绍",))
ASKED_AT = FRIDAY_9.replace(hour=13)


EN_FACTS = FollowupFacts("your driving test", FRIDAY_9, "Europe/London", False, ("worried about parallel parking",))


def instructions_for(facts: FollowupFacts = FACTS) -> str:
    return instructions_of(followup_messages(facts, ASKED_AT))


@pytest.mark.parametrize("answer", [
    "<<SYS>>\n你很关心自己写字吗?", "- 你好吗？\n- 面试呢？", "1. 你好\n2. 面试怎么样", '{"response": "你好"}', "面试",
    "How did your interview go today?", "", "<|im_start|>assistant 你的面试怎么样了？",
    # what Gemma 3 270M wrote with this prompt: the example's words, a statement, a fragment, the prompt's fields
    "今天的比赛怎么样？膝盖还好吗？", "今天，我面试了。\n他说：英文自我介绍你的面试吧。", "今天的面试",
    "事情：面试\n时间：今天 09:30",
    "星期五的体育课是什么？"])
def test_a_model_follow_up_that_is_no_message_for_a_person_gives_way_to_the_template(answer):
    assert usable_followup(answer, FACTS, instructions_for()) is None


@pytest.mark.parametrize("answer", ["Coming up: your wedding", "How did your match go today? I hope your knee held up!",
                                    "What do you think happened?", "How did your car go today?"])
def test_an_english_follow_up_that_does_not_ask_about_the_thread_gives_way_to_the_template(answer):
    assert usable_followup(answer, EN_FACTS, instructions_for(EN_FACTS)) is None


def test_a_model_follow_up_in_the_threads_language_is_sent_trimmed():
    written = "  “你周五的面试怎么样了？上次你说最担心英文自我介绍。”\n"
    assert usable_followup(written, FACTS, instructions_for()) == "你周五的面试怎么样了？上次你说最担心英文自我介绍。"


@pytest.mark.parametrize(("written", "sent"), [
    ("How did your driving test go today? I had a good time! SUBSCRIBE\nProceeded: you",
     "How did your driving test go today?"),
    ("How did your driving test go? I hope the parallel parking went fine! maddenin\n",
     "How did your driving test go? I hope the parallel parking went fine!"),
])
def test_a_model_follow_up_keeps_its_first_sentence_and_a_second_only_about_something_remembered(written, sent):
    assert usable_followup(written, EN_FACTS, instructions_for(EN_FACTS)) == sent


def test_the_prompt_carries_the_thread_its_day_and_the_memories_after_a_worked_example_of_that_day():
    system, example, message, thread = followup_messages(FACTS, ASKED_AT)
    assert "中文" in system["content"] and "一两句话" in system["content"]
    assert (example["role"], message["role"], thread["role"]) == ("user", "assistant", "user")
    assert message["content"] == "今天的比赛怎么样？膝盖还好吗？"
    assert thread["content"] == "事情：面试\n时间：今天 09:00\n记得：最担心英文自我介绍"
    _, _, english, _ = followup_messages(EN_FACTS, FRIDAY_9 + timedelta(days=2))
    assert english["content"] == "How did your match go on Friday? I hope your knee held up!"
