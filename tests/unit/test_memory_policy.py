"""One source per rule: the tier policy covers the schema's tiers, and the emotion taxonomy, memory types
and tiers that the model is offered (in the JSON schema and in the prompt's words) come from one place."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from shared.accounts.export_format import EXPORT_FORMAT, EXPORT_VERSION, MAX_JSON_DEPTH, read_export
from shared.conversation.prompt import OUTPUT_RULES
from shared.db.kinds import MEMORY_TIERS, MEMORY_TYPES
from shared.emotion import ALL_EMOTIONS, EMOTION_CATEGORIES
from shared.llm.turn_schema import TURN_JSON_SCHEMA, parse_turn_data
from shared.memory.policy import (
    DECAYING_TIERS,
    DEDUP_TIERS,
    EXPIRING_TIERS,
    MAX_LABEL_CHARS,
    MAX_MEMORY_CHARS,
    MODEL_CHANGED_TIERS,
    MODEL_WRITTEN_TIERS,
    PREFERRED_TIERS,
    REVIEWED_TIERS,
    TIER_POLICY,
    tiers_where,
)
from shared.memory.writes import normalise_key

EMOTION = TURN_JSON_SCHEMA["properties"]["emotion"]["properties"]
ENTRY = TURN_JSON_SCHEMA["properties"]["memory_update"]["properties"]["entries"]["items"]["properties"]


def offered_in_rules(field: str) -> list[str]:
    """The comma-separated choices the prompt lists for ``field`` (``primary (a, b, c)``)."""
    match = re.search(rf"{field} \(([^)]*)\)", OUTPUT_RULES)
    assert match, f"the output rules list no choices for {field}"
    return [re.split(r":", choice)[0].strip() for choice in re.split(r"[,;]", match.group(1))]


def test_every_tier_of_the_schema_has_one_policy_in_the_schemas_order() -> None:
    assert tuple(TIER_POLICY) == MEMORY_TIERS


def test_the_rule_lists_are_read_off_the_policy_table() -> None:
    assert MODEL_WRITTEN_TIERS == ("transient", "short", "long")
    assert MODEL_CHANGED_TIERS == ("transient", "short", "long", "core")  # only the operator's stay put
    assert EXPIRING_TIERS == ("transient", "short", "long")  # core and system outlive decay
    assert DECAYING_TIERS == REVIEWED_TIERS == ("short", "long")
    assert DEDUP_TIERS == ("short", "long", "core")
    assert PREFERRED_TIERS == ("core",)
    assert tiers_where("decays") == DECAYING_TIERS


def test_a_tier_the_model_may_change_is_never_one_it_may_not_see_written() -> None:
    assert set(MODEL_WRITTEN_TIERS) <= set(MODEL_CHANGED_TIERS)
    assert not set(PREFERRED_TIERS) - set(DEDUP_TIERS), "a preferred tier must take part in dedup"


def test_the_schema_offers_exactly_the_emotion_taxonomy() -> None:
    assert tuple(EMOTION["primary"]["enum"]) == ALL_EMOTIONS
    assert tuple(EMOTION["category"]["enum"]) == tuple(EMOTION_CATEGORIES)


def test_the_prompt_names_exactly_what_the_schema_offers() -> None:
    assert offered_in_rules("primary") == list(ALL_EMOTIONS)
    assert offered_in_rules("category") == list(EMOTION_CATEGORIES)
    assert offered_in_rules("type") == list(ENTRY["type"]["enum"]) == [t for t in MEMORY_TYPES if t != "todo"]
    assert offered_in_rules("tier") == list(ENTRY["tier"]["enum"]) == list(MODEL_WRITTEN_TIERS)


@pytest.mark.parametrize("tier", [t for t in MEMORY_TIERS if t not in MODEL_WRITTEN_TIERS])
def test_a_tier_the_model_may_not_write_is_read_as_long(tier: str) -> None:
    output = parse_turn_data({"response": "ok", "memory_update": {"should_store": True, "entries": [
        {"type": "fact", "subject": "user", "predicate": "city", "content": "Lives in Oslo", "tier": tier}]}})
    assert [entry.tier for entry in output.memory_update] == ["long"]


def test_a_stated_memory_is_cut_at_the_one_content_limit() -> None:
    output = parse_turn_data({"response": "ok", "memory_update": {"should_store": True, "entries": [
        {"type": "fact", "subject": "user", "predicate": "story", "content": "长" * (MAX_MEMORY_CHARS + 40)}]}})
    assert len(output.memory_update[0].content) == MAX_MEMORY_CHARS


def test_an_import_takes_a_memory_up_to_the_same_content_limit_and_refuses_a_longer_one_with_the_reason() -> None:
    memories = [{"id": 1, "type": "fact", "content": "长" * MAX_MEMORY_CHARS},
                {"id": 2, "type": "fact", "content": "长" * (MAX_MEMORY_CHARS + 1)},
                {"id": 3, "type": "fact", "content": "ok", "predicate": "k" * (MAX_LABEL_CHARS + 1)}]
    document = read_export(json.dumps({"format": EXPORT_FORMAT, "version": EXPORT_VERSION,
                                       "memories": memories}).encode())
    assert [entry["id"] for entry in document.sections["memories"]] == [1]
    assert any(f"at most {MAX_MEMORY_CHARS} characters" in reason for reason in document.refused)
    assert any(f"at most {MAX_LABEL_CHARS} characters" in reason for reason in document.refused)


def nested(levels: int) -> object:
    value: object = "core"
    for level in range(levels):
        value = [value] if level % 2 else {"k": value}
    return value


def test_an_import_refuses_a_value_nested_deeper_than_can_be_shown_back_and_takes_one_at_the_limit() -> None:
    memories = [{"id": 1, "type": "fact", "content": "shallow enough", "value": nested(MAX_JSON_DEPTH)},
                {"id": 2, "type": "fact", "content": "too deep", "value": nested(MAX_JSON_DEPTH + 1)},
                {"id": 3, "type": "fact", "content": "far too deep", "value": nested(300)}]
    document = read_export(json.dumps({"format": EXPORT_FORMAT, "version": EXPORT_VERSION,
                                       "memories": memories}).encode())
    assert [entry["id"] for entry in document.sections["memories"]] == [1]
    assert len(document.refused) == 2


def test_a_memory_key_has_one_length_limit_in_the_code_the_docs_and_the_panel():
    root = Path(__file__).resolve().parents[2]
    api_doc = (root / "docs" / "api.md").read_text(encoding="utf-8")
    stated = re.search(r"`key` is up to (\d+) characters", api_doc)
    assert stated
    assert int(stated[1]) == MAX_LABEL_CHARS
    assert re.search(r"`content` is 1–(\d+) characters", api_doc)[1] == str(MAX_MEMORY_CHARS)
    page = (root / "bot" / "panel" / "index.html").read_text(encoding="utf-8")
    assert re.search(r'id="memory-key"[^>]*maxlength="(\d+)"', page)[1] == str(MAX_LABEL_CHARS)
    panel_texts = (root / "bot" / "panel" / "texts.js").read_text(encoding="utf-8")
    assert re.findall(r"bad_key: '[^']*?(\d+)[^']*?(\d+)", panel_texts) == [("1", str(MAX_LABEL_CHARS))] * 2
    assert len(normalise_key("Favourite " * 40)) == MAX_LABEL_CHARS


@pytest.mark.parametrize("length", [65, 88, MAX_LABEL_CHARS])
def test_a_key_up_to_the_limit_is_kept_whole_by_the_model_path(length):
    key = "k" * length
    assert normalise_key(key) == key
