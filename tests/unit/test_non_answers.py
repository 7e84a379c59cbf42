"""A model's reply is shown only when it is language for the message: a number, a timestamp, a bare yes or no or
one word where the message needs more is a non-answer (the offline responder answers instead)."""

import time

import pytest

from shared.conversation.prompt import static_system
from shared.speech.non_answers import non_answer

# What Gemma 3 270M (Q4_K_M on llama-cpp-python 0.3.36, Mnemo's turn prompt, json_object with the schema) answered
# to ordinary messages on 2026-11-26 (scripts in tests/real_llm; the issue's own examples follow).
REAL_NON_ANSWERS = [
    ("0.0.0.0", "Hi! My name is Lin and I live in Lisbon.", "only a number"),
    ("r", "我很喜欢喝茉莉花茶。", "no words"),
    (":[{", "今天下雨了，我没带伞。", "no words"),
    ("},", "Do you like cats?", "no words"),
    (">(a)\n-", "我有几只猫？", "no words"),
    ("1", "周末我想去爬山。", "only a number"),
    ("251640872", "How are you today?", "only a number"),
    ("},{", "I adopted a kitten yesterday.", "no words"),
    ("0", "我明天要去面试，有点紧张。", "only a number"),
    ("https://www.instagram.com/p/Bj23X16_g9M", "What's my name?", "only a link"),
    ("http://www.reddit.com/r/MOMO////", "Can you remind me to call Mum at 5?", "only a link"),
    ("http://www.qandc.com/cgi-bin/comments/268374", "今天天气真好！", "only a link"),
    ("I cooked dinner for my parents tonight", "I cooked dinner for my parents tonight.", "the message repeated"),
    ("100% true", "你觉得我应该学钢琴还是吉他？", "a bare yes or no"),
    ("false", "thanks!", "a bare yes or no"),
    ("0", "I lost my keys again...", "only a number"),
    ("user_reply", "周末我想去爬山。", "a field name"),
    ("0", "How are you today?", "only a number"),
    ("50913a2b4c1e0b70f68d6df892ef7ab3", "周末我想去爬山。", "only a code"),
    ("a/c2571649e38bf30f38a3d80b48ef837", "我很喜欢喝茉莉花茶。", "only a code"),
    ("ࡤࡱ;", "Hi! My name is Lin and I live in Lisbon.", "one bare word"),
    ("100", "How are you today?", "only a number"),
]
NON_ANSWERS = [
    *REAL_NON_ANSWERS,
    ("0", "remind me in 2 minutes to check the kettle", "only a number"),  # Gemma 3 270M, on the real server
    ("5", "10分钟后提醒我关火", "only a number"),
    (":1234567890", "Hi, I'm Sam and I live in Denver.", "only a number"),  # the real server, through Telegram
    ("your_reply_to_me: mochi@example.com", "Mochi again, on the sofa.", "a field name"),  # the real server
    ('"memory_update": nothing to store', "我今天去爬山了", "a field name"),
    ("(2) 3-4", "我今天去爬山了", "only a number"),
    ("1456280", "Hi! My name is Lin and I live in Lisbon.", "only a number"),
    ("703165", "我很喜欢喝茉莉花茶。", "only a number"),
    ("2026-11-26 03:47:59", "Can you tell me a bit about yourself", "only a date or time"),
    ("No", "I finally finished my thesis after four years!", "a bare yes or no"),
    ("1", "我今天跟朋友去爬山了", "only a number"),
    ("yes", "我最近工作压力很大，晚上睡不好。", "a bare yes or no"),
    ("48,213.5", "My sister is visiting next week", "only a number"),
    ("#2", "I adopted a kitten today", "only a number"),
    ("2027-01-03T18:22:05+08:00", "明天要去面试了，有点紧张", "only a date or time"),
    ("2026年12月1日", "今天天气真好", "only a date or time"),
    ("8点半", "我周末想去看展览", "only a date or time"),
    ("07:15 PM", "I cooked dinner for my parents", "only a date or time"),
    ("Yes!", "What's my dog's name?", "a bare yes or no"),
    ("不是", "你觉得我应该学什么乐器？", "a bare yes or no"),
    ("OK", "Where do I live?", "a bare reaction"),
    ("好的", "我的猫叫什么名字？", "a bare reaction"),
    ("Lin", "Hi! My name is Lin and I live in Lisbon.", "one bare word"),
    ("Banana", "I had a rough day at work today", "one bare word"),
    ("杭州", "我周末去了西湖，人好多", "one bare word"),
    ("Wow", "How old is my brother?", "a bare reaction"),
    ("👍", "What should I cook tonight?", "a bare reaction"),
    ("0.75", "I baked bread this morning", "only a number"),
    ("¥40", "今天的晚饭很好吃", "only a number"),
    ("", "hello", "no words"),
    ("...", "I lost my keys again", "no words"),
    ("?!", "好累啊", "no words"),
    ("7", "How are you today?", "only a number"),
]

