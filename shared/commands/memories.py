"""What a user can do with their memories: list, explain, add by hand, and forget with a confirmation.

Every function takes the caller's ``user_id`` and touches nothing else. Forgetting is two steps: a
one-time confirmation token (5 minutes) holds exactly what will be deleted; confirming really
deletes the rows (the optional vector lives in the same row), rewrites the audit of those memories
into tombstones without content and adds one ``forget`` event per memory. A search offers the rounds
whose line or reply contains it beside the memories (what was said is the user's data too); confirming
deletes those rounds, both sides, and memories drawn from them stay, unlinked. The audit is of memories
(``memory_events`` rows name a memory), so a forgotten round leaves no row there, only a count in the log.
Forgetting *all* also removes everything else learnt from the user: every round in every chat, episodes,
working memory, profile and the jobs still owed for them. Reminders are not memories and stay.
"""

from __future__ import annotations

import logging
import math
import re
import secrets
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from shared.accounts import panel_access
from shared.commands.table import memory_type
from shared.db.memory_models import Memory
from shared.errors import ConfirmationInvalid, InvalidCommand, NotFound
from shared.memory import recycle_bin
from shared.memory.policy import DEFAULT_IMPORTANCE, importance_for
from shared.repositories.memories import snapshot
from shared.repositories.round_records import RoundRecord
from shared.repositories.uow import UnitOfWork
from shared.text import is_invisible

log = logging.getLogger(__name__)

CONFIRMATION_LIFETIME = timedelta(minutes=5)
MAX_FORGET_BY_SEARCH = 200
"""A search that matches more memories, or more rounds, than this is refused: narrow it, or forget all."""
PREVIEW_ITEMS = 5
MAX_VERSIONS_FOLLOWED = 5
"""/memories why follows a replaced memory's newer versions this far to name the one in use now."""
PREVIEW_CHARS = 80
FORGOTTEN = "forgotten by the user"
FORGET_ALL = "all"
FORGET_ALL_AND_REMINDERS = "all+reminders"
_TYPE_PREFIX = re.compile(r"^\s*(?P<word>[A-Za-z]{3,10}|[\u4e00-\u9fff]{2})\s*[:：]\s*(?P<rest>.*)\Z", re.S)
_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,64}")


@dataclass(frozen=True)
class MemoryItem:
    """One line of /memories."""

    id: int
    type: str
    content: str
    confidence: float
    access_count: int
    last_accessed: datetime | None
    created_at: datetime
    source: str
    verified: bool = False
    """Confirmed by the user (``/remember``): never forgotten by a rule."""
    binned_at: datetime | None = None
    """When a rule put it in the recycle bin (purged ``BIN_LIFETIME`` later); None while in use."""


@dataclass(frozen=True)
class MemoryPage:
    items: tuple[MemoryItem, ...]
    page: int
    pages: int
    total: int
    type_filter: str | None
    search: str | None
    forgotten: bool = False
    """A page of the recycle bin (``/memories forgotten``), not of the memories in use."""


@dataclass(frozen=True)
class MemoryOrigin:
    """/memories why <id>: the message a memory came from, where the platform can link to it, and what
    became of the memory if it is no longer used."""

    memory: MemoryItem
    message_text: str | None
    message_at: datetime | None
    platform: str | None
    platform_chat_id: str | None
    platform_message_id: str | None
    replaced_by: MemoryItem | None = None
    """The newer version that replaced this memory."""
    current: MemoryItem | None = None
    """The version in use now, when the chain of replacements reaches one in a few steps past ``replaced_by``."""
    forgotten_at: datetime | None = None
    """When a rule put this memory in the recycle bin (still in the export, restorable, no longer used)."""


