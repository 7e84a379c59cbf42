"""What a message asks, in words, to be forgotten (shared/speech/forget_requests.py)."""

from __future__ import annotations

import pytest

from shared.speech.forget_requests import forget_request, named_words


@pytest.mark.parametrize(("text", "named"), [
    ("forget that I have a cat", "I have a cat"),
    ("Please forget that I live in Berlin.", "I live in Berlin"),
    ("can you forget about my ex, please?", "my ex"),
    ("forget what I told you about the party", "the party"),
    ("忘掉我说过的猫", "猫"),
    ("忘掉我住在北京这件事", "我住在北京"),
    ("把我养猫的事忘掉吧", "我养猫"),
])
def test_a_request_to_forget_names_what_it_asks_to_forget(text, named):
    assert forget_request(text) == named


@pytest.mark.parametrize("text", ["I forgot my keys", "forget it", "忘记吧", "What did I tell you?", "我有一只猫",
                                  "don't forget the milk", "Forget about work, let's go hiking", "忘了工作吧"])
def test_anything_else_asks_to_forget_nothing(text):
    assert forget_request(text) is None


def test_the_speaker_is_left_out_of_the_words_looked_for():
    assert named_words("I have a cat") == "have a cat"
    assert named_words("我住在北京") == "住在北京"
