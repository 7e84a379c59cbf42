"""A reply's warnings: one line of words a code, in English and Chinese, naming no setting, and every code made
somewhere by the conversation service (a code no one makes is a word no one reads)."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest

import shared.conversation
from shared.conversation.warning_texts import (
    PROBLEMS,
    WARNING_TEXTS,
    TurnWarning,
    WarningCode,
    warning_text,
)
from shared.llm.turn_answer import PROBLEM_TEXTS
from shared.settings import Settings

CONVERSATION = Path(shared.conversation.__file__).parent
SETTING_NAMES = sorted(name.upper() for name in Settings.model_fields)
_HAN = re.compile(r"[\u4e00-\u9fff]")
_ENGLISH_WORD = re.compile(r"[A-Za-z]{3,}")


def fields(template: str) -> set[str]:
    return {field for _literal, field, _spec, _conversion in string.Formatter().parse(template) if field}


def test_every_code_has_english_and_chinese_with_the_same_placeholders():
    """But one: why the model's answer was unusable is a phrase for the operator, left out of the Chinese."""
    assert set(WARNING_TEXTS) == set(WarningCode)
    for code, (english, chinese) in WARNING_TEXTS.items():
        assert fields(english) - fields(chinese) == ({"reason"} if code is WarningCode.MODEL_NON_ANSWER else set())
        assert fields(chinese) <= fields(english), code
        assert _HAN.search(chinese), code
        assert not _HAN.search(english), code


@pytest.mark.parametrize("code", list(WarningCode))
def test_no_warning_names_a_setting_or_a_file_in_either_language(code):
    for words in WARNING_TEXTS[code]:
        assert not any(name in words for name in SETTING_NAMES), words
        assert not re.search(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|README|\.md\b", words), words


def test_the_chinese_of_a_warning_has_no_english_words_but_the_users_own():
    params = {"count": 12, "what": "买花", "when": "明天", "problem": "cut", "reason": "only a number"}
    for code, (_english, chinese) in WARNING_TEXTS.items():
        shown = warning_text(TurnWarning.of(code, **{name: params[name] for name in fields(chinese)}), True)
        assert not _ENGLISH_WORD.search(shown.replace("JSON", "")), (code, shown)


@pytest.mark.parametrize("code", list(WarningCode))
def test_every_code_is_made_by_the_conversation_service(code):
    source = "\n".join(path.read_text() for path in CONVERSATION.glob("*.py") if path.name != "warning_texts.py")
    made_here = f"WarningCode.{code.name}" in source
    assert made_here or (code is WarningCode.OFFLINE and "OFFLINE_WARNING" in source), code


@pytest.mark.parametrize("problem", sorted(PROBLEM_TEXTS))
def test_each_problem_of_a_models_answer_is_named_in_both_languages(problem):
    warning = TurnWarning.of(WarningCode.MODEL_ANSWER_UNTRUSTED, problem=problem)
    assert PROBLEM_TEXTS[problem] in warning_text(warning, False)
    shown = warning_text(warning, True)
    assert PROBLEM_TEXTS[problem] not in shown
    assert shown.startswith("模型的回答")
    assert PROBLEMS[problem][1] in shown


def test_an_unknown_problem_is_unusable():
    warning = TurnWarning.of(WarningCode.MODEL_ANSWER_UNTRUSTED, problem="something new")
    assert warning_text(warning, False).startswith("The model's answer was unusable:")
    assert warning_text(warning, True).startswith("模型的回答无法使用")


def test_the_users_words_and_numbers_are_carried_over_as_they_are():
    warning = TurnWarning.of(WarningCode.REMINDER_WITHOUT_FUTURE_TIME, what="Mum's {pills}", when="2025-03-01T08:00")
    assert warning_text(warning, True) == "无法设置「Mum's {pills}」的提醒：「2025-03-01T08:00」不是将来的时间。"
    assert str(warning) == "Could not schedule a reminder for “Mum's {pills}”: no future time in “2025-03-01T08:00”."
    assert "38" in warning_text(TurnWarning.of(WarningCode.MEMORIES_LEFT_OUT, count=38), True)


def test_warnings_of_the_same_code_and_values_are_equal_so_a_reply_shows_each_once():
    one = TurnWarning.of(WarningCode.REMINDERS_FULL, what="x", count=20)
    assert one == TurnWarning.of(WarningCode.REMINDERS_FULL, what="x", count=20)
    assert len({one, one}) == 1
