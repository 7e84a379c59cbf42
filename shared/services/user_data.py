"""Export all of one user's data as a JSON file, and import such a file (DESIGN.md §7).

The file (``format: "mnemo-export"``, ``version: 1``) holds the identities (informational), the
memories with their superseded chains, episodes, todos, the profile and the raw turns. Rows refer
to each other by export-local ids (``superseded_by``, ``source_turn``, ``episode``), never by
database ids, and nothing in the file names a user: an import always goes to the caller.
Embeddings are derived data and are not exported; the workers compute them again.

An import is checked strictly against :data:`SECTIONS`: a bad file is refused as a whole, a bad
entry is refused with its reason while the good ones are kept, and an exact duplicate of what the
user already has is skipped, so importing the same file twice adds nothing. Imported turns are
marked extracted (their memories came with the file) and carry no platform message id.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import select

from shared.db.memory_models import Episode, Memory, Todo
from shared.db.models import MEMORY_SOURCES, MEMORY_TIERS, MEMORY_TYPES, ROLES, TODO_STATUSES, ConversationTurn
from shared.db.uow import UnitOfWork
from shared.errors import InvalidCommand
from shared.repositories.memories import snapshot
from shared.text import estimate_tokens, is_utf8_encodable

EXPORT_FORMAT = "mnemo-export"
EXPORT_VERSION = 1
MAX_IMPORT_BYTES = 5 * 1024 * 1024
MAX_ENTRIES = 50_000
"""More entries than this in one section refuse the section."""
MAX_REASONS = 50
"""The report names at most this many refused entries, then counts the rest."""
SECTION_ORDER = ("episodes", "turns", "memories", "todos")
MEMORY_TIMES = ("created_at", "updated_at", "last_accessed", "expires_at", "deleted_at", "decayed_at",
                "promotion_reviewed_at", "decay_reviewed_at")
MEMORY_VALUES = ("type", "subject", "predicate", "content", "value", "importance", "confidence", "source",
                 "verified", "tier", "access_count")


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
        "subject": Field("text", nullable=True, limit=200), "predicate": Field("text", nullable=True, limit=200),
        "content": Field("text", required=True, limit=4000), "value": Field("json", nullable=True, limit=4000),
        "importance": Field("number", high=100), "confidence": Field("number", high=1),
        "source": Field("choice", choices=MEMORY_SOURCES), "verified": Field("bool"),
        "tier": Field("choice", choices=MEMORY_TIERS), "access_count": Field("int", high=10**9),
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
        "content": Field("text", required=True, limit=2000), "due_at": Field("time", required=True),
        "remind_at": _WHEN, "timezone": Field("zone", required=True), "status": Field("choice", choices=TODO_STATUSES),
        "source": Field("choice", choices=("command", "conversation")), "created_at": _WHEN, "sent_at": _MAYBE_WHEN,
    },
    "turns": {
        "id": _ID, "role": Field("choice", required=True, choices=ROLES),
        "text": Field("text", required=True, limit=20_000), "created_at": Field("time", required=True),
        "episode": Field("ref", nullable=True, refers_to="episodes"),
    },
    "profile": {
        "core_summary": Field("text", limit=4000), "scratchpad": Field("object", limit=8000), "updated_at": _WHEN,
    },
}
TOP_LEVEL = frozenset({"format", "version", "exported_at", "identities", "profile", *SECTION_ORDER})


class _Refused(ValueError):
    """One entry cannot be imported; the message says why."""


@dataclass(frozen=True)
class ExportFile:
    filename: str
    data: bytes


@dataclass(frozen=True)
class ImportReport:
    imported: dict[str, int]
    refused: tuple[str, ...]
    duplicates: int = 0
    """Entries skipped because the user already has exactly them."""


@dataclass(frozen=True)
class ImportDocument:
    """A checked export file: the accepted entries of each section, and why the others were refused."""

    sections: dict[str, list[dict[str, Any]]]
    profile: dict[str, Any] | None
    refused: tuple[str, ...]


def export_user_data(uow: UnitOfWork, user_id: int, now: datetime) -> ExportFile:
    """Everything Mnemo holds about the user, as ``mnemo-export-<date>.json``."""
    rows = {model: list(uow.session.scalars(select(model).where(model.user_id == user_id).order_by(model.id)))
            for model in (Memory, Episode, Todo, ConversationTurn)}
    episodes, turns, memories = (_local_ids(rows[model]) for model in (Episode, ConversationTurn, Memory))
    profile = uow.profiles.get(user_id)
    document = {
        "format": EXPORT_FORMAT, "version": EXPORT_VERSION, "exported_at": _time(now),
        "identities": [{"platform": i.platform, "display_name": i.display_name, "locale": i.locale,
                        "timezone": i.timezone} for i in uow.users.identities_of(user_id)],
        "memories": [{"id": memories[m.id], **{name: getattr(m, name) for name in MEMORY_VALUES},
                      **{name: _time(getattr(m, name)) for name in MEMORY_TIMES},
                      "superseded_by": memories.get(m.superseded_by), "source_turn": turns.get(m.source_turn_id)}
                     for m in rows[Memory]],
        "episodes": [{"id": episodes[e.id], "summary": e.summary, "started_at": _time(e.started_at),
                      "ended_at": _time(e.ended_at), "entities": e.entities, "importance": e.importance,
                      "decayed_at": _time(e.decayed_at), "created_at": _time(e.created_at)} for e in rows[Episode]],
        "todos": [{"content": t.content, "due_at": _time(t.due_at), "remind_at": _time(t.remind_at),
                   "timezone": t.timezone, "status": t.status, "source": t.source, "created_at": _time(t.created_at),
                   "sent_at": _time(t.sent_at)} for t in rows[Todo]],
        "profile": None if profile is None else {"core_summary": profile.core_summary,
                                                 "scratchpad": profile.scratchpad,
                                                 "updated_at": _time(profile.updated_at)},
        "turns": [{"id": turns[t.id], "role": t.role, "text": t.text, "created_at": _time(t.created_at),
                   "episode": episodes.get(t.episode_id)} for t in rows[ConversationTurn]],
    }
    data = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return ExportFile(filename=f"mnemo-export-{now:%Y-%m-%d}.json", data=data)


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
    if type(version) is not int or version != EXPORT_VERSION:
        raise InvalidCommand("import_wrong_version", version=_show(version))
    refused = [f"{_show(key)}: unknown field, ignored" for key in document if key not in TOP_LEVEL]
    sections = {name: _section(name, document.get(name), refused) for name in SECTION_ORDER}
    _drop_dangling_references(sections, refused)
    profile = None
    if document.get("profile") is not None:
        try:
            profile = _entry(SECTIONS["profile"], document["profile"])
        except _Refused as exc:
            refused.append(f"profile: {exc}")
    shown = refused[:MAX_REASONS] + ([f"… and {len(refused) - MAX_REASONS} more"] if len(refused) > MAX_REASONS
                                      else [])
    return ImportDocument(sections, profile, tuple(shown))


def import_user_data(uow: UnitOfWork, user_id: int, document: ImportDocument, *, now: datetime, chat_id: int,
                     embeddings_wanted: bool) -> ImportReport:
    """Add the checked entries to the caller's data; imported turns and todos belong to ``chat_id``."""
    importer = _Importer(uow, user_id, now, chat_id)
    episodes = importer.episodes(document.sections["episodes"])
    turns = importer.turns(document.sections["turns"], episodes)
    memory_ids = importer.memories(document.sections["memories"], turns)
    importer.todos(document.sections["todos"])
    importer.profile(document.profile)
    if embeddings_wanted:
        for memory_id in memory_ids:
            uow.outbox.add("embed_memory", {"memory_id": memory_id, "user_id": user_id},
                           dedup_key=f"embed:{memory_id}", user_id=user_id)
    return ImportReport(imported=importer.imported, refused=document.refused + tuple(importer.refused),
                        duplicates=importer.duplicates)


