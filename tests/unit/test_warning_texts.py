"""A reply's warnings in the user's language: every warning the conversation service can make has Chinese.

The warnings are found in the source of ``shared/conversation`` (each English sentence a module there writes
outside a docstring, a log call or an exception), so a warning added later without its Chinese fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import shared.conversation
from shared.conversation.warning_texts import OFFLINE_WARNING, warning_text
from shared.llm.turn_answer import PROBLEM_TEXTS

CONVERSATION = Path(shared.conversation.__file__).parent
NOT_WARNINGS = {"offline_replies.py", "prompt.py", "pressure.py", "warning_texts.py"}
"""Modules of other words: the offline replies and notices (already in both languages) and the prompt."""
LOG_CALLS = {"debug", "info", "warning", "error", "exception", "critical"}
_HAN = re.compile(r"[\u4e00-\u9fff]")


def sentences_written_in(path: Path) -> list[str]:
    """Each English sentence of ``path`` that is no docstring, log line or exception message; an f-string's
    fields filled in as the warning would be (``'feed the cat'`` for ``!r``, a number otherwise)."""
    tree = ast.parse(path.read_text())
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            skipped.add(id(node.value))
        is_log = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in LOG_CALLS
        if is_log or isinstance(node, ast.Raise):
            skipped.update(id(inner) for inner in ast.walk(node))
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.JoinedStr):
            skipped.update(id(part) for part in node.values)
            text = "".join(part.value if isinstance(part, ast.Constant) else
                           "'feed the cat'" if part.conversion == ord("r") else "12" for part in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if text.endswith(".") and len(text.split()) >= 4:
            found.append(text)
    return found


WARNINGS = sorted({text for path in CONVERSATION.glob("*.py") if path.name not in NOT_WARNINGS
                   for text in sentences_written_in(path)})


def test_the_source_scan_finds_the_warnings_of_each_stage_of_the_turn():
    assert {"Remembering is paused; nothing new was stored.",
            "12 remembered item(s) did not fit the context budget.",
            "The language model is unavailable; this is an offline reply.",
            "Could not schedule a reminder for 'feed the cat': no future time in 'feed the cat'."} <= set(WARNINGS)


@pytest.mark.parametrize("warning", [OFFLINE_WARNING, *WARNINGS])
def test_every_warning_of_the_conversation_service_has_its_chinese(warning):
    shown = warning_text(warning, chinese=True)
    assert _HAN.search(shown) and shown != warning, shown
    assert warning_text(warning, chinese=False) == warning


@pytest.mark.parametrize("problem", sorted(PROBLEM_TEXTS.values()))
def test_each_problem_of_a_models_answer_is_named_in_chinese(problem):
    shown = warning_text(f"The model's answer was {problem}: its reply was kept, nothing was remembered from it.",
                         chinese=True)
    assert problem not in shown and shown.startswith("模型的回答")


def test_numbers_and_quoted_words_are_carried_over_without_their_quotes():
    assert warning_text("Could not schedule a reminder for \"Mum's pills\": no future time in '2025-03-01T08:00'.",
                        True) == "无法设置「Mum's pills」的提醒：「2025-03-01T08:00」不是将来的时间。"
    assert "38" in warning_text("38 remembered item(s) did not fit the context budget.", True)
    assert "2500" in warning_text("Your message was long; only the first 2500 characters were read.", True)


def test_a_warning_that_only_resembles_one_stays_as_it_is():
    for text in ("remembered item(s) did not fit the context budget.", "Could not schedule a reminder for x",
                 "Remembering is paused; nothing new was stored. And more", "something else entirely"):
        assert warning_text(text, True) == text
