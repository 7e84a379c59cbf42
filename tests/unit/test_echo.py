"""Echoes turn the person around (我 → 你, I → you) and leave quotes, code, links and names alone."""

import pytest

from shared.conversation.echo import lower_first, second_person


@pytest.mark.parametrize(("said", "echoed"), [
    ("我最喜欢的水果是芒果", "你最喜欢的水果是芒果"),
    ("我的猫叫咪咪", "你的猫叫咪咪"),
    ("我们住在北京", "你们住在北京"),
    ("我喜欢你", "你喜欢我"),
    ("I live in Berlin", "You live in Berlin"),
    ("My dog is called Biscuit", "Your dog is called Biscuit"),
    ("I'm a nurse and my dog is Biscuit", "You're a nurse and your dog is Biscuit"),
    ("The red one is mine", "The red one is yours"),
    ("I was born in Paris", "You were born in Paris"),
    ("I am 25 years old", "You are 25 years old"),
    ("i live in berlin", "you live in berlin"),
    ("I think you are great", "You think I am great"),
    ("You helped me a lot", "I helped you a lot"),
    ("I’m from Lisbon", "You're from Lisbon"),
])
def test_the_person_is_turned_in_both_languages(said, echoed):
    assert second_person(said) == echoed


def test_quoted_text_code_links_and_mentions_are_left_exactly_as_written():
    assert second_person('She said "I love my job" and I agreed') == 'She said "I love my job" and you agreed'
    assert second_person("我的猫叫“我的宝贝”") == "你的猫叫“我的宝贝”"
    assert second_person("I run `my_script --me` from https://me.example/my and mail me@my.org") == (
        "You run `my_script --me` from https://me.example/my and mail me@my.org")
    assert second_person("I follow @mine on #my-channel") == "You follow @mine on #my-channel"


def test_names_and_words_that_only_contain_a_pronoun_are_not_mangled():
    assert second_person("My friend Ian Myers lives in Mime") == "Your friend Ian Myers lives in Mime"
    assert second_person("自我介绍：我叫小红") == "自我介绍：你叫小红"


def test_mixed_language_text_is_turned_in_each_language():
    assert second_person("我住在 New York, my favourite city") == "你住在 New York, your favourite city"


def test_an_echo_can_continue_a_sentence():
    assert lower_first("Your dog is Biscuit") == "your dog is Biscuit"
    assert lower_first("Biscuit is a beagle") == "Biscuit is a beagle"


@pytest.mark.parametrize("text", ["", "\x00", "🙂" * 100, "'" * 50, "`" * 51, "我" * 10000])
def test_hostile_text_is_echoed_without_raising(text):
    assert isinstance(second_person(text), str)
