"""A memory's key reads in the reader's language, whichever language made it (shared/speech/keys.py)."""

from __future__ import annotations

import re

import pytest

from shared.memory.writes import normalise_key
from shared.speech.keys import key_text, key_texts
from shared.speech.statements import statement_keys

LATIN = re.compile(r"[A-Za-z]")


def key_of(sentence: str) -> str:
    [(_type, predicate)] = statement_keys(sentence)
    return normalise_key(predicate)


@pytest.mark.parametrize(("sentence", "english", "chinese"), [
    ("我特别喜欢吃烤鸭", "likes · 烤鸭", "喜欢：烤鸭"),
    ("I really enjoy salsa dancing", "likes · salsa dancing", "喜欢：salsa dancing"),
    ("我对芒果过敏", "allergic to · 芒果", "过敏：芒果"),
    ("我养了一只仓鼠", "has · hamster", "拥有：仓鼠"),
    ("my favourite season is autumn", "favourite · season", "最喜欢的季节"),
    ("我女儿叫朵朵", "daughter · name", "女儿的名字"),
    ("I live in Valparaíso", "lives in", "住在"),
    ("我的座右铭是慢慢来", "motto", "座右铭"),
])
def test_a_key_the_statement_rules_make_reads_as_its_relation_and_topic_in_either_language(sentence, english,
                                                                                            chinese):
    assert key_texts(key_of(sentence)) == {"en": english, "zh": chinese}


@pytest.mark.parametrize("sentence", ["我家的兔子叫团团", "我最喜欢的花是茉莉", "我在杭州上班", "我的血型是O型",
                                      "我有一个哥哥", "我今年二十八岁", "我是一名护士"])
def test_a_key_made_from_chinese_reads_to_a_chinese_reader_without_english_words(sentence):
    assert not LATIN.search(key_text(key_of(sentence), "zh"))


def test_a_key_of_no_known_relation_reads_with_spaces_and_no_key_reads_as_nothing():
    assert key_texts("pet_peeve") == {"en": "pet peeve", "zh": "pet peeve"}
    assert key_texts(None) is None
    assert key_texts("") is None
    assert key_text(None, "zh") is None
