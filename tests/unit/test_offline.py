"""The offline responder: statements echoed in the second person, recall questions answered, honest small talk,
reminders, and the one-time hint on connecting a model — no LLM."""

import re
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from shared.conversation.offline import (
    OFFLINE_HINT_KEY,
    MemoryNote,
    OfflineResponder,
    OfflineView,
    extract_reminders,
    lookup_keys,
)
from shared.emotion import STRATEGY_TABLE

NOW = datetime(2026, 11, 22, 10, 30, tzinfo=ZoneInfo("Asia/Shanghai"))
XIAOHONG = (MemoryNote("我叫小红", "fact", "name"), MemoryNote("我住在北京", "fact", "lives_in"),
            MemoryNote("我最喜欢的水果是芒果", "preference", "favourite_fruit"))
ANA = (MemoryNote("My name is Ana", "fact", "name"),
       MemoryNote("I have a dog named Biscuit, he's a beagle", "fact", "dog_name"),
       MemoryNote("I live in Paris", "fact", "lives_in"))


def respond(text: str, *, known=(), recalled=(), strategy="neutral", hint_shown=False, bot_lines=(), turn=0,
            paused=False, operator_console=True):
    view = OfflineView(text=text, local_now=NOW, timezone="Asia/Shanghai", strategy=STRATEGY_TABLE[strategy],
                       memories=tuple(n.content for n in recalled), user_name="tester", recalled=tuple(recalled),
                       known=tuple(known), bot_lines=tuple(bot_lines), hint_shown=hint_shown, turn_number=turn,
                       paused=paused, operator_console=operator_console)
    return OfflineResponder().respond(view)


def stored(output) -> list[str]:
    return [entry.content for entry in output.memory_update]


def test_a_statement_is_stored_and_echoed_in_the_second_person():
    output = respond("我最喜欢的水果是芒果")
    assert output.response == "好的，我记住了：你最喜欢的水果是芒果。"
    assert stored(output) == ["我最喜欢的水果是芒果"]
    output = respond("I have a dog named Biscuit, he's a beagle.")
    assert output.response == "Got it — you have a dog named Biscuit, he's a beagle."
    assert "我最喜欢" not in respond("我最喜欢的水果是芒果").response


def test_while_remembering_is_paused_a_statement_is_not_claimed_as_remembered():
    output = respond("我住在北京", paused=True)
    assert "记住了" not in output.response
    assert "暂停" in output.response
    assert "你住在北京" in output.response
    assert "paused" in respond("I live in Berlin", paused=True).response


def test_a_name_is_acknowledged_by_name():
    assert respond("你好，我叫阿强").response == "好的，以后我就叫你阿强。"
    assert respond("Hi, my name is Ana.").response == "Nice to meet you, Ana — I'll remember your name."


@pytest.mark.parametrize(("question", "answer"), [
    ("你还记得我最喜欢什么水果吗？", "你最喜欢的水果是芒果。"),
    ("我叫什么名字？", "你叫小红。"),
    ("我住在哪里？", "你住在北京。"),
    ("你还记得我住哪吗？", "你住在北京。"),
])
def test_recall_questions_are_answered_from_memory_in_the_second_person_and_not_stored(question, answer):
    output = respond(question, known=XIAOHONG)
    assert output.response == answer
    assert output.memory_update == ()


@pytest.mark.parametrize(("question", "answer"), [
    ("Do you remember my dog's name?", "You have a dog named Biscuit, he's a beagle."),
    ("What is my name?", "Your name is Ana."),
    ("where do I live?", "You live in Paris."),
    ("I live in which city, do you remember?", "You live in Paris."),
])
def test_english_recall_questions_are_answered_too(question, answer):
    output = respond(question, known=ANA)
    assert output.response == answer
    assert output.memory_update == ()


@pytest.mark.parametrize(("question", "memory", "answer"), [
    ("What do I keep on my balcony?", "My name is Lin and I keep bees on my balcony",
     "Your name is Lin and you keep bees on your balcony."),
    ("What did I tell you about my balcony?", "I keep bees on my balcony", "You keep bees on your balcony."),
    ("我在阳台上养什么？", "我在阳台上养了蜜蜂", "你在阳台上养了蜜蜂。"),
])
def test_a_question_about_the_speaker_in_words_no_slot_knows_is_answered_by_a_memory_sharing_them(
        question, memory, answer):
    output = respond(question, recalled=(MemoryNote(memory, "fact", None, 1.0),))
    assert output.response == answer
    assert output.memory_update == ()


def test_without_a_memory_sharing_its_words_such_a_question_is_one_it_cannot_answer_offline():
    unrelated = (MemoryNote("I keep bees on my balcony", "fact", None, 1.0),)
    assert "offline mode" in respond("What do I need for the party tomorrow?", recalled=unrelated).response
    assert "offline mode" in respond("What should I keep on my balcony?", recalled=unrelated).response  # advice
    hotpot = (MemoryNote("我喜欢吃火锅", "preference", "likes_火锅"),)
    assert "离线模式" in respond("我们去哪吃饭？", recalled=hotpot).response


