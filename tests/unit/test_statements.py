"""Statements about the speaker, read by rules: which become memories, under which key, with what text."""

import pytest

from shared.conversation.offline import extract_statements
from shared.speech.statements import read_statements


def keys(text: str) -> list[tuple[str, str]]:
    return [(entry.type, entry.predicate) for entry in extract_statements(text)]


def contents(text: str) -> list[str]:
    return [entry.content for entry in extract_statements(text)]


@pytest.mark.parametrize(("text", "expected"), [
    ("我叫小红。", [("fact", "name")]),
    ("我的名字是阿强", [("fact", "name")]),
    ("叫我小美就好", [("fact", "name")]),
    ("My name is Ana.", [("fact", "name")]),
    ("Please call me Ana", [("fact", "name")]),
    ("Hi, I'm Sam", [("fact", "name")]),
    ("我住在北京。", [("fact", "lives_in")]),
    ("我家在上海", [("fact", "lives_in")]),
    ("I live in Berlin", [("fact", "lives_in")]),
    ("I moved to Lisbon", [("fact", "lives_in")]),
    ("我是北京人", [("fact", "from")]),
    ("I'm originally from Brazil", [("fact", "from")]),
    ("我是一名程序员", [("fact", "job")]),
    ("我的工作是设计师", [("fact", "job")]),
    ("I work as a nurse at a hospital.", [("fact", "job")]),
    ("I'm a software engineer at Google", [("fact", "job")]),
    ("我在腾讯工作", [("fact", "works_at")]),
    ("I work at Google", [("fact", "works_at")]),
    ("我在北京大学读书", [("fact", "studies_at")]),
    ("我最喜欢的水果是芒果", [("preference", "favourite_fruit")]),
    ("My favourite fruit is mango!", [("preference", "favourite_fruit")]),
    ("my favorite color is blue", [("preference", "favourite_colour")]),
    ("我最喜欢吃火锅", [("preference", "likes_火锅")]),
    ("我喜欢喝乌龙茶", [("preference", "likes_乌龙茶")]),
    ("我周末喜欢去爬山", [("preference", "likes_爬山")]),
    ("我下班后喜欢打游戏", [("preference", "likes_游戏")]),
    ("我每天早上喜欢喝咖啡", [("preference", "likes_咖啡")]),
    ("I keep bees on my balcony.", [("fact", "does_keep_bee")]),
    ("I speak French", [("fact", "does_speak_french")]),
    ("I volunteer at the animal shelter on weekends", [("fact", "does_volunteer_animal")]),
    ("我在阳台上养了蜜蜂。", [("fact", "does_蜜蜂")]),
    ("我会弹钢琴", [("fact", "does_钢琴")]),
    ("我收集邮票", [("fact", "does_收集_邮票")]),
    ("I really love green tea", [("preference", "likes_green_tea")]),
    ("I'm a big fan of jazz", [("preference", "likes_jazz")]),
    ("I have a dog named Biscuit, he's a beagle.", [("fact", "dog_name")]),
    ("My dog is called Biscuit.", [("fact", "dog_name")]),
    ("my dog's name is Biscuit", [("fact", "dog_name")]),
    ("我养了一只猫，叫咪咪。", [("fact", "cat_name")]),
    ("我的猫叫咪咪", [("fact", "cat_name")]),
    ("我女朋友叫小美", [("person", "girlfriend_name")]),
    ("My wife's name is Anna", [("person", "wife_name")]),
    ("我有两个孩子", [("person", "has_child")]),
    ("I have two kids", [("person", "has_child")]),
    ("我今年25岁", [("fact", "age")]),
    ("I'm 25 years old", [("fact", "age")]),
    ("我的生日是3月5日", [("fact", "birthday")]),
    ("我对花生过敏", [("fact", "allergic_to_花生")]),
    ("I'm allergic to peanuts", [("fact", "allergic_to_peanut")]),
    ("I'm vegan", [("preference", "diet")]),
])
def test_common_phrasings_of_both_languages_become_memories_under_a_stable_key(text, expected):
    assert keys(text) == expected


def test_a_pet_and_its_name_share_one_key_across_languages():
    assert keys("我养了一只狗叫旺财") == keys("I have a dog named Max") == [("fact", "dog_name")]
    assert keys("我最喜欢的水果是芒果") == keys("my favourite fruit is mango")


def test_a_habit_given_up_shares_its_key_so_it_supersedes_the_habit():
    assert keys("I play the guitar") == keys("I don't play the guitar anymore") == [("fact", "does_play_guitar")]
    assert keys("我弹钢琴") == keys("我不再弹钢琴了") == [("fact", "does_钢琴")]


def test_likes_dislikes_and_changes_of_taste_share_the_topic_key_so_one_supersedes_the_other():
    assert keys("我喜欢香菜") == keys("我讨厌香菜") == keys("我不再喜欢香菜了") == [("preference", "likes_香菜")]
    assert keys("I love horror movies") == keys("I don't like horror movies anymore")


