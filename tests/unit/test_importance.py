"""Importance is given once, where a memory is made, on one scale (shared/memory/policy.py); what a rule may
forget follows from it and from how the memory came."""

from __future__ import annotations

import json

import pytest

from shared.conversation.offline import extract_statements
from shared.llm.turn_schema import TURN_JSON_SCHEMA, parse_turn_output
from shared.memory.policy import (
    IMPORTANCE,
    IMPORTANCE_LEVELS,
    NEVER_DECAYS_FROM,
    forgettable_by_rule,
    importance_for,
    importance_of,
)


@pytest.mark.parametrize(("type_", "predicate", "level"), [
    ("fact", "name", "defining"), ("fact", "birthday", "defining"), ("person", "sister_name", "defining"),
    ("fact", "allergic_to_peanuts", "defining"), ("person", "wife", "defining"),
    ("fact", "lives_in", "lasting"), ("fact", "job", "lasting"), ("fact", "has_cat", "lasting"),
    ("person", "colleague_name", "lasting"), ("preference", "hobby", "lasting"),
    ("preference", "likes_jazz", "passing"), ("preference", "eats_hotpot", "passing"),
    ("fact", "note_weather", "ordinary"), ("event", None, "ordinary"),
])
def test_the_rules_give_importance_by_kind(type_, predicate, level):
    assert importance_for(type_, predicate) == IMPORTANCE[level]


@pytest.mark.parametrize(("content", "level"), [
    ("I like the band Low", "passing"), ("I enjoy hiking", "passing"), ("我喜欢猫", "passing"),
    ("I love traveling", "ordinary"), ("I'm passionate about improving education", "ordinary"),
    ("I hate mornings", "ordinary"), ("我特别喜欢火锅", "ordinary"), ("我热爱画画", "ordinary"),
])
def test_a_like_said_with_feeling_is_no_passing_remark(content, level):
    [statement] = extract_statements(content)
    assert importance_for(statement.type, statement.predicate, statement.content) == IMPORTANCE[level]


def test_identity_family_and_health_never_decay_and_passing_likes_are_low():
    assert IMPORTANCE["defining"] >= NEVER_DECAYS_FROM > IMPORTANCE["lasting"] > IMPORTANCE["ordinary"]
    assert IMPORTANCE["passing"] < IMPORTANCE["ordinary"]


@pytest.mark.parametrize(("raw", "expected"), [
    ("lasting", 2.0), (" Defining ", 3.0), (2.5, 2.5), (99, 5.0), (-1, 0.1), ("very", None), (None, None),
    (True, None), (float("nan"), None),
])
def test_a_models_importance_is_a_levels_name_or_a_clamped_number(raw, expected):
    assert importance_of(raw, default=None) == expected


@pytest.mark.parametrize(("source", "base", "verified", "forgettable"), [
    ("user_stated", 1.0, False, False),   # what the user said is kept
    ("user_stated", 0.6, False, True),    # ... unless a passing remark
    ("user_stated", 0.6, True, False),    # /remember'ed: never
    ("inferred", 2.0, False, True),       # a model's conclusion may go
    ("inferred", 3.0, False, False),      # but nothing of high importance
    ("imported", 1.0, False, False), ("operator", 1.0, False, False),
])
def test_only_inferred_or_low_importance_memories_may_be_forgotten_by_a_rule(source, base, verified, forgettable):
    assert forgettable_by_rule(source, base, verified) is forgettable


def test_the_turn_schema_asks_each_entry_for_an_importance_level_and_the_parse_keeps_it():
    entry = TURN_JSON_SCHEMA["properties"]["memory_update"]["properties"]["entries"]["items"]
    assert entry["properties"]["importance"]["enum"] == list(IMPORTANCE_LEVELS)
    answer = {"response": "Hi Anna's sibling!", "memory_update": {"should_store": True, "entries": [
        {"type": "person", "subject": "Anna", "predicate": "sister_name", "content": "My sister is called Anna",
         "tier": "long", "importance": "defining"},
        {"type": "preference", "subject": "user", "predicate": "likes_song", "content": "Liked that song",
         "tier": "long"}]}}
    first, second = parse_turn_output(json.dumps(answer)).memory_update
    assert (first.importance, second.importance) == (3.0, None)  # None: the rules decide by its kind


def test_the_offline_rules_read_a_sister_and_a_passing_like_at_their_importance():
    sister = extract_statements("My sister is called Anna.")
    like = extract_statements("I like jazz.")
    assert [importance_for(s.type, s.predicate) for s in sister] == [IMPORTANCE["defining"]]
    assert [importance_for(s.type, s.predicate) for s in like] == [IMPORTANCE["passing"]]
