"""With no model, a question about what was said is answered from the best matching round, quoted with its
day, in the user's language; "I don't remember that" when nothing matches. What the rules did not turn into
a memory is still answered from what was said."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared.conversation.service import ConversationService
from tests.integration.test_conversation import CONFIG, START, Clock, say

NEXT_WEEK = timedelta(days=7)


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def offline(uow_factory, clock):
    return ConversationService(uow_factory, CONFIG, chat_model=None, clock=clock)


def talk(offline, clock, text: str, *, later: timedelta = timedelta(minutes=1), user: str = "u1") -> str:
    clock.now += later
    return say(offline, text, clock=clock, user=user).text


def test_a_question_about_what_the_user_said_is_answered_from_that_round_with_its_day(offline, clock):
    talk(offline, clock, "Last weekend I went to the science museum to see the mammoth exhibition.")
    answer = talk(offline, clock, "What exhibition did I tell you I went to see?", later=NEXT_WEEK)
    assert "mammoth exhibition" in answer
    assert "you told me" in answer
    assert f"On {(START + timedelta(minutes=1, hours=8)):%B} " in answer  # the user's local day (Shanghai)


def test_a_chinese_question_about_the_past_is_answered_in_chinese(offline, clock):
    talk(offline, clock, "五一假期我去苏州博物馆看了吴门画派的展览。")
    answer = talk(offline, clock, "我上次跟你说我去苏州看了什么展览？", later=NEXT_WEEK)
    assert "吴门画派" in answer
    assert "你跟我说过" in answer


def test_nothing_matching_is_said_honestly(offline, clock):
    talk(offline, clock, "I like quiet mornings.")
    assert "I don't remember that" in talk(offline, clock, "What book did you recommend to me last time?",
                                           later=NEXT_WEEK)
    assert "不记得" in talk(offline, clock, "你上次推荐给我的那部电影叫什么？", later=NEXT_WEEK)


def test_a_date_cue_brings_that_days_round(offline, clock):
    talk(offline, clock, "Baked a lemon drizzle cake for the first time today.")
    day = (clock.now + timedelta(hours=8)).strftime("%B %-d")
    answer = talk(offline, clock, f"What did we talk about on {day}?", later=timedelta(days=20))
    assert "lemon drizzle cake" in answer


def test_what_the_rules_did_not_store_is_still_answered_from_what_was_said(offline, clock):
    talk(offline, clock, "I'm flying to Tokyo on March 14 for a conference.")
    answer = talk(offline, clock, "When am I flying to Tokyo?", later=NEXT_WEEK)
    assert "March 14" in answer


def test_another_users_words_are_never_quoted(offline, clock):
    talk(offline, clock, "My secret recipe uses smoked paprika.", user="u2")
    answer = talk(offline, clock, "What did I tell you about smoked paprika?", later=NEXT_WEEK)
    assert "secret recipe" not in answer


def test_a_general_word_finds_what_it_covers(offline, clock):
    talk(offline, clock, "We have a golden retriever called Biscuit.")
    assert "golden retriever" in talk(offline, clock, "Do I have any pets?", later=NEXT_WEEK)
    talk(offline, clock, "我家有两只布偶猫。", user="u3")
    assert "布偶猫" in talk(offline, clock, "我养了什么宠物？", later=NEXT_WEEK, user="u3")


def test_what_is_known_says_when_there_is_more_than_it_lists(offline, clock):
    for line in ("My name is Dana.", "I live in Lisbon.", "I work as a nurse.", "I love jazz.", "I have a cat.",
                 "I'm allergic to peanuts.", "My favourite colour is green."):
        talk(offline, clock, line)
    answer = talk(offline, clock, "What do you remember about me?", later=NEXT_WEEK)
    assert "more: /memories shows them all" in answer


def test_a_question_about_reminders_lists_the_pending_ones(offline, clock):
    assert "no pending reminders" in talk(offline, clock, "What reminders do I have?")
    talk(offline, clock, "Remind me tomorrow at 9 to water the ferns")
    talk(offline, clock, "提醒我后天下午3点去取快递", user="u4")
    answer = talk(offline, clock, "What did I ask you to remind me of?")
    assert "water the ferns" in answer
    assert "tomorrow at 09:00" in answer
    assert "取快递" in talk(offline, clock, "我有什么提醒？", user="u4")


def test_a_date_cue_brings_the_episode_of_that_day(uow_factory, clock):
    from datetime import datetime

    from shared.db.memory_models import Episode
    from shared.recall.retrieval import recall_for_turn

    with uow_factory() as uow:
        user = uow.users.identify("telegram", "ep1").user_id
        day = datetime(2026, 11, 3, 10, tzinfo=START.tzinfo)
        uow.episodes.add(Episode(user_id=user, summary="[2026-11-03 10:00] talked about the harbour walk",
                                 started_at=day, ended_at=day + timedelta(hours=1)))
        uow.episodes.add(Episode(user_id=user, summary="[2026-11-20 10:00] talked about chess openings",
                                 started_at=day + timedelta(days=17), ended_at=day + timedelta(days=17, hours=1)))
        recall = recall_for_turn(uow, user, "What did we talk about on November 3?", now=START, limit=5)
        assert [episode.summary for episode in recall.episodes] == ["[2026-11-03 10:00] talked about the harbour walk"]
        assert recall.episodes_matched


def test_what_was_said_a_moment_ago_in_the_same_sitting_is_answerable_too(offline, clock):
    talk(offline, clock, "We have a golden retriever called Biscuit.")
    talk(offline, clock, "I'm flying to Tokyo on March 14 for a conference.")
    assert "golden retriever" in talk(offline, clock, "Do I have any pets?")
    assert "March 14" in talk(offline, clock, "When am I flying to Tokyo?")
    talk(offline, clock, "5月2日我去博物馆看了恐龙化石展。", user="u5")
    assert "恐龙化石展" in talk(offline, clock, "我上次跟你说我去博物馆看了什么展览？", user="u5")


def test_why_shows_the_rounds_the_prompt_showed(offline, clock):
    from bot.console import render_why

    talk(offline, clock, "We planted three apple trees by the fence.")
    clock.now += NEXT_WEEK
    reply = say(offline, "What did I tell you about the apple trees?", clock=clock)
    assert "you: We planted three apple trees by the fence." in render_why(reply)


def test_an_earlier_asking_of_the_same_question_is_not_its_answer(offline, clock):
    talk(offline, clock, "我上次跟你说我去博物馆看了什么展览？")
    talk(offline, clock, "五一我去博物馆看了青铜器展。", later=timedelta(days=1))
    answer = talk(offline, clock, "我上次跟你说我去博物馆看了什么展览？", later=NEXT_WEEK)
    assert "青铜器展" in answer
    assert "看了什么展览" not in answer