@dataclass(frozen=True)
class Confirmation:
    """A pending destructive action awaiting a button press or "yes"."""

    token: str
    action: str
    count: int
    preview: tuple[str, ...]
    expires_at: datetime
    everything: bool = False
    """True for "forget all": conversations, summaries and profile go too, not only the memories."""
    reminders: int | None = None
    """For "forget all": how many reminders go too, or None when they stay."""
    rounds: int = 0
    """How many rounds of conversation (the user's line and the bot's reply) go too."""
    round_preview: tuple[str, ...] = ()
    """The newest of those rounds: the day (UTC) and the user's line."""


def memory_item(memory: Memory) -> MemoryItem:
    return MemoryItem(id=memory.id, type=memory.type, content=memory.content, confidence=memory.confidence,
                      access_count=memory.access_count, last_accessed=memory.last_accessed,
                      created_at=memory.created_at, source=memory.source, verified=memory.verified,
                      binned_at=memory.deleted_at)


def list_page(uow: UnitOfWork, user_id: int, type_: str | None, search: str | None, page: int,
              page_size: int) -> MemoryPage:
    """One page of the user's active memories, newest first; a page past the end shows the last."""
    rows, total = uow.memories.page(user_id, type_=type_, search=search, limit=page_size,
                                    offset=(page - 1) * page_size)
    pages = max(1, math.ceil(total / page_size))
    if page > pages:
        page = pages
        rows, total = uow.memories.page(user_id, type_=type_, search=search, limit=page_size,
                                        offset=(page - 1) * page_size)
    return MemoryPage(items=tuple(memory_item(m) for m in rows), page=page, pages=pages, total=total,
                      type_filter=type_, search=search)


def binned_page(uow: UnitOfWork, user_id: int, page: int, page_size: int) -> MemoryPage:
    """One page of the user's recycle bin, latest first; a page past the end shows the last."""
    rows, total = recycle_bin.binned_page(uow, user_id, page, page_size)
    pages = max(1, math.ceil(total / page_size))
    if page > pages:
        page = pages
        rows, total = recycle_bin.binned_page(uow, user_id, page, page_size)
    return MemoryPage(items=tuple(memory_item(m) for m in rows), page=page, pages=pages, total=total,
                      type_filter=None, search=None, forgotten=True)


def restore(uow: UnitOfWork, user_id: int, memory_id: int, now: datetime) -> MemoryItem:
    """Take one of the user's memories back out of the recycle bin."""
    return memory_item(recycle_bin.restore(uow, user_id, memory_id, now))


def origin(uow: UnitOfWork, user_id: int, memory_id: int) -> MemoryOrigin:
    """Where one of the user's memories came from, replaced and forgotten ones too (an export shows them)."""
    memory = uow.memories.get(user_id, memory_id, include_inactive=True)
    if memory is None:
        raise NotFound("memory_not_found")
    newer = _versions_after(uow, user_id, memory)
    latest = newer[-1] if len(newer) > 1 else None
    in_use = latest is not None and latest.superseded_by is None and latest.deleted_at is None
    found = MemoryOrigin(memory_item(memory), None, None, None, None, None,
                         replaced_by=memory_item(newer[0]) if newer else None,
                         current=memory_item(latest) if latest is not None and in_use else None,
                         forgotten_at=memory.deleted_at)
    turn = uow.turns.get(user_id, memory.source_turn_id) if memory.source_turn_id else None
    if turn is None:
        return found
    chat = uow.chats.get(turn.chat_id)
    return replace(found, message_text=turn.text, message_at=turn.created_at,
                   platform=chat.platform if chat else None, platform_chat_id=chat.platform_chat_id if chat else None,
                   platform_message_id=turn.platform_message_id)


def _versions_after(uow: UnitOfWork, user_id: int, memory: Memory) -> list[Memory]:
    """The user's newer versions of a replaced memory, the next one first: at most
    :data:`MAX_VERSIONS_FOLLOWED`, and never round a loop."""
    versions: list[Memory] = []
    seen, next_id = {memory.id}, memory.superseded_by
    while next_id is not None and next_id not in seen and len(versions) < MAX_VERSIONS_FOLLOWED:
        newer = uow.memories.get(user_id, next_id, include_inactive=True)
        if newer is None:
            break
        versions.append(newer)
        seen.add(newer.id)
        next_id = newer.superseded_by
    return versions


