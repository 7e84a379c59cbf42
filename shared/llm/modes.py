"""How to ask a server for JSON, and how to tell that it refused: the output-mode ladder.

Servers differ (README "LLM servers"): OpenAI and vLLM enforce ``json_schema``; DeepSeek refuses it
with 400 and offers JSON mode; llama.cpp and llama-cpp-python answer it with 500 but take
``{"type": "json_object", "schema": …}``; Qwen refuses JSON mode while thinking is on. So a request
walks down :data:`LADDER` — ``json_schema``, ``json_object`` with the schema, plain ``json_object``,
then instructions only (``text``) — one rung each time the server *says* it refuses the format, and
the endpoint remembers where it landed. Pure: no HTTP here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

OutputMode = Literal["json_schema", "json_object", "text"]
OUTPUT_MODE_SETTINGS = ("auto", "json_schema", "json_object", "text")
REFUSAL_STATUSES = frozenset({400, 422, 500, 501})
FORMAT_WORDS = re.compile(r"response_format|json_schema|json_object|json mode|schema|grammar", re.IGNORECASE)
MAX_TOKENS_WORDS = re.compile(r"max_tokens", re.IGNORECASE)
STREAM_OPTIONS_WORDS = re.compile(r"stream_options|include_usage", re.IGNORECASE)


@dataclass(frozen=True)
class OutputFormat:
    """One rung of the ladder: the mode, and whether the schema rides along in JSON mode."""

    mode: OutputMode
    with_schema: bool = False

    @property
    def label(self) -> str:
        return f"{self.mode}+schema" if self.mode == "json_object" and self.with_schema else self.mode


LADDER = (OutputFormat("json_schema", True), OutputFormat("json_object", True), OutputFormat("json_object"),
          OutputFormat("text"))
JSON_LADDER = (OutputFormat("json_object"), OutputFormat("text"))
"""For background jobs, whose answers have no schema of their own."""


def ladder_for(setting: str) -> tuple[OutputFormat, ...]:
    """The rungs ``LLM_OUTPUT_MODE`` allows: all of them for ``auto``, else only the pinned mode's."""
    if setting == "auto":
        return LADDER
    if setting not in OUTPUT_MODE_SETTINGS:
        raise ValueError(f"unknown output mode {setting!r}")
    return tuple(rung for rung in LADDER if rung.mode == setting)


def response_format(rung: OutputFormat, name: str, strict_schema: dict[str, Any],
                    bounded_schema: dict[str, Any]) -> dict[str, Any] | None:
    """The ``response_format`` to send on ``rung`` (None: send none)."""
    if rung.mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": strict_schema}}
    if rung.mode == "json_object":
        return {"type": "json_object", "schema": bounded_schema} if rung.with_schema else {"type": "json_object"}
    return None


def refuses_format(status: int, body: str, rung: OutputFormat) -> bool:
    """The server said it cannot produce ``rung``'s format (as opposed to failing for a while)."""
    return rung.mode != "text" and status in REFUSAL_STATUSES and FORMAT_WORDS.search(body) is not None


def refused_parameter(status: int, body: str, sent: dict[str, Any]) -> str | None:
    """A parameter the server refuses that can be changed or left out: ``max_tokens`` (newer OpenAI
    models want ``max_completion_tokens``) or ``stream_options``; None otherwise."""
    if status not in REFUSAL_STATUSES:
        return None
    if "max_tokens" in sent and MAX_TOKENS_WORDS.search(body) and "max_completion_tokens" in body:
        return "max_tokens"
    if "stream_options" in sent and STREAM_OPTIONS_WORDS.search(body):
        return "stream_options"
    return None


def bounded(schema: dict[str, Any], max_items: int) -> dict[str, Any]:
    """``schema`` with every array bounded, so a grammar-constrained small model cannot loop through
    list items until ``max_tokens`` (llama.cpp turns ``maxItems`` into grammar limits). Strings stay
    unbounded: llama-cpp-python expands ``maxLength`` into one nested rule per character and fails to
    parse the grammar for lengths of a few hundred (it stops the server)."""
    copy = dict(schema)
    types = copy.get("type")
    kinds = set(types) if isinstance(types, list) else {types}
    if "array" in kinds:
        copy["maxItems"] = max_items
        copy["items"] = bounded(copy["items"], max_items)
    if "properties" in copy:
        copy["properties"] = {name: bounded(sub, max_items) for name, sub in copy["properties"].items()}
    return copy
