"""Editing memories by hand (the web panel and the memory API): get, create, change, forget by ids.

A memory created here is ``user_stated`` and verified: the user typed it. A change is made in place
(the user corrects their own memory, it keeps its id) and audited with the before and after picture;
a changed text loses its vector until the embedder has seen the new text. Forgetting goes through
:func:`shared.commands.memories.forget_memories`, the same path as ``/forget``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from shared.accounts.user_data import storable_json
from shared.commands.memories import forget_memories
from shared.commands.service import command_text
from shared.db.kinds import MEMORY_TYPES
from shared.db.memory_models import Memory
from shared.db.models import ConversationSession, ConversationTurn
from shared.errors import InvalidCommand, NotFound
from shared.memory.policy import MAX_LABEL_CHARS, MAX_MEMORY_CHARS
from shared.memory.writes import normalise_key
from shared.repositories.memories import snapshot
from shared.repositories.uow import UnitOfWork
from shared.repositories.vectors import VectorIndex

MAX_VALUE_BYTES = 4096
MAX_BATCH_IDS = 500
CREATED_CONFIDENCE = 1.0
RECENT_TURNS_SHOWN = 10
UNSET: Any = object()
"""A field the request did not mention (``None`` is a value: "no key")."""


@dataclass(frozen=True)
class MemoryDraft:
    """What a change or a new memory asks for; ``UNSET`` leaves a field as it is (or at its default)."""

    content: Any = UNSET
    type: Any = UNSET
    key: Any = UNSET
    value: Any = UNSET
    confidence: Any = UNSET


@dataclass(frozen=True)
class WorkingMemory:
    """A conversation session's working memory, as the user may see it."""

    session_id: int
    chat_id: int
    current_topic: str | None
    context_variables: dict[str, Any]
    turn_count: int
    last_emotion: dict[str, Any] | None
    next_strategy: dict[str, Any] | None
    recent_turns: tuple[tuple[str, str, datetime], ...]
    created_at: datetime
    updated_at: datetime
    closed_at: datetime | None


def get_memory(uow: UnitOfWork, user_id: int, memory_id: int) -> Memory:
    memory = uow.memories.get(user_id, memory_id)
    if memory is None:
        raise NotFound("memory_not_found")
    return memory


def create_memory(uow: UnitOfWork, user_id: int, draft: MemoryDraft, now: datetime, *,
                  embeddings_wanted: bool) -> Memory:
    """A new memory exactly as the user wrote it (``source`` user_stated)."""
    if draft.content is UNSET:
        raise InvalidCommand("remember_empty")
    fields = _checked(draft)
    memory = uow.memories.add(Memory(
        user_id=user_id, type=fields.get("type", "fact"), subject="user", predicate=fields.get("predicate"),
        content=fields["content"], value=fields.get("value"), source="user_stated",
        confidence=fields.get("confidence", CREATED_CONFIDENCE), verified=True, tier="long",
        created_at=now, updated_at=now))
    uow.events.record(user_id, memory.id, "add", "user", after=snapshot(memory), reason="added in the panel")
    if embeddings_wanted:
        _owe_embedding(uow, user_id, memory)
    return memory


def update_memory(uow: UnitOfWork, user_id: int, memory_id: int, draft: MemoryDraft, now: datetime, *,
                  embeddings_wanted: bool) -> Memory:
    """Change the fields the draft names; the memory keeps its id."""
    memory = get_memory(uow, user_id, memory_id)
    fields = _checked(draft)
    before = snapshot(memory)
    for name, value in fields.items():
        setattr(memory, name, value)
    if snapshot(memory) == before:
        return memory
    memory.updated_at = now
    memory.verified = True
    if "content" in fields and fields["content"] != before["content"]:
        _drop_vector(uow, memory)
        if embeddings_wanted:
            _owe_embedding(uow, user_id, memory)
    uow.flush()
    uow.events.record(user_id, memory.id, "update", "user", before=before, after=snapshot(memory),
                      reason="edited in the panel")
    return memory


def forget_by_ids(uow: UnitOfWork, user_id: int, memory_ids: list[int]) -> tuple[list[int], list[int]]:
    """Forget those of the ids that are the user's active memories: (deleted, not found)."""
    wanted = sorted(set(memory_ids))
    found = uow.memories.active_ids(user_id, wanted)
    deleted = forget_memories(uow, user_id, found) if found else []
    return deleted, [i for i in wanted if i not in set(deleted)]


def working_memories(uow: UnitOfWork, user_id: int) -> list[WorkingMemory]:
    """The user's open conversation sessions, most recently active first."""
    return [_working(uow, user_id, row) for row in uow.sessions.open_of(user_id)]


def working_memory(uow: UnitOfWork, user_id: int, session_id: int) -> WorkingMemory:
    row = uow.sessions.get(user_id, session_id)
    if row is None:
        raise NotFound("session_not_found")
    return _working(uow, user_id, row)


def _working(uow: UnitOfWork, user_id: int, row: ConversationSession) -> WorkingMemory:
    turns: list[ConversationTurn] = uow.turns.recent(user_id, row.id, RECENT_TURNS_SHOWN)
    return WorkingMemory(
        session_id=row.id, chat_id=row.chat_id, current_topic=row.current_topic,
        context_variables=dict(row.context_variables or {}), turn_count=row.turn_count,
        last_emotion=row.last_emotion, next_strategy=row.next_strategy,
        recent_turns=tuple((t.role, t.text, t.created_at) for t in turns), created_at=row.created_at,
        updated_at=row.updated_at, closed_at=row.closed_at)


def _checked(draft: MemoryDraft) -> dict[str, Any]:
    """The draft's fields as column values, each checked; a bad one raises :class:`InvalidCommand`."""
    fields: dict[str, Any] = {}
    if draft.content is not UNSET:
        fields["content"] = command_text(draft.content, MAX_MEMORY_CHARS, "remember_empty")
    if draft.type is not UNSET:
        if draft.type not in MEMORY_TYPES:
            raise InvalidCommand("unknown_type", types=", ".join(MEMORY_TYPES))
        fields["type"] = draft.type
    if draft.key is not UNSET:
        fields["predicate"] = None if draft.key in (None, "") else normalise_key(
            _key(draft.key))
    if draft.value is not UNSET:
        fields["value"] = _json_value(draft.value)
    if draft.confidence is not UNSET:
        confidence = draft.confidence
        if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not (
                math.isfinite(confidence) and 0 <= confidence <= 1):
            raise InvalidCommand("bad_confidence")
        fields["confidence"] = float(confidence)
    return fields


def _key(value: Any) -> str:
    try:
        return command_text(value, MAX_LABEL_CHARS, "bad_key")
    except InvalidCommand:
        raise InvalidCommand("bad_key", limit=MAX_LABEL_CHARS) from None


def _json_value(value: Any) -> Any:
    if value is None:
        return None
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        raise InvalidCommand("bad_value", limit=MAX_VALUE_BYTES) from None
    if len(encoded.encode("utf-8", "surrogatepass")) > MAX_VALUE_BYTES or not storable_json(value):
        raise InvalidCommand("bad_value", limit=MAX_VALUE_BYTES)
    return value


def _drop_vector(uow: UnitOfWork, memory: Memory) -> None:
    memory.embedding_model = None
    VectorIndex().clear_memory_embedding(uow, memory.user_id, memory.id)


def _owe_embedding(uow: UnitOfWork, user_id: int, memory: Memory) -> None:
    uow.outbox.add("embed_memory", {"memory_id": memory.id, "user_id": user_id},
                   dedup_key=f"embed:{memory.id}:{memory.updated_at.timestamp()}", user_id=user_id)