def test_a_memory_in_the_other_language_is_quoted_as_said():
    assert respond("where do I live?", known=XIAOHONG).response == 'You told me: "我住在北京".'


def test_without_a_matching_memory_it_says_it_does_not_know_and_invites_the_user_to_tell_it():
    assert respond("我住在哪里？").response == "我还不知道你住在哪里——你还没告诉过我。告诉我的话，我会记住。"
    assert respond("Do you remember my dog's name?").response.startswith("I don't know that yet")
    unrelated = (MemoryNote("我最喜欢吃火锅", "preference", "likes_火锅", 1.0),)
    assert "火锅" not in respond("你还记得我住哪吗？", recalled=unrelated).response


def test_an_open_recall_question_lists_what_matches():
    likes = (MemoryNote("我喜欢吃火锅", "preference", "likes_火锅"),
             MemoryNote("我喜欢喝乌龙茶", "preference", "likes_乌龙茶"))
    assert respond("我喜欢什么？", known=likes).response == "你喜欢吃火锅；你喜欢喝乌龙茶。"


def test_a_correction_supersedes_under_the_same_key_and_says_what_it_replaced():
    output = respond("不对，我现在住在上海", known=XIAOHONG)
    assert output.response == "好的，我更新了：你现在住在上海（之前记的是：你住在北京）。"
    assert [(e.predicate, e.content) for e in output.memory_update] == [("lives_in", "我现在住在上海")]
    output = respond("actually I moved to Berlin", known=ANA)
    assert output.response == "Updated — you moved to Berlin (before, I had: you live in Paris)."
    assert respond("我叫小明", known=XIAOHONG).response == "好的，改过来了：以后叫你小明（之前记的是小红）。"


def test_saying_a_known_fact_again_is_acknowledged_and_not_stored_again():
    output = respond("我住在北京", known=XIAOHONG)
    assert output.response == "我记得呢：你住在北京。"
    assert output.memory_update == ()
    recalled = (MemoryNote("我最喜欢吃火锅", "preference", "likes_火锅", 1.0),)
    assert respond("我最喜欢吃火锅！", recalled=recalled).memory_update == ()


def test_sadness_gets_empathy_without_quoting_memories_or_probing():
    recalled = (MemoryNote("我最喜欢吃火锅", "preference", "likes_火锅", 1.0),)
    for text in ("我今天心情很差…", "今天好累", "我好难过"):
        output = respond(text, recalled=recalled, strategy="sad")
        assert "火锅" not in output.response
        assert not output.response.endswith(("？", "?"))
        assert output.emotion["category"] == "negative"
        assert OFFLINE_HINT_KEY not in output.context_variables
    assert "I'm here" in respond("I'm stressed").response or "breath" in respond("I'm stressed").response


def test_small_talk_is_short_varied_and_never_repeats_the_last_reply():
    replies = {respond("嗯", turn=turn).response for turn in range(6)}
    assert len(replies) > 1
    last = respond("嗯", turn=3).response
    assert respond("嗯", turn=3, bot_lines=(last,)).response != last
    assert respond("你好", known=XIAOHONG).response.count("小红") == 1
    assert respond("谢谢！").response in ("不客气！", "不用谢，随时找我。", "能帮上忙就好。")
    assert respond("thanks!").response in ("You're welcome!", "Any time.", "Glad I could help.")


def test_a_follow_up_question_is_asked_only_where_the_strategy_allows_one():
    for turn in range(4):
        assert not respond("我今天升职了，太开心了！", turn=turn, strategy="neutral").response.endswith("？")
    assert respond("我今天升职了，太开心了！", strategy="happy").response.endswith("？")


def test_a_question_it_cannot_answer_says_so_and_hints_at_a_model_once():
    output = respond("今天天气怎么样？")
    assert "离线模式" in output.response
    assert "LLM_BASE_URL" in output.response
    assert "README.md#llm-servers" in output.response
    assert output.context_variables == {OFFLINE_HINT_KEY: "shown"}
    again = respond("What is the capital of France?", hint_shown=True)
    assert "offline mode" in again.response
    assert "LLM_BASE_URL" not in again.response
    assert again.context_variables == {}
    assert "LLM_BASE_URL" not in respond("我住在北京").response


@pytest.mark.parametrize("text", ["明天上海会下雨吗？", "Can you write me a haiku about autumn?", "帮我翻译这句话",
                                  "Who won the 1998 World Cup?"])
def test_nobody_but_the_operator_at_the_console_is_told_how_to_connect_a_model(text):
    told = respond(text, operator_console=False)
    assert "LLM_" not in told.response
    assert ".md" not in told.response
    assert told.context_variables == {}
    assert "LLM_BASE_URL" in respond(text).response


def test_questions_about_the_bot_are_answered_with_its_name():
    assert respond("你是谁？").response.startswith("我是Mnemo")
    assert respond("what's your name?").response.startswith("I'm Mnemo")


