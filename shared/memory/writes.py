"""Storing what the user stated: new memories, superseding old values, and the audit of each change.

Rules (DESIGN.md §3 step 5, §4): an entry from the user's own words is stored at once as
``user_stated`` with confidence ≥ 0.9. The same user, type, subject and predicate means an update:
the old row stays, marked ``superseded_by`` the new one. Saying the same thing again, in nearly the
same words and under any key, only refreshes the existing memory. Every change is written to
``memory_events``.

Whoever proposed the entries (the turn's LLM call, the knowledge monitor or the offline rules), the
guard of :mod:`shared.speech.guard` runs here first: a question — the entry's text, or the whole message it
came from where the caller knows it — never adds, changes or supersedes a memory, and neither do
hypotheticals, requests, greetings or the bot's own words, nor text with nothing visible in it. Refused entries
are logged and left out of the result.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from shared.db.memory_models import Memory
from shared.memory.policy import MAX_LABEL_CHARS, MODEL_WRITTEN_TIERS, TRANSIENT_LIFETIME, importance_for
from shared.memory.stated import StatedMemory
from shared.repositories.memories import snapshot
from shared.repositories.uow import UnitOfWork
from shared.search.tokenizer import query_terms
from shared.speech.guard import near_same, rejection
from shared.speech.statements import read_statements
from shared.text import is_invisible

STATED_CONFIDENCE = 0.9
INFERRED_CONFIDENCE = 0.6
STATED_SOURCES = ("user_stated", "inferred")
"""The sources of what the conversation yields: the user's own statement, or what a model concluded from it."""
CONTEXT_TURNS = 30
"""How far back in the session the bot's replies before the source message are looked for."""
BOT_LINES_CHECKED = 3
NEAR_DUPLICATE_CANDIDATES = 5
MAX_DUPLICATE_QUERY_TERMS = 8

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MemoryWrite:
    """What happened to one stated memory: added, superseded an older value, or already known."""

    memory: Memory
    action: str
    replaced: Memory | None = None


_KEY_SEPARATORS = re.compile(r"[\s\-]+")


def normalise_key(value: str) -> str:
    """Subjects and predicates compare without case, spacing or punctuation differences."""
    return _KEY_SEPARATORS.sub("_", value.strip().lower()).strip("_")[:MAX_LABEL_CHARS] or "general"


def store_stated_memories(uow: UnitOfWork, user_id: int, entries: Iterable[StatedMemory], *, now: datetime,
                          source_turn_id: int | None, session_id: int | None, actor: str = "llm",
                          source_text: str | None = None,
                          bot_lines: Sequence[str] | None = None) -> list[MemoryWrite]:
    """Store each entry for ``user_id`` and audit it; returns what was done (refused entries are left out).

    ``source_text`` is the message the entries came from, when the caller knows it exactly (the hot path):
    nothing is stored from a message that states nothing. ``bot_lines`` are the bot's replies before it;
    when not given they are looked up from the session's recent turns."""
    entries = list(entries)
    if entries and bot_lines is None:
        bot_lines = _bot_lines_before(uow, user_id, source_turn_id, session_id)
    writes = []
    for entry in entries:
        reason = "no visible text" if is_invisible(entry.content) else rejection(
            entry.content, source_text=source_text, bot_lines=bot_lines or ())
        if reason is not None:
            log.info("a memory of user %s not stored (%s)", user_id, reason)
            log.debug("the memory not stored: %r", entry.content[:80])  # what users say: DEBUG only
            continue
        subject, predicate = normalise_key(entry.subject), normalise_key(entry.predicate)
        current = uow.memories.active_by_key(user_id, entry.type, subject, predicate)
        same = next((m for m in current if near_same(m.content, entry.content)), None) or _said_before(
            uow, user_id, entry.content)
        if same is not None:
            writes.append(_refresh(uow, same, entry, now, actor))
            continue
        writes.append(_add(uow, user_id, entry, subject, predicate, current, now=now, actor=actor,
                           source_turn_id=source_turn_id, session_id=session_id))
    uow.flush()
    return writes


