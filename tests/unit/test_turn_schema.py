"""The turn's JSON schema is valid for strict structured outputs, and its parser is lenient but safe."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.db.kinds import MEMORY_TYPES
from shared.llm.turn_schema import (
    MAX_CONTEXT_VARIABLES,
    MAX_MEMORY_ENTRIES,
    MAX_RESPONSE_CHARS,
    MAX_TODOS,
    TURN_JSON_SCHEMA,
    InvalidTurnOutput,
    TodoEntry,
    parse_turn_output,
)
from shared.memory.policy import MAX_LABEL_CHARS, MAX_MEMORY_CHARS
from shared.memory.stated import StatedMemory

VALID_TURN: dict[str, Any] = {
    "emotion": {"primary": "happy", "category": "positive", "confidence": 0.8, "indicators": ["yay"]},
    "response": "That's wonderful news about Miso!",
    "memory_update": {"should_store": True, "entries": [
        {"type": "fact", "subject": "user", "predicate": "pet_name", "content": "The user's cat is Miso.",
         "tier": "long"},
    ]},
    "todos": [{"content": "Take Miso to the vet", "due": "2026-01-03T18:00:00+08:00"}],
    "topic": "pets",
    "context_variables": [{"key": "pet", "value": "Miso"}],
}


def turn(**changes: Any) -> str:
    return json.dumps({**VALID_TURN, **changes})


def objects_in(schema: Any) -> list[dict[str, Any]]:
    """Every object schema nested anywhere in ``schema``."""
    found: list[dict[str, Any]] = []
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            found.append(schema)
        for value in schema.values():
            found.extend(objects_in(value))
    elif isinstance(schema, list):
        for value in schema:
            found.extend(objects_in(value))
    return found


def test_every_object_in_the_schema_is_strict() -> None:
    objects = objects_in(TURN_JSON_SCHEMA)

    assert len(objects) == 7  # turn, emotion, memory_update, entry, todo, thread, context variable
    for schema in objects:
        assert schema["additionalProperties"] is False
        assert schema["required"] == list(schema["properties"])


def test_schema_offers_every_memory_type_but_todo_and_a_nullable_topic() -> None:
    entry = TURN_JSON_SCHEMA["properties"]["memory_update"]["properties"]["entries"]["items"]

    assert entry["properties"]["type"]["enum"] == [kind for kind in MEMORY_TYPES if kind != "todo"]
    assert TURN_JSON_SCHEMA["properties"]["topic"]["type"] == ["string", "null"]


def test_a_valid_turn_is_parsed_into_frozen_values() -> None:
    output = parse_turn_output(turn())

    assert output.response == "That's wonderful news about Miso!"
    assert output.emotion == VALID_TURN["emotion"]
    assert output.memory_update == (StatedMemory("fact", "user", "pet_name", "The user's cat is Miso.", "long"),)
    assert output.todos == (TodoEntry("Take Miso to the vet", "2026-01-03T18:00:00+08:00"),)
    assert output.topic == "pets"
    assert output.context_variables == {"pet": "Miso"}


def test_a_reply_alone_is_enough() -> None:
    output = parse_turn_output('{"response": "hi"}')

    assert (output.response, output.emotion, output.memory_update, output.todos) == ("hi", None, (), ())
    assert output.topic is None
    assert output.context_variables == {}


@pytest.mark.parametrize("wrapped", [
    "```json\n{body}\n```",
    "```\n{body}\n```",
    "Sure! Here is my answer:\n{body}\nHope that helps.",
    "I think {{this}} is right: {body}",
])
def test_fences_and_prose_around_the_object_are_ignored(wrapped: str) -> None:
    assert parse_turn_output(wrapped.format(body=turn())).response == VALID_TURN["response"]


def test_the_seeds_legacy_entry_shape_is_understood() -> None:
    legacy = {"should_store": True, "entries": [{"category": "preference", "key": "food", "value": "Loves ramen"}]}

    output = parse_turn_output(turn(memory_update=legacy))

    assert output.memory_update == (StatedMemory("preference", "user", "food", "Loves ramen", "long"),)


def test_unknown_memory_types_todos_and_empty_contents_are_skipped() -> None:
    entries = [
        {"type": "gossip", "subject": "user", "predicate": "x", "content": "skipped", "tier": "long"},
        {"type": "todo", "subject": "user", "predicate": "x", "content": "todos have their own list", "tier": "long"},
        {"type": "fact", "subject": "user", "predicate": "x", "content": "  ", "tier": "long"},
        "not an entry",
        {"type": "Rule", "subject": "", "predicate": "tone", "content": "No emoji.", "tier": "forever"},
    ]

    output = parse_turn_output(turn(memory_update={"should_store": True, "entries": entries}))

    assert output.memory_update == (StatedMemory("rule", "user", "tone", "No emoji.", "long"),)


def test_nothing_is_stored_when_should_store_is_false() -> None:
    update = {**VALID_TURN["memory_update"], "should_store": False}

    assert parse_turn_output(turn(memory_update=update)).memory_update == ()


def test_context_variables_are_also_accepted_as_a_plain_object() -> None:
    output = parse_turn_output(turn(context_variables={"mood": "calm", "count": 3, "nested": {"x": 1}}))

    assert output.context_variables == {"mood": "calm", "count": "3"}


@pytest.mark.parametrize("text", [
    "", "plain words, no JSON", "[1, 2, 3]", '{"response": ""}', '{"response": "   "}', '{"response": 42}',
    '{"emotion": {"primary": "sad"}}', '{"response": "cut off', "{" * 100_000, None,
])
def test_answers_without_a_usable_reply_are_invalid(text: Any) -> None:
    with pytest.raises(InvalidTurnOutput):
        parse_turn_output(text)


def test_lengths_and_counts_are_capped() -> None:
    entry = {"type": "fact", "subject": "s" * 500, "predicate": "p" * 500, "content": "c" * 5000, "tier": "long"}
    output = parse_turn_output(turn(
        response="r" * 10_000,
        memory_update={"should_store": True, "entries": [entry] * 50},
        todos=[{"content": "t", "due": "d" * 500}] * 50,
        topic="t" * 500,
        context_variables=[{"key": f"k{i}" + "k" * 500, "value": "v" * 500} for i in range(50)],
    ))

    assert len(output.response) == MAX_RESPONSE_CHARS
    assert len(output.memory_update) == MAX_MEMORY_ENTRIES
    assert len(output.todos) == MAX_TODOS
    first = output.memory_update[0]
    assert len(first.content) == MAX_MEMORY_CHARS
    assert len(first.subject) == len(first.predicate) == len(output.topic or "") == MAX_LABEL_CHARS
    assert len(output.todos[0].due or "") == MAX_LABEL_CHARS
    assert len(output.context_variables) == MAX_CONTEXT_VARIABLES
    assert all(len(k) <= MAX_LABEL_CHARS and len(v) <= MAX_LABEL_CHARS for k, v in output.context_variables.items())


def test_nul_characters_are_removed_from_every_string() -> None:
    output = parse_turn_output(turn(
        response="hel\u0000lo",
        memory_update={"should_store": True, "entries": [
            {"type": "fact", "subject": "us\u0000er", "predicate": "p\u0000", "content": "c\u0000at", "tier": "long"}]},
        todos=[{"content": "v\u0000et", "due": "2026\u0000"}],
        topic="pe\u0000ts",
        context_variables=[{"key": "k\u0000", "value": "v\u0000"}],
    ))

    assert "\x00" not in repr(output)
    assert output.response == "hello"
    assert output.memory_update[0].content == "cat"
    assert output.topic == "pets"


def test_todos_without_content_are_dropped_and_a_missing_due_is_none() -> None:
    output = parse_turn_output(turn(todos=[{"content": "", "due": "2026-01-01T09:00:00+00:00"}, {"content": "call"}]))

    assert output.todos == (TodoEntry("call", None),)


@given(st.text(max_size=300) | st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
).map(json.dumps))
def test_any_input_parses_or_raises_invalid_turn_output_only(text: str) -> None:
    try:
        output = parse_turn_output(text)
    except InvalidTurnOutput:
        return
    assert output.response.strip()
    assert len(output.response) <= MAX_RESPONSE_CHARS


@given(st.dictionaries(
    st.sampled_from(list(VALID_TURN)),
    st.none() | st.booleans() | st.integers() | st.text(max_size=10)
    | st.lists(st.dictionaries(st.text(max_size=10), st.text(max_size=10) | st.integers(), max_size=5), max_size=3)
    | st.dictionaries(st.text(max_size=10), st.text(max_size=10) | st.lists(st.integers()), max_size=4),
).map(lambda d: json.dumps({**d, "response": "ok"})))
def test_a_turn_with_a_reply_parses_whatever_its_other_fields_hold(text: str) -> None:
    assert parse_turn_output(text).response == "ok"


def test_a_todo_says_whether_its_time_is_a_deadline_and_a_turn_may_name_the_users_zone() -> None:
    assert TURN_JSON_SCHEMA["properties"]["todos"]["items"]["properties"]["kind"]["enum"] == ["reminder", "deadline"]
    assert TURN_JSON_SCHEMA["properties"]["timezone"]["type"] == ["string", "null"]
    due = "2027-03-12T17:00:00+09:00"
    parsed = parse_turn_output(turn(todos=[{"content": "report", "due": due, "kind": "deadline"},
                                           {"content": "call", "due": due, "kind": "reminder"},
                                           {"content": "tea", "due": due, "kind": "soon"}], timezone="  Asia/Tokyo "))
    assert [todo.deadline for todo in parsed.todos] == [True, False, False]
    assert parsed.timezone == "Asia/Tokyo"
    assert parse_turn_output(turn(timezone=None)).timezone is None
    assert parse_turn_output(turn(timezone=["Asia/Tokyo"])).timezone is None