def remember(uow: UnitOfWork, user_id: int, text: str, now: datetime, *, embeddings_wanted: bool) -> MemoryItem:
    """Store what the user typed as a manual memory (a leading "preference:" sets the type)."""
    type_, content = _typed(text)
    if not content:
        raise InvalidCommand("remember_empty")
    if is_invisible(content):  # "preference: " and nothing visible after it
        raise InvalidCommand("invisible_text")
    known = uow.memories.active_with_content(user_id, type_, content)
    if known is not None:
        return memory_item(known)
    importance = max(DEFAULT_IMPORTANCE, importance_for(type_, None))
    memory = uow.memories.add(Memory(user_id=user_id, type=type_, content=content, source="user_stated",
                                     confidence=1.0, verified=True, tier="long", importance=importance,
                                     base_importance=importance, created_at=now, updated_at=now))
    uow.events.record(user_id, memory.id, "add", "user", after=snapshot(memory), reason="added with /remember")
    if embeddings_wanted:
        uow.outbox.add("embed_memory", {"memory_id": memory.id, "user_id": user_id},
                       dedup_key=f"embed:{memory.id}", user_id=user_id)
    return memory_item(memory)


def request_forget(uow: UnitOfWork, user_id: int, target: str | int, now: datetime) -> Confirmation:
    """A confirmation for forgetting one memory (an id), those matching a search, or all."""
    everything = target in (FORGET_ALL, FORGET_ALL_AND_REMINDERS)
    reminders = uow.todos.count_pending(user_id) if target == FORGET_ALL_AND_REMINDERS else None
    if everything:
        payload: dict[str, object] = {"action": "forget", "all": True, "reminders": reminders is not None}
        count = uow.memories.count_active(user_id)
        newest, _ = uow.memories.page(user_id, limit=PREVIEW_ITEMS)
        rounds, round_count = uow.round_records.page(user_id, limit=PREVIEW_ITEMS)
    else:
        newest, rounds = _targets(uow, user_id, target)
        payload = {"action": "forget", "memory_ids": [m.id for m in newest], "round_ids": [r.turn_id for r in rounds]}
        count, round_count = len(newest), len(rounds)
    token = secrets.token_urlsafe(16)
    expires_at = now + CONFIRMATION_LIFETIME
    uow.tokens.drop_expired(user_id, now)
    while not uow.tokens.issue(token, user_id, "confirm", payload, now=now, expires_at=expires_at):
        token = secrets.token_urlsafe(16)
    preview = tuple(_short(m.content) for m in newest[:PREVIEW_ITEMS])
    return Confirmation(token=token, action="forget", count=count, preview=preview, expires_at=expires_at,
                        everything=everything, reminders=reminders, rounds=round_count,
                        round_preview=tuple(_round_line(r) for r in rounds[:PREVIEW_ITEMS]))


def confirm_forget(uow: UnitOfWork, user_id: int, token: str, now: datetime) -> int:
    """Carry out a confirmed forget; how many of the memories the user saw were deleted."""
    used = uow.tokens.use(_token(token), "confirm", now, user_id=user_id)
    if used is None or used.payload.get("action") != "forget":
        raise ConfirmationInvalid()
    if used.payload.get("all"):
        return forget_everything(uow, user_id, now, reminders=bool(used.payload.get("reminders")))
    forget_rounds(uow, user_id, [int(i) for i in used.payload.get("round_ids", [])])
    return len(forget_memories(uow, user_id, [int(i) for i in used.payload.get("memory_ids", [])]))


def forget_rounds(uow: UnitOfWork, user_id: int, turn_ids: list[int]) -> list[int]:
    """Delete these rounds of the user, both sides (memories drawn from them stay, unlinked); which went."""
    deleted = uow.round_records.forget(user_id, turn_ids)
    if deleted:
        log.info("forgot %d rounds at the user's request", len(deleted))
    return deleted


