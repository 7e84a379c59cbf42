"""Questions, recall questions and the write-path guard: a question never becomes or changes a memory."""

import pytest

from shared.speech.acts import is_question, sentences, states_nothing
from shared.speech.guard import near_same, rejection, said_by_bot
from shared.speech.recall_questions import asks_about_bot, recall_ask


@pytest.mark.parametrize("text", [
    "我叫什么名字？", "我叫什么名字", "我住哪", "你还记得我住哪吗", "我是哪里人", "你是谁", "我有几个孩子",
    "这个多少钱", "你怎么了", "今天会不会下雨", "你吃饭了吗", "他去哪了呢", "What's my name?", "where do I live",
    "Do you remember my dog's name", "How old am I", "Is it raining", "I live in which city, do you remember?",
    "I live in Berlin, right", "Can you help me", "which one do you like best", "你知道我的生日吗",
])
def test_questions_are_recognised_with_or_without_a_question_mark(text):
    assert is_question(text)
    assert states_nothing(text)


@pytest.mark.parametrize("text", [
    "我住在北京", "我什么都吃", "我哪儿都去过", "前几天我去了北京", "好几个朋友来了", "我不怎么喜欢咖啡",
    "When I was young, I lived in Paris", "What I love is pizza", "I turned right at the corner",
    "I live in Berlin",
])
def test_statements_that_merely_contain_question_words_stay_statements(text):
    assert not is_question(text)
    assert not states_nothing(text)


def test_a_rhetorical_you_know_around_a_statement_leaves_it_a_statement():
    assert [s.kind for s in sentences("我搬到上海了，你知道吗？")] == ["statement"]
    assert [s.kind for s in sentences("你知道吗，我搬到上海了")] == ["statement"]


@pytest.mark.parametrize(("text", "kind"), [
    ("如果我住在上海会怎样", "question"), ("假如我是老板", "hypothetical"),
    ("If I were rich I'd travel", "hypothetical"),
    ("I would move to Rome", "hypothetical"), ("帮我写一封信", "request"), ("请给我讲个笑话", "request"),
    ("Please write me a poem", "request"), ("Tell me a joke", "request"), ("你好", "greeting"),
    ("Good morning Mnemo!", "greeting"), ("谢谢你", "thanks"), ("Thanks a lot", "thanks"), ("嗯嗯", "filler"),
])
def test_each_sentence_is_classified(text, kind):
    [sentence] = sentences(text)
    assert sentence.kind == kind


@pytest.mark.parametrize(("text", "keys"), [
    ("我叫什么名字？", [("fact", "name")]),
    ("我是谁", [("fact", "name")]),
    ("What is my name?", [("fact", "name")]),
    ("我住在哪里？", [("fact", "lives_in")]),
    ("你还记得我住哪吗？", [("fact", "lives_in")]),
    ("where do I live?", [("fact", "lives_in")]),
    ("I live in which city, do you remember?", [("fact", "lives_in")]),
    ("我的工作是什么？", [("fact", "job"), ("fact", "works_at")]),
    ("what do I do for a living?", [("fact", "job"), ("fact", "works_at")]),
    ("你还记得我最喜欢什么水果吗？", [("preference", "favourite_fruit")]),
    ("我最喜欢的水果是什么", [("preference", "favourite_fruit")]),
    ("what's my favourite fruit?", [("preference", "favourite_fruit")]),
    ("Do you remember my dog's name?", [("fact", "dog_name")]),
    ("What's my dog called?", [("fact", "dog_name")]),
    ("我的猫叫什么名字", [("fact", "cat_name")]),
    ("我女朋友叫什么", [("person", "girlfriend_name")]),
    ("how old am I?", [("fact", "age")]),
])
def test_a_recall_question_names_the_memory_keys_that_answer_it(text, keys):
    ask = recall_ask(text)
    assert ask is not None
    assert list(ask.keys) == keys


def test_open_recall_questions_ask_for_a_prefix_and_general_ones_for_anything_known():
    assert ("preference", "likes_") in recall_ask("我喜欢什么？").prefixes
    assert ("preference", "likes_") in recall_ask("What do I like?").prefixes
    assert recall_ask("你还记得我吗").about_user
    assert recall_ask("do you remember me?").about_user
    assert "sister" in recall_ask("do you remember what I told you about my sister?").terms
    assert recall_ask("do you still remember and recall my sister?").terms == ("sister",)


@pytest.mark.parametrize("text", ["今天天气怎么样？", "我该怎么办？", "你叫什么名字？",
                                  "What is the capital of France?", "我最喜欢吃火锅", "I live in Berlin"])
def test_other_questions_and_statements_are_not_recall_questions(text):
    assert recall_ask(text) is None