ANSWERS = [
    ("7", "pick one from 1 to 10"),
    ("42", "猜一个1到100的数"),
    # yes or no to a question that asks for one
    ("Yes", "Do you remember my cat's name?"),
    ("No.", "Is it going to rain tomorrow?"),
    ("Yeah!", "You like jazz too?"),
    ("是的", "你记得我住哪吗？"),
    ("对", "你是不是也喜欢喝茶"),
    ("没有", "你有没有看过这部电影"),
    ("没有", "你吃饭了没？"),
    ("yes", "That was a great film, right?"),
    # a number, a date or a time to a question or request that asks for one
    ("3", "How many cats do I have?"),
    ("两只", "我有几只猫？"),
    ("12", "我女儿今年多大了？"),
    ("4", "what's 2+2"),
    ("7", "Pick a number from 1 to 10"),
    ("8", "Rate my outfit from 1 to 10"),
    ("08:30", "明天几点提醒我？"),
    ("2026年11月26日", "今天几号？"),
    ("2019", "When did I move to Berlin?"),
    ("3:45 pm", "What time is my dentist appointment?"),
    # one word where one word is enough
    ("Lisbon.", "Where do I live?"),
    ("Biscuit!", "What's my dog's name?"),
    ("咪咪", "我的猫叫什么名字？"),
    ("Tea", "Tea or coffee?"),
    ("Hello!", "hi"),
    ("你好！", "你好"),
    ("Anytime!", "thanks!"),
    ("Haha", "lol"),
    ("Sure!", "Remind me to call Mum at 5"),
    ("好的", "提醒我明天早上8点开会"),
    ("OK", "ok"),
    ("Congratulations!", "I got the job today!"),
    ("恭喜！", "我考上研究生了"),
    ("👍", "I finally fixed my bike"),
    ("Noted!", "I love green tea"),
    ("Lovely.", "My sister is visiting next week"),
    ("好的", "我养了一只猫，叫咪咪"),
    ("嗯嗯", "我今天去跑步了"),
    # language
    ("That sounds lovely! How long have you lived there?", "I live in Lisbon"),
    ("太好了！", "我考上了"),
    ("我也是", "我喜欢猫"),
    ("No, not yet. Tell me about it?", "Have you heard of Lisbon?"),
    ("It's 2026-11-26 today.", "What's the date?"),
    ("3 cats and a dog", "I have pets"),
    ("1 🙂\n\n2 🙂🙂", "tell me a long story"),
    ("A12B34C56", "What's my order number?"),
    ("Sure, it's 3pm on the 2nd floor.", "Where is the meeting?"),
    ("Good morning!", "good morning"),
    ("I also cooked dinner for my parents tonight!", "I cooked dinner for my parents tonight."),
    ("Sorry to hear that. Do you want to talk about it?", "My grandmother passed away last night."),
]


@pytest.mark.parametrize(("reply", "message", "reason"), NON_ANSWERS)
def test_a_reply_that_is_not_language_for_the_message_is_a_non_answer(reply, message, reason):
    assert non_answer(reply, message) == reason


@pytest.mark.parametrize(("reply", "message"), ANSWERS)
def test_a_short_reply_that_answers_what_was_asked_is_language(reply, message):
    assert non_answer(reply, message) is None


def test_a_sentence_of_the_prompts_own_instructions_copied_back_is_a_non_answer():
    instructions = static_system("Mnemo", "a warm friend")
    copied = "The user did not write it and cannot see it."  # Gemma 3 270M, to "你还记得我住哪吗？"
    assert non_answer(copied, "你还记得我住哪吗？", instructions) == "a copy of its instructions"
    assert non_answer(copied, "你还记得我住哪吗？") is None  # without the instructions it is a sentence
    assert non_answer("You are Mnemo, a warm friend.", "Who are you?", instructions) == "a copy of its instructions"
    assert non_answer("I remember you said that!", "What did I say?", instructions) is None
    assert non_answer("Hello there!", "hi", "Say hello there! to greet.") is None  # too short to be a copy


def test_a_link_answers_a_message_that_asks_for_one():
    assert non_answer("https://example.org/recipes", "What's the website of that recipe?") is None
    assert non_answer("lin@example.org", "What's my e-mail address?") is None
    assert non_answer("See https://example.org for the recipe.", "How do I make bread?") is None


def test_the_same_short_reply_is_an_answer_to_one_message_and_a_non_answer_to_another():
    assert non_answer("yes", "Do you like cats?") is None
    assert non_answer("yes", "I like cats.") == "a bare yes or no"
    assert non_answer("42", "你多少岁？") is None
    assert non_answer("42", "我今天很开心") == "only a number"


@pytest.mark.parametrize("reply", ["1" + "." * 100_000 + "x", "1" + "., " * 50_000 + "%x", "2026-11-26 " * 9_000 + "x",
                                   "7" * 100_000, "是" * 100_000])
def test_a_long_reply_of_figures_and_separators_is_read_in_linear_time(reply):
    started = time.process_time()
    non_answer(reply, "I went for a walk by the river today")
    assert time.process_time() - started < 0.5