def forget_memories(uow: UnitOfWork, user_id: int, memory_ids: list[int]) -> list[int]:
    """Forget these memories with every earlier version of them; which of ``memory_ids`` were deleted."""
    deleted = _forget_memories(uow, user_id, uow.memories.with_earlier_versions(user_id, memory_ids))
    return sorted(set(memory_ids) & set(deleted))


def forget_for_real(uow: UnitOfWork, user_id: int, memory_ids: list[int]) -> list[int]:
    """What the user asked, in words, to forget: these memories with their earlier versions and the rounds they
    were drawn from (where those are still kept); audit tombstones only. Which of ``memory_ids`` were deleted."""
    chain = uow.memories.with_earlier_versions(user_id, memory_ids)
    turn_ids = uow.memories.source_turns(user_id, chain)
    deleted = forget_memories(uow, user_id, memory_ids)
    forget_rounds(uow, user_id, turn_ids)
    return deleted


def forget_long_term(uow: UnitOfWork, user_id: int) -> int:
    """Forget every memory of the user (conversations, summaries and profile stay); how many were active."""
    count = uow.memories.count_active(user_id)
    _forget_memories(uow, user_id, None)
    return count


def cancel_confirmation(uow: UnitOfWork, user_id: int, token: str, now: datetime) -> None:
    if uow.tokens.use(_token(token), "confirm", now, user_id=user_id) is None:
        raise ConfirmationInvalid()


def forget_everything(uow: UnitOfWork, user_id: int, now: datetime, *, reminders: bool = False) -> int:
    """Delete every memory and everything else learnt from the user, and the reminders when asked; sign
    the user out of the web panel. Identities stay; how many memories were active."""
    count = forget_long_term(uow, user_id)
    uow.accounts.delete_learnt(user_id)
    if reminders:
        uow.todos.delete_for_user(user_id)
    panel_access.revoke_web_access(uow, user_id, now)
    uow.forget_loaded()
    return count


def _forget_memories(uow: UnitOfWork, user_id: int, memory_ids: list[int] | None) -> list[int]:
    """Delete the memories (all when None) and leave only tombstones of them in the audit."""
    deleted = uow.memories.purge(user_id, memory_ids)
    if memory_ids is None or deleted:
        uow.events.tombstone(user_id, None if memory_ids is None else deleted, FORGOTTEN)
    uow.events.record_forgotten(user_id, deleted, "user", FORGOTTEN)
    uow.flush()
    return deleted


def _targets(uow: UnitOfWork, user_id: int, target: str | int) -> tuple[list[Memory], list[RoundRecord]]:
    """The memory an id names, or the memories and the rounds a search matches."""
    if isinstance(target, int):
        memory = uow.memories.get(user_id, target)
        if memory is None:
            raise NotFound("memory_not_found")
        return [memory], []
    rows, total = uow.memories.page(user_id, search=target, limit=MAX_FORGET_BY_SEARCH)
    rounds, round_total = uow.round_records.page(user_id, search=target, limit=MAX_FORGET_BY_SEARCH)
    if total == 0 and round_total == 0:
        raise InvalidCommand("forget_no_match", search=_short(target))
    if max(total, round_total) > MAX_FORGET_BY_SEARCH:
        raise InvalidCommand("forget_too_many", count=max(total, round_total), limit=MAX_FORGET_BY_SEARCH)
    return rows, rounds


def _round_line(found: RoundRecord) -> str:
    return f"{found.said_at:%Y-%m-%d} {_short(found.line)}"


def _typed(text: str) -> tuple[str, str]:
    found = _TYPE_PREFIX.match(text)
    kind = memory_type(found["word"]) if found else None
    if found and kind is not None:
        return kind, found["rest"].strip()
    return "fact", text.strip()


def _token(token: object) -> str:
    if not isinstance(token, str) or not _TOKEN.fullmatch(token):
        raise ConfirmationInvalid()
    return token


def _short(text: str) -> str:
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"