def test_questions_about_the_bot_are_told_apart():
    assert asks_about_bot("你是谁？")
    assert asks_about_bot("what's your name?")
    assert not asks_about_bot("我是谁？")


@pytest.mark.parametrize(("content", "reason"), [
    ("我叫什么名字", "question"), ("I live in which city, do you remember", "question"),
    ("Where do I live", "question"),
    ("User asked where they live", "question"), ("用户问我住在哪里", "question"), ("如果我搬家", "hypothetical"),
    ("帮我写信", "request"), ("你好", "greeting"), ("", "empty"),
])
def test_the_write_guard_refuses_what_is_not_a_stated_fact(content, reason):
    assert rejection(content) == reason


@pytest.mark.parametrize("content", ["我住在北京", "喜欢喝乌龙茶", "Loves oolong tea", "Works in Denver now",
                                     "现在在深圳上班", "Alice loves oolong tea"])
def test_the_write_guard_lets_statements_from_any_provider_through(content):
    assert rejection(content) is None


def test_nothing_from_a_message_that_only_asks_is_written_even_in_the_llms_words():
    assert rejection("用户住在北京", source_text="我住在哪里？") == "source_not_a_statement"
    asked = "Where do I live? Do you remember?"
    assert rejection("The user lives in Paris", source_text=asked) == "source_not_a_statement"
    assert rejection("用户住在北京", source_text="我住在哪里？其实我现在住在北京。") is None


def test_the_bots_own_words_are_refused_but_the_users_confirmation_of_them_is_not():
    bot = ["好的，我记住了：你住在北京。", "说起来，我最喜欢吃火锅——现在还是这样吗？"]
    assert said_by_bot("我最喜欢吃火锅", bot)
    assert rejection("我最喜欢吃火锅", bot_lines=bot) == "bot_words"
    assert not said_by_bot("我住在北京", bot)


@pytest.mark.parametrize(("left", "right", "same"), [
    ("我住在北京", "我现在住在北京了", True), ("我最喜欢吃火锅", "我最喜欢吃火锅啊！", True),
    ("I live in Berlin", "I live in Berlin now.", True), ("我住在北京", "我不住在北京了", False),
    ("I live in Berlin", "I live in Bern", False), ("I'm 25", "I'm 26", False), ("我叫小红", "我叫小明", False),
    ("我最喜欢的水果是芒果", "你最喜欢的水果是芒果", False),
    ("I have a dog named Biscuit", "I have a dog named Biscuit, he's a beagle", False),
])
def test_near_duplicates_are_the_same_memory_but_changes_and_other_persons_are_not(left, right, same):
    assert near_same(left, right) is same


@pytest.mark.parametrize("text", ["'; DROP TABLE memories; --?", "a & b | !c:*", "\x00吗", "🙂❓", "？" * 1000,
                                  "what " * 5000])
def test_hostile_text_is_classified_without_raising(text):
    sentences(text)
    is_question(text)
    recall_ask(text)
    rejection(text)


def test_the_statement_question_and_echo_rules_are_pure():
    """They import no database, platform or LLM code (checked in a fresh interpreter)."""
    import subprocess
    import sys

    modules = ("shared.speech.acts", "shared.speech.statements", "shared.speech.rules", "shared.speech.lexicon",
               "shared.speech.recall_questions", "shared.speech.guard", "shared.conversation.echo",
               "shared.conversation.offline_replies", "shared.conversation.offline_view",
               "shared.conversation.offline_compose")
    probe = (f"import sys; import {', '.join(modules)}; "
             "print(sorted({m.split('.')[0] if not m.startswith('shared.') else '.'.join(m.split('.')[:2]) "
             "for m in sys.modules if m.startswith(('sqlalchemy', 'psycopg', 'celery', 'discord', 'telegram', "
             "'shared.db', 'shared.repositories', 'shared.llm', 'bot', 'worker'))}))")
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    assert found == "[]"


@pytest.mark.parametrize("question", ["你记得我什么？", "你都记得关于我的哪些事", "关于我你都知道些什么？",
                                      "你还记得我哪些事情呢", "What else do you know about me?",
                                      "what have you learned about me so far?",
                                      "How much do you remember about me?"])
def test_asking_what_is_known_of_oneself_in_other_words_is_a_question_about_the_user(question):
    assert recall_ask(question).about_user


@pytest.mark.parametrize("question", ["你记得我什么时候生日吗？", "你知道我什么地方人吗？",
                                      "what do you know about dogs?"])
def test_a_question_about_one_thing_is_not_a_question_about_everything(question):
    ask = recall_ask(question)
    assert ask is None or not ask.about_user