@dataclass
class _Importer:
    """Inserts checked entries in file order, skipping exact duplicates, mapping export-local ids."""

    uow: UnitOfWork
    user_id: int
    now: datetime
    chat_id: int
    imported: dict[str, int] = field(default_factory=lambda: dict.fromkeys((*SECTION_ORDER, "profile"), 0))
    refused: list[str] = field(default_factory=list)
    duplicates: int = 0

    def episodes(self, entries: list[dict[str, Any]]) -> dict[int, int]:
        known = {(e.summary, e.started_at, e.ended_at): e.id for e in self._mine(Episode)}
        return self._insert("episodes", entries, lambda e: known.get((e["summary"], e["started_at"], e["ended_at"])),
                            lambda e: Episode(user_id=self.user_id, **_without(e, "id")))

    def turns(self, entries: list[dict[str, Any]], episodes: dict[int, int]) -> dict[int, int]:
        known = {(t.role, t.text, t.created_at): t.id for t in self._mine(ConversationTurn)}
        return self._insert("turns", entries, lambda t: known.get((t["role"], t["text"], t["created_at"])),
                            lambda t: ConversationTurn(
                                user_id=self.user_id, chat_id=self.chat_id, role=t["role"], text=t["text"],
                                token_estimate=estimate_tokens(t["text"]), extracted=True,
                                episode_id=episodes.get(t.get("episode")), created_at=t["created_at"]))

    def memories(self, entries: list[dict[str, Any]], turns: dict[int, int]) -> list[int]:
        mine = self._mine(Memory)
        exact = {(m.type, m.subject, m.predicate, m.content, m.created_at): m.id for m in mine}
        live = {(m.type, _fold(m.content)): m.id for m in mine if m.superseded_by is None and m.deleted_at is None}

        def known(e: dict[str, Any]) -> int | None:
            found = exact.get((e["type"], e.get("subject"), e.get("predicate"), e["content"], e.get("created_at")))
            if found is None and e.get("superseded_by") is None and e.get("deleted_at") is None:
                found = live.get((e["type"], _fold(e["content"])))
            return found

        def build(e: dict[str, Any]) -> Memory:
            values = {"source": "manual", "created_at": self.now, **_without(e, "id", "superseded_by", "source_turn")}
            values.setdefault("updated_at", values["created_at"])
            return Memory(user_id=self.user_id, source_turn_id=turns.get(e.get("source_turn")), **values)

        before = set(exact.values())
        mapping = self._insert("memories", entries, known, build)
        added = [(self.uow.session.get(Memory, mapping[e["id"]]), e) for e in entries if mapping[e["id"]] not in before]
        for memory, entry in added:
            memory.superseded_by = mapping.get(entry.get("superseded_by"))
        self.uow.session.flush()
        for memory, _ in added:
            self.uow.events.record(self.user_id, memory.id, "add", "user", after=snapshot(memory), reason="imported")
        return [memory.id for memory, _ in added]

    def todos(self, entries: list[dict[str, Any]]) -> None:
        known = {(t.content, t.due_at): t.id for t in self._mine(Todo)}
        self._insert("todos", [{**e, "id": n} for n, e in enumerate(entries)],
                     lambda t: known.get((t["content"], t["due_at"])),
                     lambda t: Todo(user_id=self.user_id, chat_id=self.chat_id, updated_at=self.now,
                                    **{"remind_at": t["due_at"], "created_at": self.now, **_without(t, "id")}))

    def profile(self, entry: dict[str, Any] | None) -> None:
        if entry is None:
            return
        current = self.uow.profiles.get(self.user_id)
        summary, scratchpad = entry.get("core_summary", ""), entry.get("scratchpad", {})
        if current is not None and (current.core_summary, current.scratchpad) == (summary, scratchpad):
            self.duplicates += 1
        elif current is not None and (current.core_summary or current.scratchpad):
            self.refused.append("profile: you already have a profile; yours was kept")
        else:
            self.uow.profiles.save(self.user_id, summary, scratchpad, entry.get("updated_at", self.now))
            self.imported["profile"] = 1

    def _insert(self, section: str, entries: list[dict[str, Any]], known: Callable[[dict], int | None],
                build: Callable[[dict], Any]) -> dict[int, int]:
        """Export-local id → database id for every entry; only the ones not known are inserted."""
        mapping: dict[int, int] = {}
        fresh: list[tuple[int, Any]] = []
        for entry in entries:
            found = known(entry)
            if found is None:
                fresh.append((entry["id"], build(entry)))
            else:
                mapping[entry["id"]] = found
                self.duplicates += 1
        self.uow.session.add_all([row for _, row in fresh])
        self.uow.session.flush()
        mapping.update({local: row.id for local, row in fresh})
        self.imported[section] = len(fresh)
        return mapping

    def _mine(self, model) -> list[Any]:
        return list(self.uow.session.scalars(select(model).where(model.user_id == self.user_id)))


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
    return value if ok and (value.strip() or not rule.required) else _BAD


