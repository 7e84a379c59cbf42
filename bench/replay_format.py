"""The file ``mnemo bench replay`` plays: one conversation per line (JSON Lines), checked strictly.

A line is ``{"id", "user": {"name", "language", "timezone"}, "memories": [{"id", "at", "text"}],
"turns": [{"id", "at", "role": "user"|"assistant", "text"}], "questions": [{"id", "at", "text",
"evidence": [turn or memory ids], "kind"}]}``. Times are ISO 8601 (without an offset they are UTC);
turns are in time order; turn and memory ids are unique within their conversation (evidence names
either); every question has evidence and all of it names a turn or memory of the conversation. A line
that breaks a rule is refused with its line number and the reason (:class:`ReplayFormatError`).
Pure: no database.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

ROLES = ("user", "assistant")


class ReplayFormatError(ValueError):
    """A replay file that cannot be played; the message names the line and what is wrong."""


@dataclass(frozen=True)
class ReplayUser:
    name: str
    language: str
    timezone: str


@dataclass(frozen=True)
class ReplayMemory:
    """A memory the user brings along: imported before the conversation starts."""

    id: str
    at: datetime
    text: str


@dataclass(frozen=True)
class ReplayTurn:
    id: str
    at: datetime
    role: str
    text: str


@dataclass(frozen=True)
class ReplayQuestion:
    id: str
    at: datetime
    text: str
    evidence: tuple[str, ...]
    kind: str


@dataclass(frozen=True)
class ReplayConversation:
    id: str
    user: ReplayUser
    memories: tuple[ReplayMemory, ...]
    turns: tuple[ReplayTurn, ...]
    questions: tuple[ReplayQuestion, ...]


def read_replay(path: Path, limit: int | None = None) -> list[ReplayConversation]:
    """The conversations of a replay file (the first ``limit`` of them when given); blank lines are skipped."""
    conversations: list[ReplayConversation] = []
    seen: set[str] = set()
    with Path(path).open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if limit is not None and len(conversations) >= limit:
                break
            if not line.strip():
                continue
            try:
                conversation = parse_conversation(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ReplayFormatError(f"{path}:{number}: not JSON ({exc.msg} at column {exc.colno})") from exc
            except ReplayFormatError as exc:
                raise ReplayFormatError(f"{path}:{number}: {exc}") from exc
            if conversation.id in seen:
                raise ReplayFormatError(f"{path}:{number}: conversation id {conversation.id!r} again")
            seen.add(conversation.id)
            conversations.append(conversation)
    return conversations


def parse_conversation(raw: Any) -> ReplayConversation:
    """One line's object as a conversation; raises :class:`ReplayFormatError` naming the bad field."""
    record = _object(raw, "the line")
    user = _object(record.get("user"), "user")
    memories = tuple(ReplayMemory(_text(m, "id", where), _time(m, where), _text(m, "text", where))
                     for m, where in _items(record, "memories"))
    turns = tuple(ReplayTurn(_text(t, "id", where), _time(t, where), _role(t, where), _text(t, "text", where))
                  for t, where in _items(record, "turns"))
    questions = tuple(ReplayQuestion(_text(q, "id", where), _time(q, where), _text(q, "text", where),
                                     _evidence(q, where), _text(q, "kind", where))
                      for q, where in _items(record, "questions"))
    conversation = ReplayConversation(_text(record, "id", "the line"),
                                      ReplayUser(_text(user, "name", "user"), _text(user, "language", "user"),
                                                 _zone(user)),
                                      memories, turns, questions)
    _check_references(conversation)
    return conversation


def write_replay(path: Path, conversations: list[ReplayConversation]) -> None:
    """Writes conversations in the replay format (times as ISO 8601 with their offset)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with Path(path).open("w", encoding="utf-8") as out:
        for conversation in conversations:
            out.write(json.dumps(asdict(conversation), ensure_ascii=False, default=_iso) + "\n")


def _iso(value: object) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


def _check_references(conversation: ReplayConversation) -> None:
    ids: set[str] = set()
    for kind, item_id in [("memory", m.id) for m in conversation.memories] + [("turn", t.id)
                                                                              for t in conversation.turns]:
        if item_id in ids:
            raise ReplayFormatError(f"{kind} id {item_id!r} is used twice (turn and memory ids share one space)")
        ids.add(item_id)
    for earlier, later in zip(conversation.turns, conversation.turns[1:], strict=False):
        if later.at < earlier.at:
            raise ReplayFormatError(f"turn {later.id!r} is earlier than turn {earlier.id!r}: turns go in time order")
    asked: set[str] = set()
    for question in conversation.questions:
        if question.id in asked:
            raise ReplayFormatError(f"question id {question.id!r} is used twice")
        asked.add(question.id)
        unknown = [item for item in question.evidence if item not in ids]
        if unknown:
            raise ReplayFormatError(f"question {question.id!r}: evidence {unknown[0]!r} is no turn or memory "
                                    "of the conversation")


def _object(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ReplayFormatError(f"{where}: an object is wanted, not {type(raw).__name__}")
    return raw


def _items(record: dict[str, Any], name: str) -> list[tuple[dict[str, Any], str]]:
    raw = record.get(name, [])
    if not isinstance(raw, list):
        raise ReplayFormatError(f"{name}: a list is wanted, not {type(raw).__name__}")
    return [(_object(item, f"{name}[{index}]"), f"{name}[{index}]") for index, item in enumerate(raw)]


def _text(record: dict[str, Any], name: str, where: str) -> str:
    value = record.get(name)
    if isinstance(value, int) and not isinstance(value, bool) and name == "id":
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise ReplayFormatError(f"{where}.{name}: a non-empty string is wanted, not {value!r}")
    return value


def _time(record: dict[str, Any], where: str) -> datetime:
    value = _text(record, "at", where)
    try:
        at = datetime.fromisoformat(value)
    except ValueError as exc:
        raise ReplayFormatError(f"{where}.at: {value!r} is no ISO 8601 time") from exc
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _role(record: dict[str, Any], where: str) -> str:
    role = record.get("role")
    if role not in ROLES:
        raise ReplayFormatError(f"{where}.role: 'user' or 'assistant' is wanted, not {role!r}")
    return role


def _evidence(record: dict[str, Any], where: str) -> tuple[str, ...]:
    raw = record.get("evidence")
    if not isinstance(raw, list) or not raw:
        raise ReplayFormatError(f"{where}.evidence: a non-empty list of turn or memory ids is wanted")
    if not all(isinstance(item, str | int) and not isinstance(item, bool) for item in raw):
        raise ReplayFormatError(f"{where}.evidence: ids are strings")
    return tuple(dict.fromkeys(str(item) for item in raw))


def _zone(user: dict[str, Any]) -> str:
    name = _text(user, "timezone", "user")
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ReplayFormatError(f"user.timezone: {name!r} is no IANA time zone") from exc
    return name
