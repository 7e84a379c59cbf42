"""The offline responder: rule-based statements, reminders and templated replies, no LLM."""

from datetime import datetime
from zoneinfo import ZoneInfo

from shared.emotion import STRATEGY_TABLE
from shared.offline import OfflineResponder, OfflineView, extract_reminders, extract_statements

NOW = datetime(2026, 11, 22, 10, 30, tzinfo=ZoneInfo("Asia/Shanghai"))


def keys(text: str) -> list[tuple[str, str]]:
    return [(entry.type, entry.predicate) for entry in extract_statements(text)]


def test_plain_statements_in_chinese_and_english_become_memories():
    assert keys("我叫阿明") == [("fact", "name")]
    assert keys("我住在北京。我喜欢喝乌龙茶") == [("fact", "lives_in"), ("preference", "likes_乌龙茶")]
    assert keys("My name is Ana. I live in Berlin.") == [("fact", "name"), ("fact", "lives_in")]
    assert keys("I don't like horror movies") == [("preference", "dislikes_horror")]
    assert keys("I really love green tea") == [("preference", "likes_green")]


def test_a_correction_keeps_the_same_key_without_the_correction_words():
    [entry] = extract_statements("不对，我现在住在上海")
    assert (entry.predicate, entry.content) == ("lives_in", "我现在住在上海")
    [entry] = extract_statements("Actually, I moved to Lisbon")
    assert (entry.predicate, entry.content) == ("lives_in", "I moved to Lisbon")


def test_questions_and_small_talk_store_nothing():
    assert extract_statements("你好呀") == []
    assert extract_statements("nobody knows what I like?") == []


def test_reminders_resolve_against_the_message_time_in_the_users_zone():
    [todo] = extract_reminders("提醒我明天早上9点去面试", NOW, "Asia/Shanghai")
    assert todo.content == "去面试" and todo.due == "2026-11-23T09:00:00+08:00"
    [todo] = extract_reminders("remind me in 10 minutes to stretch", NOW, "Asia/Shanghai")
    assert todo.content == "stretch" and todo.due == "2026-11-22T10:40:00+08:00"
    assert extract_reminders("明天早上9点开会", NOW, "Asia/Shanghai") == []


def test_the_reply_uses_what_was_recalled_and_follows_the_language():
    view = OfflineView(text="最近怎么样", local_now=NOW, timezone="Asia/Shanghai", strategy=STRATEGY_TABLE["neutral"],
                       memories=("喜欢喝乌龙茶",), user_name="阿明")
    output = OfflineResponder().respond(view)
    assert "喜欢喝乌龙茶" in output.response and output.emotion["primary"]
    english = OfflineResponder().respond(OfflineView(text="I feel so sad today", local_now=NOW, timezone="UTC",
                                                     strategy=STRATEGY_TABLE["sad"], memories=(), user_name=None))
    assert english.emotion["primary"] == "sad" and "here" in english.response