@pytest.mark.parametrize("text", [
    "我叫什么名字？", "我叫什么名字", "我住在哪里？", "我住哪", "我的工作是什么？", "你还记得我最喜欢什么水果吗？",
    "Do you remember my dog's name?", "What's my name?", "where do I live", "I live in which city, do you remember?",
    "I live in Berlin, right?", "我住在北京吗", "如果我住在上海会怎样", "If I lived in Paris I'd be happy",
    "I would love to live in Rome", "帮我记一下要买牛奶", "Can you tell me where I live?", "你好", "hello there",
    "谢谢！", "thanks a lot", "嗯嗯", "ok",
])
def test_questions_hypotheticals_requests_greetings_and_thanks_are_never_statements(text):
    assert extract_statements(text) == []


def test_greetings_fillers_and_correction_words_are_not_kept_in_the_stored_text():
    assert contents("你好，我叫阿强") == ["我叫阿强"]
    assert contents("Hey Mnemo, I'm Sam and I work as a teacher") == ["I'm Sam", "I work as a teacher"]
    [statement] = read_statements("不对，我现在住在上海")
    assert statement.content == "我现在住在上海"
    assert statement.correction
    [statement] = read_statements("Actually, I moved to Berlin")
    assert statement.content == "I moved to Berlin"
    assert statement.correction


def test_several_statements_in_one_sentence_each_become_a_memory_with_their_own_words():
    assert contents("我住在北京，我喜欢吃火锅") == ["我住在北京", "我喜欢吃火锅"]
    assert contents("I'm originally from Brazil, but I live in Lisbon now") == [
        "I'm originally from Brazil", "I live in Lisbon now"]
    assert contents("My name is Ana. I live in Berlin.") == ["My name is Ana", "I live in Berlin"]


def test_statements_joined_by_and_about_the_speaker_are_each_kept_but_a_joined_object_stays_whole():
    assert contents("I live in Faro and I have a parrot called Kiwi") == [
        "I live in Faro", "I have a parrot called Kiwi"]
    assert keys("my name is Rui and I'm from Braga") == [("fact", "name"), ("fact", "from")]
    assert keys("I work as a baker but my brother is a pilot") == [("fact", "job")]
    assert contents("I like bread and butter") == ["I like bread and butter"]


def test_a_name_with_accented_letters_is_a_name():
    assert [(entry.predicate, entry.value) for entry in read_statements("Hi, I'm Joël and I live in Évora")] == [
        ("name", "Joël"), ("lives_in", "Évora")]


def test_remember_this_wrappers_keep_the_statement_inside():
    assert contents("记住：我不吃香菜") == ["我不吃香菜"]
    assert contents("Remember that I'm allergic to peanuts.") == ["I'm allergic to peanuts"]


def test_quoted_speech_and_other_peoples_facts_are_not_the_speakers():
    assert extract_statements("她说“我住在北京”") == []
    assert extract_statements("My friend said 'I live in Paris'") == []
    assert extract_statements("我妈妈住在上海") == []
    assert keys("我的猫叫“咪咪”") == [("fact", "cat_name")]  # a quoted name is still a name


@pytest.mark.parametrize("text", [
    "I'm a bit tired", "I love you", "我喜欢你", "I love your turtles so much", "I love how art lets us feel",
    "我很喜欢这个颜色", "我叫了外卖", "我住院了", "I have a question", "我有一个问题", "call me later",
    "I've got a gaming tournament next month", "I'm Canadian", "When I was young, I lived in Paris.",
    "I keep forgetting things", "I keep thinking about her", "I play it safe", "I cook up excuses",
])
def test_look_alike_sentences_that_are_not_facts_about_the_speaker_are_not_stored(text):
    assert extract_statements(text) == []


def test_the_bots_own_words_and_recalled_memories_repeated_back_are_not_stored_again():
    assert extract_statements("我最喜欢吃火锅", bot_lines=["说起来，我最喜欢吃火锅——现在还是这样吗？"]) == []
    assert extract_statements("好的，我记住了：我住在北京。") == []
    assert extract_statements("我最喜欢吃火锅！", recalled=["我最喜欢吃火锅"]) == []
    [entry] = extract_statements("我最喜欢吃火锅", recalled=["我住在北京"])
    assert entry.predicate == "likes_火锅"


def test_emoji_are_dropped_from_the_stored_text_and_mixed_language_objects_are_kept():
    assert contents("我叫小红😊") == ["我叫小红"]
    assert contents("我住在 New York") == ["我住在 New York"]
    assert contents("I live in 北京") == ["I live in 北京"]


@pytest.mark.parametrize("text", [
    "'; DROP TABLE memories; --", "a & b | !c:* <-> (d", "\x00\x00我住在\x00", "🙂" * 500, "？？？！！！",
    "我" * 5000, "I live in " + "x" * 10000, "\ud800 lone surrogate", "", "   ",
])
def test_hostile_input_gives_no_memory_or_a_bounded_one_and_never_raises(text):
    entries = extract_statements(text)
    assert all(len(entry.content) <= 200 for entry in entries)


def test_a_very_long_message_is_read_in_bounded_time():
    from tests.cpu_time import cpu_seconds

    took = cpu_seconds(lambda: extract_statements("我住在北京，" * 20000 + "I live in Berlin. " * 5000), 2.0)
    assert took < 2.0, f"{took:.2f} s of CPU"