def _time_value(_rule: Field, value: Any) -> Any:
    try:
        parsed = datetime.fromisoformat(value) if isinstance(value, str) and len(value) <= 64 else None
    except ValueError:
        parsed = None
    return parsed if parsed is not None and parsed.tzinfo is not None else _BAD


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
    if not isinstance(value, str) or not 0 < len(value) <= 64:
        return _BAD
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
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
    "time": "an ISO 8601 time with a time zone", "number": "a number from {rule.low:g} to {rule.high:g}",
    "int": "a whole number from {rule.low:g} to {rule.high:g}", "json": "JSON of at most {rule.limit} characters",
    "list": "a list of at most {rule.limit} characters", "object": "an object of at most {rule.limit} characters",
    "zone": "a known time zone", "bool": "true or false", "choice": "one of {choices}",
}


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


def storable_json(value: Any) -> bool:
    """JSON that PostgreSQL's jsonb accepts: no NUL and no lone surrogates in any key or string."""
    if isinstance(value, str):
        return "\x00" not in value and is_utf8_encodable(value)
    if isinstance(value, dict):
        return all(storable_json(key) and storable_json(item) for key, item in value.items())
    if isinstance(value, list):
        return all(storable_json(item) for item in value)
    return True


def _show(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:39] + "…"


def _local_ids(rows: list[Any]) -> dict[int, int]:
    return {row.id: position for position, row in enumerate(rows, 1)}


def _without(entry: dict[str, Any], *names: str) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k not in names and not (k == "value" and v is None)}


def _fold(text: str) -> str:
    return " ".join(text.lower().split())


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat()
