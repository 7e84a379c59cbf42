"""Storing what the user stated: new memories, superseding old values, and the audit of each change.

Rules (DESIGN.md §3 step 5, §4): an entry from the user's own words is stored at once as
``user_stated`` with confidence ≥ 0.9. The same user, type, subject and predicate means an update:
the old row stays, marked ``superseded_by`` the new one. Saying the same thing again only refreshes
the existing memory. Every change is written to ``memory_events``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from shared.db.memory_models import Memory
from shared.db.uow import UnitOfWork
from shared.llm.turn_schema import MemoryUpdateEntry
from shared.repositories.memories import snapshot

STATED_CONFIDENCE = 0.9
TRANSIENT_LIFETIME = timedelta(hours=24)
TIERS_FROM_CONVERSATION = ("transient", "short", "long")


StatedMemory = MemoryUpdateEntry
"""One thing the user said about themselves (or someone in their life): the same shape whether the
turn's LLM call, the knowledge monitor or the offline rules found it."""


@dataclass(frozen=True)
class MemoryWrite:
    """What happened to one stated memory: added, superseded an older value, or already known."""

    memory: Memory
    action: str
    replaced: Memory | None = None


def normalise_key(value: str) -> str:
    """Subjects and predicates compare without case, spacing or punctuation differences."""
    return re.sub(r"[\s\-]+", "_", value.strip().lower()).strip("_")[:100] or "general"


def store_stated_memories(uow: UnitOfWork, user_id: int, entries: Iterable[StatedMemory], *, now: datetime,
                          source_turn_id: int | None, session_id: int | None, actor: str = "llm") -> list[MemoryWrite]:
    """Store each entry for ``user_id`` and audit it; returns what was done."""
    writes = []
    for entry in entries:
        subject, predicate = normalise_key(entry.subject), normalise_key(entry.predicate)
        current = uow.memories.active_by_key(user_id, entry.type, subject, predicate)
        same = next((m for m in current if _same_text(m.content, entry.content)), None)
        if same is not None:
            writes.append(_refresh(uow, same, now, actor))
            continue
        memory = uow.memories.add(Memory(
            user_id=user_id, type=entry.type, subject=subject, predicate=predicate, content=entry.content,
            source="user_stated", confidence=STATED_CONFIDENCE, tier=_tier(entry.tier),
            expires_at=now + TRANSIENT_LIFETIME if entry.tier == "transient" else None,
            source_turn_id=source_turn_id, session_id=session_id, created_at=now, updated_at=now))
        uow.events.record(user_id, memory.id, "add", actor, after=snapshot(memory), reason="stated by the user")
        replaced = None
        for old in current:
            before = snapshot(old)
            old.superseded_by = memory.id
            old.updated_at = now
            uow.events.record(user_id, old.id, "supersede", actor, before=before, after=snapshot(old),
                              reason=f"replaced by memory {memory.id}")
            replaced = old
        writes.append(MemoryWrite(memory, "supersede" if replaced else "add", replaced))
    uow.session.flush()
    return writes


def _refresh(uow: UnitOfWork, memory: Memory, now: datetime, actor: str) -> MemoryWrite:
    before = snapshot(memory)
    memory.confidence = max(memory.confidence, STATED_CONFIDENCE)
    memory.updated_at = now
    uow.events.record(memory.user_id, memory.id, "update", actor, before=before, after=snapshot(memory),
                      reason="stated again")
    return MemoryWrite(memory, "refresh")


def _tier(tier: str) -> str:
    return tier if tier in TIERS_FROM_CONVERSATION else "long"


def _same_text(left: str, right: str) -> bool:
    return " ".join(left.lower().split()).rstrip("。.!！") == " ".join(right.lower().split()).rstrip("。.!！")
