"""The export file's format and the strict check of a file to import (pure: no database).

A file is ``{"format": "mnemo-export", "version": 2, ...}`` with the sections of :data:`SECTIONS`. Version 2
added to each turn whether it replies to another (``reply_to``, the bot's side of a round) and whether it
was said while remembering was paused (``paused``); version 1 files are still read (a bot turn is then
taken for the reply to the user's turn just before it). The ``threads`` section (what the user mentioned coming
up, and what became of its follow-up) came later in version 2: a file without it has none.
:func:`read_export` refuses a file that is not one as a whole (:class:`InvalidCommand`), and refuses
a bad entry with its reason while keeping the good ones; references to entries that are not in the
file are dropped and reported, and so is the link that closes a loop of ``superseded_by`` (a memory
replacing itself, or A replaced by B replaced by A). :mod:`shared.accounts.user_data` writes such files and loads the
checked entries.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from shared.db.kinds import (
    MEMORY_SOURCES,
    MEMORY_TIERS,
    MEMORY_TYPES,
    ROLES,
    THREAD_STATUSES,
    TODO_KINDS,
    TODO_STATUSES,
)
from shared.errors import InvalidCommand
from shared.memory.policy import MAX_LABEL_CHARS, MAX_MEMORY_CHARS
from shared.reminders.timeparse import EARLIEST_TIME, LATEST_TIME, known_zone, storable_time
from shared.text import is_invisible, is_utf8_encodable

EXPORT_FORMAT = "mnemo-export"
EXPORT_VERSION = 2
READABLE_VERSIONS = (1, 2)
MAX_IMPORT_BYTES = 5 * 1024 * 1024
MAX_ENTRIES = 50_000
"""More entries than this in one section refuse the section."""
MAX_FILE_ENTRIES = 20_000
"""More entries than this in all sections together refuse the file: one import is one transaction,
and this keeps it to seconds (a 5 MB file of tiny entries holds far more)."""
MAX_REASONS = 50
"""The report names at most this many refused entries, then counts the rest."""
SECTION_ORDER = ("episodes", "turns", "memories", "todos", "threads")
MEMORY_TIMES = ("created_at", "updated_at", "last_accessed", "expires_at", "deleted_at", "decayed_at",
                "promotion_reviewed_at", "decay_reviewed_at", "happened_at")
MEMORY_VALUES = ("type", "subject", "predicate", "content", "value", "entities", "importance", "base_importance",
                 "confidence", "source", "verified", "tier", "access_count")


@dataclass(frozen=True)
class Field:
    """How one field of an imported entry is checked."""

    kind: str  # id, text, time, number, int, bool, json, list, object, choice, zone, ref
    required: bool = False
    nullable: bool = False
    limit: int = 0
    low: float = 0
    high: float = 0
    choices: tuple[str, ...] = ()
    refers_to: str = ""


_ID = Field("id", required=True)
_WHEN = Field("time")
_MAYBE_WHEN = Field("time", nullable=True)
SECTIONS: dict[str, dict[str, Field]] = {
    "memories": {
        "id": _ID, "type": Field("choice", required=True, choices=MEMORY_TYPES),
        "subject": Field("text", nullable=True, limit=MAX_LABEL_CHARS),
        "predicate": Field("text", nullable=True, limit=MAX_LABEL_CHARS),
        "content": Field("text", required=True, limit=MAX_MEMORY_CHARS),
        "value": Field("json", nullable=True, limit=4000), "entities": Field("list", limit=4000),
        "importance": Field("number", high=100), "base_importance": Field("number", high=100),
        "confidence": Field("number", high=1), "source": Field("choice", choices=MEMORY_SOURCES),
        "verified": Field("bool"), "tier": Field("choice", choices=MEMORY_TIERS),
        "access_count": Field("int", high=10**9),
        "created_at": _WHEN, "updated_at": _WHEN, **{name: _MAYBE_WHEN for name in MEMORY_TIMES[2:]},
        "superseded_by": Field("ref", nullable=True, refers_to="memories"),
        "source_turn": Field("ref", nullable=True, refers_to="turns"),
    },
    "episodes": {
        "id": _ID, "summary": Field("text", required=True, limit=20_000),
        "started_at": Field("time", required=True), "ended_at": Field("time", required=True),
        "entities": Field("list", limit=4000), "importance": Field("number", high=100),
        "decayed_at": _MAYBE_WHEN, "created_at": _WHEN,
    },
    "todos": {
        "content": Field("text", required=True, limit=MAX_MEMORY_CHARS),  # as the model and /remind may write it
        "due_at": Field("time", required=True),
        "remind_at": _WHEN, "timezone": Field("zone", required=True), "status": Field("choice", choices=TODO_STATUSES),
        "source": Field("choice", choices=("command", "conversation")), "created_at": _WHEN, "sent_at": _MAYBE_WHEN,
        "kind": Field("choice", choices=TODO_KINDS), "wall_clock": Field("bool"),
    },
    "turns": {
        "id": _ID, "role": Field("choice", required=True, choices=ROLES),
        "text": Field("text", required=True, limit=20_000), "created_at": Field("time", required=True),
        "episode": Field("ref", nullable=True, refers_to="episodes"),
        "reply_to": Field("ref", nullable=True, refers_to="turns"), "paused": Field("bool"),
    },
    "threads": {
        "what": Field("text", required=True, limit=MAX_MEMORY_CHARS), "happens_at": Field("time", required=True),
        "day_only": Field("bool"), "timezone": Field("zone", required=True),
        "language": Field("choice", choices=("zh", "en")), "status": Field("choice", choices=THREAD_STATUSES),
        "asked_at": _MAYBE_WHEN, "answered_at": _MAYBE_WHEN, "closed_reason": Field("text", nullable=True, limit=500),
        "created_at": _WHEN, "memory": Field("ref", nullable=True, refers_to="memories"),
        "source_turn": Field("ref", nullable=True, refers_to="turns"),
        "followup_turn": Field("ref", nullable=True, refers_to="turns"),
    },
    "profile": {
        "core_summary": Field("text", limit=4000), "scratchpad": Field("object", limit=8000), "updated_at": _WHEN,
    },
}
TOP_LEVEL = frozenset({"format", "version", "exported_at", "identities", "profile", *SECTION_ORDER})


class _Refused(ValueError):
    """One entry cannot be imported; the message says why."""


@dataclass(frozen=True)
class ImportDocument:
    """A checked export file: the accepted entries of each section, and why the others were refused."""

    sections: dict[str, list[dict[str, Any]]]
    profile: dict[str, Any] | None
    refused: tuple[str, ...]
    version: int = EXPORT_VERSION


def read_export(data: object) -> ImportDocument:
    """Parse and check an export file; a file that is not one raises :class:`InvalidCommand`."""
    if not isinstance(data, bytes | bytearray):
        raise InvalidCommand("import_empty")
    if len(data) > MAX_IMPORT_BYTES:
        raise InvalidCommand("import_too_large", limit_mb=MAX_IMPORT_BYTES // (1024 * 1024))
    if not data.strip():
        raise InvalidCommand("import_empty")
    try:
        document = json.loads(bytes(data).decode("utf-8-sig"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InvalidCommand("import_not_json") from exc
    if not isinstance(document, dict) or document.get("format") != EXPORT_FORMAT:
        raise InvalidCommand("import_wrong_format")
    version = document.get("version")
    if type(version) is not int or version not in READABLE_VERSIONS:
        raise InvalidCommand("import_wrong_version", version=_show(version))
    entries = sum(len(document[name]) for name in SECTION_ORDER if isinstance(document.get(name), list))
    if entries > MAX_FILE_ENTRIES:
        raise InvalidCommand("import_too_many", count=entries, limit=MAX_FILE_ENTRIES)
    refused = [f"{_show(key)}: unknown field, ignored" for key in document if key not in TOP_LEVEL]
    sections = {name: _section(name, document.get(name), refused) for name in SECTION_ORDER}
    _break_supersede_cycles(sections["memories"], refused)
    _drop_dangling_references(sections, refused)
    profile = None
    if document.get("profile") is not None:
        try:
            profile = _entry(SECTIONS["profile"], document["profile"])
        except _Refused as exc:
            refused.append(f"profile: {exc}")
    shown = refused[:MAX_REASONS] + ([f"… and {len(refused) - MAX_REASONS} more"] if len(refused) > MAX_REASONS
                                      else [])
    return ImportDocument(sections, profile, tuple(shown), version)


def _section(name: str, raw: object, refused: list[str]) -> list[dict[str, Any]]:
    if raw is None:
        return []
    if not isinstance(raw, list) or len(raw) > MAX_ENTRIES:
        refused.append(f"{name}: not a list of at most {MAX_ENTRIES} entries")
        return []
    spec, accepted, seen = SECTIONS[name], [], set()
    for index, item in enumerate(raw):
        try:
            entry = _entry(spec, item)
            if "id" in entry and entry["id"] in seen:
                raise _Refused(f"id {entry['id']} appears twice")
        except _Refused as exc:
            refused.append(f"{name}[{index}]: {exc}")
            continue
        seen.add(entry.get("id"))
        accepted.append({**entry, "_index": index})
    return accepted


def _entry(spec: dict[str, Field], raw: object) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise _Refused("not an object")
    unknown = next((key for key in raw if key not in spec), None)
    if unknown is not None:
        raise _Refused(f"unknown field {_show(unknown)}")
    missing = next((name for name, rule in spec.items() if rule.required and raw.get(name) is None), None)
    if missing is not None:
        raise _Refused(f"{missing} is missing")
    return {name: _value(name, rule, raw[name]) for name, rule in spec.items() if name in raw}


def _value(name: str, rule: Field, value: Any) -> Any:
    if value is None:
        if rule.nullable:
            return None
        raise _Refused(f"{name} must not be null")
    checked = _CHECKS[rule.kind](rule, value)
    if checked is _BAD:
        expected = _EXPECTED[rule.kind].format(rule=rule, choices=", ".join(rule.choices))
        raise _Refused(f"{name} {_show(value)} is not {expected}")
    return checked


_BAD = object()


def _text(rule: Field, value: Any) -> Any:
    ok = isinstance(value, str) and len(value) <= rule.limit and storable_json(value)
    return value if ok and (not is_invisible(value) or not rule.required) else _BAD


def _time_value(_rule: Field, value: Any) -> Any:
    try:
        parsed = datetime.fromisoformat(value) if isinstance(value, str) and len(value) <= 64 else None
    except ValueError:
        parsed = None
    stored = storable_time(parsed)  # also refuses a time zone's year 9999 that is year 10000 in UTC
    return stored if stored is not None else _BAD


def _number(rule: Field, value: Any) -> Any:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok and rule.low <= value <= rule.high else _BAD


def _integer(rule: Field, value: Any) -> Any:
    return value if type(value) is int and rule.low <= value <= rule.high else _BAD


def _json(rule: Field, value: Any) -> Any:
    kinds = {"json": object, "list": list, "object": dict}[rule.kind]
    try:
        storable = isinstance(value, kinds) and storable_json(value)
        size = len(json.dumps(value, ensure_ascii=False))
    except (ValueError, TypeError, RecursionError):
        return _BAD
    return value if storable and size <= rule.limit else _BAD


def _zone(_rule: Field, value: Any) -> Any:
    if not isinstance(value, str) or not 0 < len(value) <= 64 or known_zone(value) is None:
        return _BAD
    return value


_CHECKS: dict[str, Callable[[Field, Any], Any]] = {
    "id": lambda _r, v: v if type(v) is int and 1 <= v <= 10**9 else _BAD,
    "ref": lambda _r, v: v if type(v) is int and 1 <= v <= 10**9 else _BAD,
    "text": _text, "time": _time_value, "number": _number, "int": _integer, "json": _json, "list": _json,
    "object": _json, "zone": _zone,
    "bool": lambda _r, v: v if isinstance(v, bool) else _BAD,
    "choice": lambda r, v: v if isinstance(v, str) and v in r.choices else _BAD,
}
_EXPECTED = {
    "id": "a whole number from 1", "ref": "an id in this file", "text": "text of at most {rule.limit} characters",
    "time": f"an ISO 8601 time with a time zone, from {EARLIEST_TIME.year} to {LATEST_TIME.year - 1} in UTC",
    "number": "a number from {rule.low:g} to {rule.high:g}",
    "int": "a whole number from {rule.low:g} to {rule.high:g}", "json": "JSON of at most {rule.limit} characters",
    "list": "a list of at most {rule.limit} characters", "object": "an object of at most {rule.limit} characters",
    "zone": "a known time zone", "bool": "true or false", "choice": "one of {choices}",
}


def _break_supersede_cycles(memories: list[dict[str, Any]], refused: list[str]) -> None:
    """``superseded_by`` must make chains that end in a memory nobody replaced: a memory that replaces
    itself, or a loop of them, would leave every one of them superseded, shown nowhere and deleted by no
    id. In each loop the link of the entry that comes last in the file is dropped (it becomes the current
    version), and reported. Linear in the number of memories."""
    by_id = {entry["id"]: entry for entry in memories if "id" in entry}
    state: dict[int, int] = {}  # 1: on the path being walked, 2: its chain is known to end
    for start in by_id:
        path: list[int] = []
        node: int | None = start
        while node is not None and node in by_id and state.get(node) is None:
            state[node] = 1
            path.append(node)
            node = by_id[node].get("superseded_by")
        if node is not None and state.get(node) == 1:  # the walk came back to itself: a loop
            loop = [by_id[member] for member in path[path.index(node):]]
            last = max(loop, key=lambda entry: entry["_index"])
            refused.append(f"memories[{last['_index']}]: superseded_by {last['superseded_by']} "
                           + ("is the memory itself" if last["superseded_by"] == last["id"] else
                              f"closes a loop of {len(loop)} memories") + "; the link was dropped")
            last["superseded_by"] = None
        for member in path:
            state[member] = 2


def _drop_dangling_references(sections: dict[str, list[dict[str, Any]]], refused: list[str]) -> None:
    """A reference to an entry that is not in the file (or was refused) is dropped, and reported."""
    ids = {name: {entry["id"] for entry in entries if "id" in entry} for name, entries in sections.items()}
    for name, entries in sections.items():
        for entry in entries:
            index = entry.pop("_index")
            for field_name, rule in SECTIONS[name].items():
                target = entry.get(field_name)
                if rule.kind == "ref" and target is not None and target not in ids[rule.refers_to]:
                    entry[field_name] = None
                    refused.append(f"{name}[{index}]: {field_name} {target} is not in this file; the link was dropped")


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not allowed")


MAX_JSON_DEPTH = 32
"""How deeply a stored JSON value may nest: the API's request limit, and far below what its
serializer can show back (about 250 levels), so a value that is stored can always be listed."""


def storable_json(value: Any, depth: int = 0) -> bool:
    """JSON that PostgreSQL's jsonb accepts and Mnemo can show back: no NUL and no lone surrogates in any
    key or string, nested at most :data:`MAX_JSON_DEPTH` levels."""
    if isinstance(value, str):
        return "\x00" not in value and is_utf8_encodable(value)
    if isinstance(value, dict | list) and depth >= MAX_JSON_DEPTH:
        return False
    if isinstance(value, dict):
        return all(storable_json(key, depth + 1) and storable_json(item, depth + 1) for key, item in value.items())
    if isinstance(value, list):
        return all(storable_json(item, depth + 1) for item in value)
    return True


def _show(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:39] + "…"


