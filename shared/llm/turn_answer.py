"""What a person may be shown of the model's answer to a turn, and how the turn's format is asked for.

:func:`read_turn_answer` turns whatever came back (reasoning, fences, prose, a cut or empty object,
the schema written back, the app note copied back) into a :class:`TurnReading`: the validated
output, or only a reply that is safe to show (salvaged from a cut object, or plain words), or
nothing, with the reason. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from shared.llm.answers import (
    is_machine_text,
    is_schema_echo,
    json_text,
    salvage_string_field,
    strip_reasoning,
    without_fences,
)
from shared.llm.modes import bounded
from shared.llm.turn_schema import (
    MAX_RESPONSE_CHARS,
    NOTE_MARKS,
    TURN_JSON_SCHEMA,
    InvalidTurnOutput,
    TurnOutput,
    first_json_object,
    parse_turn_data,
)

SCHEMA_NAME = "mnemo_turn"
SENTENCE_END = re.compile(r"[。！？!?…]|[.](?=\s|$)")
BOUNDED_ITEMS = 5
TURN_BOUNDED_SCHEMA = bounded(TURN_JSON_SCHEMA, BOUNDED_ITEMS)
TURN_BOUNDED_SCHEMA["properties"]["response"] = {**TURN_JSON_SCHEMA["properties"]["response"], "minLength": 1}
"""For grammar-backed JSON mode: lists bounded, and a reply that cannot be empty (small models write "")."""
REPLY_PLACEHOLDER = "<your reply to the user, in their language>"
TURN_EXAMPLE: dict[str, Any] = {
    "response": REPLY_PLACEHOLDER,
    "emotion": {"primary": "neutral", "category": "neutral", "confidence": 0.6, "indicators": []},
    "memory_update": {"should_store": True, "entries": [
        {"type": "fact", "subject": "user", "predicate": "lives_in", "content": "<one sentence>", "tier": "long"}]},
    "todos": [{"content": "<what to remind of>", "due": "<ISO 8601 with offset>"}],
    "topic": None,
    "context_variables": [],
}
SCHEMA_INSTRUCTION = ("Answer with one JSON object and nothing else. It must match this JSON schema:\n"
                      + json_text(TURN_JSON_SCHEMA))
EXAMPLE_INSTRUCTION = ("Answer with one JSON object and nothing else: no markdown, no words around it. Fill in "
                       "this example with your own values (leave memory_update.entries and todos empty when "
                       "there is nothing to store or remind):\n" + json_text(TURN_EXAMPLE))
TURN_FIELD_NAMES = ("response", "emotion", "memory_update", "should_store", "entries", "todos", "topic",
                    "context_variables", "predicate", "indicators")


def _descriptions(schema: dict[str, Any]) -> set[str]:
    found = {schema["description"]} if isinstance(schema.get("description"), str) else set()
    for sub in (schema.get("properties") or {}).values():
        found |= _descriptions(sub)
    if isinstance(schema.get("items"), dict):
        found |= _descriptions(schema["items"])
    return found


ECHO_TEXTS = frozenset(_descriptions(TURN_JSON_SCHEMA) | {REPLY_PLACEHOLDER})


PROBLEM_TEXTS = {"blank": "blank", "schema_echo": "a copy of the schema", "cut": "cut short",
                 "invalid": "not the JSON asked for", "note_echo": "copying its instructions back"}
"""Each :attr:`TurnReading.problem` in words for people (a reply's warning, ``mnemo doctor``)."""


@dataclass(frozen=True)
class TurnReading:
    """The answer as read: ``output`` when valid; else at most a ``reply`` that is safe to show."""

    output: TurnOutput | None
    reply: str
    problem: str | None = None
    """None, or why there is no output: blank, schema_echo, cut (max_tokens), invalid, note_echo (the
    reply began to copy the app note back; what came before it is kept)."""

    @property
    def worth_asking_again(self) -> bool:
        """Blank answers and echoed schemas often go away when asked once more, with an example."""
        return self.problem in ("blank", "schema_echo")


def presentable(text: str) -> bool:
    """Words a person may read: no JSON, fences, reasoning tags or the schema's field names."""
    return not is_machine_text(text, TURN_FIELD_NAMES)


def whole_sentences(text: str) -> str:
    """``text`` up to its last sentence end, when that keeps at least a third of it (a cut reply)."""
    ends = [match.end() for match in SENTENCE_END.finditer(text)]
    return text[: ends[-1]].strip() if ends and ends[-1] >= len(text) / 3 else text


def before_the_note(text: str) -> str:
    """``text`` up to where it starts to copy the app note back (all of it when it does not)."""
    lowered = text.lower()
    cuts = [at for mark in NOTE_MARKS if (at := lowered.find(mark)) >= 0]
    return text[: min(cuts)] if cuts else text


def read_turn_answer(text: str, finish_reason: str | None = None) -> TurnReading:
    """Read one answer; never raises."""
    cleaned = strip_reasoning(text)
    if not cleaned:
        return TurnReading(None, "", "blank")
    try:
        data = first_json_object(cleaned)
    except InvalidTurnOutput:
        data = None
    if data is not None:
        if is_schema_echo(data, ECHO_TEXTS):
            return TurnReading(None, "", "schema_echo")
        try:
            output = parse_turn_data(data)
        except InvalidTurnOutput:
            output = None
        if (output is not None and presentable(output.response) and output.response not in ECHO_TEXTS
                and before_the_note(output.response) == output.response):
            return TurnReading(output, output.response)
    problem = "cut" if finish_reason == "length" else "invalid"
    reply = salvage_string_field(cleaned, "response")
    if not reply and "{" not in cleaned:
        reply = without_fences(cleaned)  # plain words: instructions-only servers and chatty models
    reply = reply[:MAX_RESPONSE_CHARS].strip()
    if (kept := before_the_note(reply)) != reply:
        problem, reply = "note_echo", kept.strip().rstrip(":：-—").strip()
    if problem in ("cut", "note_echo"):
        reply = whole_sentences(reply)
    if reply and presentable(reply) and reply not in ECHO_TEXTS:
        return TurnReading(None, reply, problem)
    return TurnReading(None, "", problem)
