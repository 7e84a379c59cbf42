"""What the one LLM call per user message must return (DESIGN.md §3 step 5), and its validation.

:data:`TURN_JSON_SCHEMA` follows the rules of OpenAI structured outputs (strict mode), so a server
that supports ``json_schema`` enforces it. :func:`parse_turn_output` is lenient with everything
but the reply itself, because smaller models in JSON mode wander: fences, prose around the
object, unknown memory types, the seed's legacy entry shape, oversized fields.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shared.db.kinds import MEMORY_TYPES, TODO_KINDS
from shared.emotion import ALL_EMOTIONS, EMOTION_CATEGORIES
from shared.errors import MnemoError
from shared.memory.policy import (
    IMPORTANCE_LEVELS,
    MAX_LABEL_CHARS,
    MAX_MEMORY_CHARS,
    MODEL_WRITTEN_TIERS,
    importance_of,
)
from shared.memory.stated import StatedMemory
from shared.text import clean_text

TURN_MEMORY_TYPES = tuple(kind for kind in MEMORY_TYPES if kind != "todo")  # todos have their own list
TURN_MEMORY_TIERS = MODEL_WRITTEN_TIERS

MAX_RESPONSE_CHARS = 4000
# MAX_MEMORY_CHARS bounds a todo's content too; MAX_LABEL_CHARS the topic, a todo's due, context keys and values
MAX_MEMORY_ENTRIES = 10
MAX_TODOS = 5
MAX_THREADS = 3
MAX_CONTEXT_VARIABLES = 10
MAX_OBJECT_STARTS = 20  # how many '{' in prose are tried as the start of the object
NOTE_OPEN, NOTE_CLOSE = "<app_note>", "</app_note>"
"""The markup around the app's note in the turn's last user message (what changes every turn). A reply
that writes it has begun to copy the prompt back (small models do): it is cut there."""
NOTE_MARKS = ("<app_note", "</app_note")


def _strict_object(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


def _string(description: str | None = None, enum: tuple[str, ...] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    if enum:
        schema["enum"] = list(enum)
    if description:
        schema["description"] = description
    return schema


TURN_JSON_SCHEMA: dict[str, Any] = _strict_object(
    # the reply comes first: a model cut short by max_tokens has written it already (salvage)
    response=_string("The reply to send to the user"),
    emotion=_strict_object(
        primary=_string("The user's main emotion in their last message", ALL_EMOTIONS),
        category=_string(enum=tuple(EMOTION_CATEGORIES)),
        confidence={"type": "number", "description": "0 to 1"},
        indicators={"type": "array", "items": _string(), "description": "Words or cues that show it"},
    ),
    memory_update=_strict_object(
        should_store={"type": "boolean"},
        entries={"type": "array", "items": _strict_object(
            type=_string(enum=TURN_MEMORY_TYPES),
            subject=_string("Who or what it is about, e.g. 'user' or a person's name"),
            predicate=_string("The attribute, e.g. 'likes', 'pet_name', 'birthday'"),
            content=_string("One fact as one self-contained sentence (a message with several facts gives several "
                            "entries)"),
            tier=_string(enum=TURN_MEMORY_TIERS),
            importance=_string("How much it matters: defining (name, family, health, birthdays), lasting (home, "
                               "job, long-held likes), ordinary, passing (a passing like or mood)", IMPORTANCE_LEVELS),
        )},
    ),
    todos={"type": "array", "items": _strict_object(
        content=_string("What to remind the user of"),
        due=_string("ISO 8601 date-time with the user's UTC offset, e.g. 2026-01-03T18:00:00+08:00"),
        kind=_string("reminder: ping at that time ('remind me at 3'); deadline: the time it is due by ('the report "
                     "is due Friday 5pm', '周五前交报告'), pinged ahead of it", TODO_KINDS),
    )},
    threads={"type": "array", "items": _strict_object(
        what=_string("An event coming up for the user, short, in their language: 'your interview', '面试'"),
        when=_string("ISO 8601 date-time with the user's UTC offset"),
        cancelled={"type": "boolean", "description": "true when it is called off"},
    )},
    topic={"type": ["string", "null"], "description": "The conversation's current topic, a few words"},
    context_variables={"type": "array", "items": _strict_object(key=_string(), value=_string())},
    timezone={"type": ["string", "null"],
              "description": "Only when the user says where they live or are, or their time zone: its IANA name "
                             "(e.g. America/Los_Angeles); else null"},
    image_description={"type": ["string", "null"],
                       "description": "Only when the user's message carries an image: one line saying what it shows; "
                                      "else null"},
)


class InvalidTurnOutput(MnemoError):
    """The model's answer is not a JSON object with a non-empty string ``response``."""


@dataclass(frozen=True)
class TodoEntry:
    content: str
    due: str | None  # as the model wrote it (ISO 8601 expected); None when it gave none
    deadline: bool = False
    """``due`` is when it is due by (kind ``deadline``): it pings ahead of it."""


@dataclass(frozen=True)
class ThreadEntry:
    """Something coming up the user mentioned (an open thread), or that they say is cancelled."""

    what: str
    when: str | None  # as the model wrote it (ISO 8601 expected)
    cancelled: bool = False


@dataclass(frozen=True)
class TurnOutput:
    response: str
    emotion: Mapping[str, Any] | None  # raw; normalised by shared.emotion
    memory_update: tuple[StatedMemory, ...] = ()
    todos: tuple[TodoEntry, ...] = ()
    topic: str | None = None
    context_variables: dict[str, str] = field(default_factory=dict)
    timezone: str | None = None
    """The time zone the user said they are in, as the model named it (checked before it is kept)."""
    image_description: str | None = None
    """What the image the user sent shows, in one line (kept with the round: :mod:`shared.attachments`)."""
    threads: tuple[ThreadEntry, ...] = ()
    """What is coming up for the user (:mod:`shared.followups`)."""