def test_reminders_are_confirmed_with_the_resolved_local_time():
    output = respond("明天早上9点提醒我开会")
    assert output.response == "好的，明天 09:00（Asia/Shanghai）提醒你：开会。"
    assert output.todos[0].due == "2026-11-23T09:00:00+08:00"
    assert respond("remind me in 10 minutes to stretch").response == (
        "Okay — I'll remind you today at 10:40 (Asia/Shanghai): stretch.")
    assert "什么时候" in respond("提醒我开会").response
    assert respond("提醒我开会").todos == ()
    assert not respond("remind me to stretch").response.endswith("?")


def test_reminders_resolve_against_the_message_time_in_the_users_zone():
    [todo] = extract_reminders("提醒我明天早上9点去面试", NOW, "Asia/Shanghai")
    assert todo.content == "去面试"
    assert todo.due == "2026-11-23T09:00:00+08:00"
    [todo] = extract_reminders("remind me in 10 minutes to stretch", NOW, "Asia/Shanghai")
    assert todo.content == "stretch"
    assert todo.due == "2026-11-22T10:40:00+08:00"
    assert extract_reminders("明天早上9点开会", NOW, "Asia/Shanghai") == []


def test_a_to_do_with_a_deadline_is_a_deadline_reminder_with_or_without_remind_me():
    [stated] = extract_reminders("周三下午两点前把押金退给房东", NOW, "Asia/Shanghai")
    assert (stated.content, stated.due, stated.deadline) == ("把押金退给房东", "2026-11-25T14:00:00+08:00", True)
    [asked] = extract_reminders("remind me the visa form is due Friday 11am", NOW, "Asia/Shanghai")
    assert (asked.content, asked.due, asked.deadline) == ("the visa form", "2026-11-27T11:00:00+08:00", True)
    [plain] = extract_reminders("remind me Friday 11am to post the visa form", NOW, "Asia/Shanghai")
    assert plain.deadline is False
    assert respond("周三下午两点前把押金退给房东").response.startswith(
        "好的，把押金退给房东11月25日（周三） 14:00（Asia/Shanghai）截止，我会提前提醒你。")


@pytest.mark.parametrize("message, content", [
    ("could you remind me to water the basil in 20 minutes?", "water the basil"),
    ("Can you please remind me in an hour to call the plumber?", "call the plumber"),
    ("能不能明天下午4点提醒我取快递？", "取快递"),
    ("可以提醒我明天早上8点吃药吗？", "吃药"),
    ("明天早上8点提醒我倒垃圾？", "倒垃圾"),
    ("remind me in 20 minutes: did I lock the door?", "did I lock the door?"),
    ("明天早上8点提醒我：护照带了吗？", "护照带了吗？"),
])
def test_a_reminder_asked_for_as_a_question_keeps_no_question_mark_unless_it_is_one(message, content):
    [todo] = extract_reminders(message, NOW, "Asia/Shanghai")
    assert todo.content == content


def test_the_keys_to_look_up_are_those_stated_asked_and_the_name():
    keys, prefixes = lookup_keys("我住在哪里？")
    assert ("fact", "lives_in") in keys
    assert ("fact", "name") in keys
    assert prefixes == []
    keys, _ = lookup_keys("不对，我现在住在上海")
    assert ("fact", "lives_in") in keys
    assert lookup_keys("我喜欢什么？")[1][0] == ("preference", "likes_")


@pytest.mark.parametrize("text", ["'; DROP TABLE memories; --", "a & b | !c:*", "\x00", "🙂" * 300, "？" * 500,
                                  "我" * 9000, "I live in " + "x" * 9000, "你好 hello 我叫 Ana, I live in 北京"])
def test_any_input_gets_a_non_empty_reply(text):
    output = respond(text, known=XIAOHONG)
    assert output.response.strip()
    assert output.emotion["primary"]


@pytest.mark.parametrize("text", ["thanks so much, talk to you later", "Okay, that's it for today. Thank you!",
                                  "谢谢啦，先这样吧", "好的，没别的事了，拜拜", "谢谢啦，就这些",
                                  "多谢，暂时就这些了", "thanks, nothing else for now",
                                  "Thank you, that's about it"])
def test_a_goodbye_gets_a_goodbye_and_a_thanks_in_it_is_answered_too(text):
    output = respond(text)
    chinese = bool(re.search(r"[\u4e00-\u9fff]", text))
    goodbye = ("聊", "见") if chinese else ("talk soon", "Take care", "see you")
    assert any(word in output.response for word in goodbye), output.response
    assert "great news" not in output.response
    assert "很棒" not in output.response
    assert not stored(output)
    thanked = "thank" in text.lower() or "谢" in text
    thanks_words = ("welcome", "Any time", "Glad", "不客气", "不用谢", "能帮上忙")
    assert any(word in output.response for word in thanks_words) == thanked


def test_a_goodbye_without_thanks_is_not_thanked_and_a_statement_after_one_is_still_heard():
    assert respond("gotta go, bye").response in ("Okay — talk soon!", "Take care — I'm here whenever you want to chat.",
                                                 "Bye for now — see you soon!")
    assert "Lisbon" in respond("bye for now, I live in Lisbon by the way").response