def _add(uow: UnitOfWork, user_id: int, entry: StatedMemory, subject: str, predicate: str, current: list[Memory], *,
         now: datetime, actor: str, source_turn_id: int | None, session_id: int | None) -> MemoryWrite:
    """A new memory, superseding the current ones of the same key."""
    importance = (entry.importance if entry.importance is not None
                  else importance_for(entry.type, predicate, entry.content))
    memory = uow.memories.add(Memory(
        user_id=user_id, type=entry.type, subject=subject, predicate=predicate, content=entry.content,
        entities=list(entry.entities), happened_at=entry.happened_at, source=_source(entry.source),
        importance=importance, base_importance=importance,
        confidence=STATED_CONFIDENCE if entry.source != "inferred" else INFERRED_CONFIDENCE, tier=_tier(entry.tier),
        expires_at=now + TRANSIENT_LIFETIME if entry.tier == "transient" else None,
        source_turn_id=source_turn_id, session_id=session_id, created_at=now, updated_at=now))
    uow.events.record(user_id, memory.id, "add", actor, after=snapshot(memory),
                      reason="stated by the user" if memory.source == "user_stated" else "inferred by the model")
    replaced = None
    for old in current:
        _keep_the_rest(uow, old, (entry.type, predicate), now=now, actor=actor)
        before = snapshot(old)
        old.superseded_by = memory.id
        old.updated_at = now
        uow.events.record(user_id, old.id, "supersede", actor, before=before, after=snapshot(old),
                          reason=f"replaced by memory {memory.id}")
        replaced = old
    return MemoryWrite(memory, "supersede" if replaced else "add", replaced)


def _keep_the_rest(uow: UnitOfWork, old: Memory, corrected: tuple[str, str], *, now: datetime, actor: str) -> None:
    """One fact per memory: before a memory that said several facts ("I live in Portland with my wife Jenny") is
    superseded by the correction of one of them, each other fact it said becomes a memory of its own (unless the
    user already has one under that key, or in nearly those words), so the correction replaces only what it names."""
    for statement in read_statements(old.content):
        key = (statement.type, normalise_key(statement.predicate))
        if key == corrected or uow.memories.active_by_key(old.user_id, key[0], old.subject, key[1]):
            continue
        if _said_before(uow, old.user_id, statement.content) not in (None, old):
            continue
        importance = max(old.base_importance, importance_for(*key, statement.content))
        part = uow.memories.add(Memory(
            user_id=old.user_id, type=key[0], subject=old.subject, predicate=key[1], content=statement.content,
            source=old.source, confidence=old.confidence, tier=old.tier, importance=importance,
            base_importance=importance, verified=old.verified, source_turn_id=old.source_turn_id,
            session_id=old.session_id, created_at=now, updated_at=now, last_accessed=old.last_accessed))
        uow.events.record(old.user_id, part.id, "add", actor, after=snapshot(part),
                          reason=f"split from memory {old.id} when another fact in it was corrected")


def _said_before(uow: UnitOfWork, user_id: int, content: str) -> Memory | None:
    """An active memory of the user, under any key, that says nearly the same as ``content``."""
    terms = query_terms(content)[:MAX_DUPLICATE_QUERY_TERMS]
    if not terms:
        return None
    candidates = uow.memories.text_candidates(user_id, terms, NEAR_DUPLICATE_CANDIDATES)
    return next((memory for memory, _rank in candidates if near_same(memory.content, content)), None)


def _bot_lines_before(uow: UnitOfWork, user_id: int, turn_id: int | None, session_id: int | None) -> tuple[str, ...]:
    """The bot's last replies before the source turn in its session (() when unknown)."""
    if turn_id is None or session_id is None:
        return ()
    turns = uow.turns.recent(user_id, session_id, CONTEXT_TURNS)
    lines = tuple(turn.text for turn in turns if turn.role == "assistant" and turn.id < turn_id)
    return lines[-BOT_LINES_CHECKED:]


def _refresh(uow: UnitOfWork, memory: Memory, entry: StatedMemory, now: datetime, actor: str) -> MemoryWrite:
    """Said again: what the user now states is no longer only inferred, and it matters at least as much as said."""
    before = snapshot(memory)
    if entry.source == "user_stated":
        memory.confidence = max(memory.confidence, STATED_CONFIDENCE)
        memory.source = "user_stated" if memory.source == "inferred" else memory.source
    if entry.importance is not None and entry.importance > memory.base_importance:
        memory.base_importance = entry.importance
        memory.importance = max(memory.importance, entry.importance)
    memory.updated_at = now
    uow.events.record(memory.user_id, memory.id, "update", actor, before=before, after=snapshot(memory),
                      reason="stated again")
    return MemoryWrite(memory, "refresh")


def _source(source: str) -> str:
    return source if source in STATED_SOURCES else "user_stated"


def _tier(tier: str) -> str:
    return tier if tier in MODEL_WRITTEN_TIERS else "long"
