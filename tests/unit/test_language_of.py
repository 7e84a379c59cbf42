"""``language_of(text, hint)``: the one rule for the language a person writes in, used by every front-end, the
offline responder, the notices, reminders and summaries; and no other rule left in the code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from shared.text import Language, language_of

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("text", "language"), [
    ("我住在杭州", Language.ZH), ("I live in Leeds", Language.EN),
    ("我住在 Leeds", Language.ZH),  # three characters, one word
    ("I love 北京 duck", Language.EN),  # two characters, three words
    ("我 love green tea", Language.EN), ("好 ok", Language.ZH),  # a tie is Chinese
    ("我搬到了 New York", Language.ZH), ("Meet me at 三里屯 tomorrow at noon", Language.EN),
    ("㐀", Language.ZH), ("豈", Language.ZH),  # extension A, compatibility ideographs
])
def test_chinese_characters_against_latin_words_decide(text, language):
    assert language_of(text) is language
    assert language_of(text, "zh-CN") is language and language_of(text, "en") is language  # the text wins


@pytest.mark.parametrize("text", ["", "   ", "12345", "🙂🙂", "#42", "?!", "\u200b", "こんにちは"])
def test_a_text_of_neither_language_follows_the_hint_and_english_without_one(text):
    assert language_of(text) is Language.EN
    assert language_of(text, "zh-hans") is Language.ZH and language_of(text, "zh") is Language.ZH
    assert language_of(text, "en-US") is Language.EN and language_of(text, "pt-PT") is Language.EN


def test_a_language_is_a_locale_every_text_table_reads():
    assert Language.ZH == "zh" and Language.ZH.chinese and not Language.EN.chinese


def test_a_long_text_is_read_in_linear_time():
    assert language_of("我" * 200_000 + " word" * 100_000) is Language.ZH


def test_no_other_rule_for_the_language_is_left_in_the_front_ends_or_the_services():
    """The modules that once had a rule of their own (a Han regex to pick the reply's language) call the one."""
    han = re.compile(r"\\u4e00|\\p\{Han\}|\bCJK\b")
    for path in ("bot/discord_bot.py", "bot/console_commands.py", "bot/console.py", "bot/telegram_render.py",
                 "shared/conversation/offline_view.py", "shared/reminders/service.py", "shared/lifecycle/episodes.py"):
        source = (ROOT / path).read_text()
        assert not han.search(source), path