def parse_turn_output(text: str) -> TurnOutput:
    """The validated turn in ``text``; raises :class:`InvalidTurnOutput` and nothing else."""
    return parse_turn_data(first_json_object(text))


def parse_turn_data(data: Mapping[str, Any]) -> TurnOutput:
    """The validated turn in an object the model wrote; raises :class:`InvalidTurnOutput`."""
    response = _text(data.get("response"), MAX_RESPONSE_CHARS)
    if not response:
        raise InvalidTurnOutput("'response' must be a non-empty string")
    emotion = data.get("emotion")
    return TurnOutput(
        response=response,
        emotion=emotion if isinstance(emotion, Mapping) else None,
        memory_update=_memory_entries(data.get("memory_update")),
        todos=_todos(data.get("todos")),
        topic=_text(data.get("topic"), MAX_LABEL_CHARS) or None,
        context_variables=_context_variables(data.get("context_variables")),
        timezone=_text(data.get("timezone"), MAX_LABEL_CHARS) or None,
        image_description=_text(data.get("image_description"), MAX_MEMORY_CHARS) or None,
        threads=_threads(data.get("threads")),
    )


def first_json_object(text: object) -> dict[str, Any]:
    """The first JSON object in ``text``, ignoring code fences and prose around it."""
    if not isinstance(text, str) or "{" not in text:
        raise InvalidTurnOutput("the answer contains no JSON object")
    decoder, problem = json.JSONDecoder(), "it is not valid JSON"
    start = text.find("{")
    for _ in range(MAX_OBJECT_STARTS):
        if start < 0:
            break
        try:
            value, _end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError) as exc:
            problem = f"it is not valid JSON ({_first_line(exc)})"
        else:
            if isinstance(value, dict):
                return value
        start = text.find("{", start + 1)
    raise InvalidTurnOutput(f"the answer contains no JSON object: {problem}")


def _memory_entries(update: object) -> tuple[StatedMemory, ...]:
    if isinstance(update, Mapping):
        if _says_no(update.get("should_store", True)):
            return ()
        update = update.get("entries")
    if not isinstance(update, list):
        return ()
    entries = (_memory_entry(raw) for raw in update)
    return tuple(entry for entry in entries if entry is not None)[:MAX_MEMORY_ENTRIES]


def _memory_entry(raw: object) -> StatedMemory | None:
    if not isinstance(raw, Mapping):
        return None
    legacy = "type" not in raw and "category" in raw  # the seed's {category, key, value}
    kind = _text(raw.get("category") if legacy else raw.get("type"), MAX_LABEL_CHARS).lower()
    content = _text(raw.get("value") if legacy else raw.get("content"), MAX_MEMORY_CHARS)
    if kind not in TURN_MEMORY_TYPES or not content:
        return None
    tier = _text(raw.get("tier"), MAX_LABEL_CHARS).lower()
    return StatedMemory(
        type=kind,
        subject=(None if legacy else _text(raw.get("subject"), MAX_LABEL_CHARS)) or "user",
        predicate=_text(raw.get("key") if legacy else raw.get("predicate"), MAX_LABEL_CHARS),
        content=content,
        tier=tier if tier in TURN_MEMORY_TIERS else "long",
        importance=importance_of(raw.get("importance"), default=None),
    )


def _todos(raw: object) -> tuple[TodoEntry, ...]:
    if not isinstance(raw, list):
        return ()
    todos = [
        TodoEntry(content=_text(item.get("content"), MAX_MEMORY_CHARS),
                  due=_text(item.get("due"), MAX_LABEL_CHARS) or None,
                  deadline=_text(item.get("kind"), MAX_LABEL_CHARS).lower() == "deadline")
        for item in raw if isinstance(item, Mapping)
    ]
    return tuple(todo for todo in todos if todo.content)[:MAX_TODOS]


def _threads(raw: object) -> tuple[ThreadEntry, ...]:
    if not isinstance(raw, list):
        return ()
    threads = [
        ThreadEntry(what=_text(item.get("what"), MAX_LABEL_CHARS),
                    when=_text(item.get("when"), MAX_LABEL_CHARS) or None,
                    cancelled=item.get("cancelled") is True or _text(item.get("cancelled"), 8).lower() == "true")
        for item in raw if isinstance(item, Mapping)
    ]
    return tuple(thread for thread in threads if thread.what)[:MAX_THREADS]


def _context_variables(raw: object) -> dict[str, str]:
    if isinstance(raw, Mapping):
        pairs = list(raw.items())
    elif isinstance(raw, list):
        pairs = [(item.get("key"), item.get("value")) for item in raw if isinstance(item, Mapping)]
    else:
        return {}
    variables: dict[str, str] = {}
    for key, value in pairs:
        key_text, value_text = _text(key, MAX_LABEL_CHARS), _scalar_text(value, MAX_LABEL_CHARS)
        if key_text and value_text is not None and len(variables) < MAX_CONTEXT_VARIABLES:
            variables[key_text] = value_text
    return variables


def _text(value: object, limit: int) -> str:
    """``value`` cleaned and cut to ``limit`` when it is a string, else empty."""
    return clean_text(value, limit).strip() if isinstance(value, str) else ""


def _says_no(value: object) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in {"false", "no", "0", ""}
    return value is None or not value


def _scalar_text(value: object, limit: int) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return _text(value, limit) if isinstance(value, str) else None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
