"""Reading model answers and choosing output formats: pure rules, no server."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.llm.answers import is_machine_text, salvage_string_field, strip_reasoning
from shared.llm.modes import LADDER, OutputFormat, bounded, ladder_for, refused_parameter, refuses_format
from shared.llm.turn_answer import (
    PROBLEM_TEXTS,
    TURN_BOUNDED_SCHEMA,
    TURN_EXAMPLE,
    TURN_FIELD_NAMES,
    presentable,
    read_turn_answer,
)
from shared.llm.turn_schema import TURN_JSON_SCHEMA

VALID = json.dumps({"response": "你好，小明！", "emotion": {"primary": "happy"}, "memory_update": {},
                    "todos": [], "topic": None, "context_variables": []}, ensure_ascii=False)


@pytest.mark.parametrize(("raw", "expected"), [
    ("<think>plan {\"response\": \"x\"}</think>\n{\"a\": 1}", '{"a": 1}'),
    ("reasoning the template opened</think>answer", "answer"),
    ("answer<think>cut while thinking", "answer"),
    ("<THINKING>a</THINKING>b", "b"),
    ("<think>a<think>b</thinking>c<think>d</think>e", "ce"),
    ("plain", "plain"),
])
def test_reasoning_is_stripped_however_it_is_written(raw: str, expected: str) -> None:
    assert strip_reasoning(raw) == expected


def test_a_cut_reply_is_salvaged_with_its_escapes_and_without_a_dangling_one() -> None:
    assert salvage_string_field('{"response": "Hi \\"Ana\\", \\u4f60\\u597d and', "response") == 'Hi "Ana", 你好 and'
    assert salvage_string_field('{"response": "ok\\', "response") == "ok"
    assert salvage_string_field('{"response": "emoji \\ud83d\\ude00 end"}', "response") == "emoji 😀 end"
    assert salvage_string_field('{"response": "half \\ud83d', "response") == "half"
    assert salvage_string_field('{"emotion": {}}', "response") == ""


@given(st.text(max_size=300))
def test_reading_any_text_never_raises_and_never_yields_machine_text(text: str) -> None:
    reading = read_turn_answer(text, "length")
    assert reading.reply == "" or presentable(reading.reply)


@pytest.mark.parametrize(("raw", "reply", "problem"), [
    (VALID, "你好，小明！", None),
    (f"```json\n{VALID}\n```", "你好，小明！", None),
    (f"Sure, here it is: {VALID} Anything else?", "你好，小明！", None),
    (f"<think>hmm</think>{VALID}", "你好，小明！", None),
    ('{"response": "I was saying that the weather is nice. And then', "I was saying that the weather is nice.", "cut"),
    ("{}", "", "invalid"),
    ("", "", "blank"),
    ("<think>only thinking</think>", "", "blank"),
    (json.dumps(TURN_JSON_SCHEMA), "", "schema_echo"),
    (json.dumps({"response": "The reply to send to the user"}), "", "schema_echo"),
    (json.dumps(TURN_EXAMPLE), "", "schema_echo"),
    (json.dumps({"response": '{"response": "nested"}'}), "", "invalid"),
    ("Hello there, how was your day?", "Hello there, how was your day?", "invalid"),
    ('{"emotion": {"primary": "sad"}, "memory_update": ', "", "invalid"),
    ('{"response": "Nice to meet you, Lin. I remember you said this: <app_note>\\n\\nCurrent time for the',
     "Nice to meet you, Lin.", "note_echo"),
    (json.dumps({**json.loads(VALID), "response": "你好！</APP_NOTE> Style for this reply"}), "你好！", "note_echo"),
    ("Sure, I can do that. <app_note>What you know about the user:", "Sure, I can do that.", "note_echo"),
    ('{"response": "<app_note>\\nCurrent time for the user', "", "note_echo"),
])
def test_a_turn_answer_is_read_into_output_a_safe_reply_or_nothing(raw: str, reply: str, problem: str | None) -> None:
    finish = "length" if problem == "cut" else "stop"
    reading = read_turn_answer(raw, finish)
    assert (reading.reply, reading.problem) == (reply, problem)
    assert (reading.output is not None) == (problem is None)
    assert problem is None or " " in PROBLEM_TEXTS[problem] or problem == "blank"  # words a user may read


@pytest.mark.parametrize("text", ['{"a": 1}', "```json", "[1, 2]", 'He said "response": hi', "see memory_update",
                                  "<think>x</think>", "   "])
def test_machine_text_is_never_presentable(text: str) -> None:
    assert is_machine_text(text, TURN_FIELD_NAMES)


@pytest.mark.parametrize("text", ["<p class=", '<div class="x"><br/></div>', "<!DOCTYPE html>", "</p>  <p>"])
def test_markup_with_nothing_to_read_is_never_presentable(text: str) -> None:
    assert is_machine_text(text, TURN_FIELD_NAMES)  # Gemma 3 270M answered "What is my cat called?" with "<p class="


@pytest.mark.parametrize("text", ["My response is yes.", "今天的话题是天气。", "Let's talk about your emotions.",
                                  "<3 you too!", "<b>Miso</b> is your cat.", "<p>你的猫叫 Miso。</p>", "I <3 tea"])
def test_words_that_merely_share_a_field_name_are_presentable(text: str) -> None:
    assert presentable(text)


@pytest.mark.parametrize(("status", "body", "rung", "refused"), [
    (400, "This response_format type is unavailable now", LADDER[0], True),
    (500, 'response_format type must be one of "text" or "json_object"', LADDER[0], True),
    (422, "json_schema is not supported", LADDER[0], True),
    (501, "Not implemented: grammar", LADDER[1], True),
    (400, "Json mode response is not supported when enable_thinking is true", LADDER[2], True),
    (500, "CUDA out of memory", LADDER[0], False),
    (503, "response_format overloaded", LADDER[0], False),
    (429, "json_schema rate limit", LADDER[0], False),
    (400, "response_format", OutputFormat("text"), False),
])
def test_a_refused_format_is_told_by_status_and_words(status: int, body: str, rung: OutputFormat,
                                                       refused: bool) -> None:
    assert refuses_format(status, body, rung) is refused


def test_refused_parameters_are_recognised_only_when_sent() -> None:
    body = "Unsupported parameter: 'max_tokens'. Use 'max_completion_tokens' instead."
    assert refused_parameter(400, body, {"max_tokens": 5}) == "max_tokens"
    assert refused_parameter(400, body, {"max_completion_tokens": 5}) is None
    assert refused_parameter(400, "unknown field stream_options", {"stream_options": {}}) == "stream_options"
    assert refused_parameter(503, "stream_options", {"stream_options": {}}) is None


def test_the_ladder_follows_the_setting() -> None:
    assert [rung.label for rung in ladder_for("auto")] == ["json_schema", "json_object+schema", "json_object", "text"]
    assert [rung.label for rung in ladder_for("json_object")] == ["json_object+schema", "json_object"]
    assert [rung.label for rung in ladder_for("text")] == ["text"]
    with pytest.raises(ValueError):
        ladder_for("xml")


def test_the_bounded_schema_caps_every_list_and_keeps_the_reply_first() -> None:
    assert next(iter(TURN_BOUNDED_SCHEMA["properties"])) == "response"
    assert TURN_BOUNDED_SCHEMA["properties"]["memory_update"]["properties"]["entries"]["maxItems"] == 5
    assert bounded({"type": "string"}, 3) == {"type": "string"}
    assert TURN_BOUNDED_SCHEMA["properties"]["response"]["minLength"] == 1
    assert "maxItems" not in TURN_JSON_SCHEMA["properties"]["todos"]  # strict OpenAI schemas stay plain
    assert "minLength" not in TURN_JSON_SCHEMA["properties"]["response"]
