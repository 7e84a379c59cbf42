"""Memories and their audit trail. Every method takes the owning ``user_id`` and filters by it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    CTE,
    BigInteger,
    ColumnElement,
    Select,
    bindparam,
    delete,
    func,
    literal_column,
    null,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session, aliased

from shared.db.memory_models import Memory, MemoryEvent
from shared.repositories.bulk_rows import insert_values
from shared.repositories.ranked_search import MEMORY_BM25, RankedCandidates, bm25_parameters
from shared.search.tsquery import like_pattern, prefix_tsquery
from shared.text import clean_text

SNAPSHOT_FIELDS = ("type", "subject", "predicate", "content", "value", "importance", "confidence",
                   "source", "tier", "verified", "superseded_by", "expires_at", "deleted_at")


def snapshot(memory: Memory) -> dict[str, Any]:
    """The audit's before/after picture of a memory (JSON-safe)."""
    picture: dict[str, Any] = {}
    for name in SNAPSHOT_FIELDS:
        value = getattr(memory, name)
        picture[name] = value.isoformat() if isinstance(value, datetime) else value
    return picture


_RANKED_MEMORIES = (select(Memory, MEMORY_BM25.c.score, MEMORY_BM25.c.next_to)
                    .join(MEMORY_BM25, Memory.id == MEMORY_BM25.c.id)
                    .order_by(MEMORY_BM25.c.score.desc(), Memory.id.desc()))


def active() -> ColumnElement[bool]:
    """Memories that count: not deleted, not superseded."""
    return Memory.deleted_at.is_(None) & Memory.superseded_by.is_(None)


def _version_chain(user_id: int, memory_ids: Sequence[int]) -> CTE:
    """The ids of these memories of the user and of every older row they superseded."""
    chain = (select(Memory.id).where(Memory.user_id == user_id, Memory.id.in_(memory_ids))
             .cte("chain", recursive=True))
    return chain.union(select(Memory.id).join(chain, Memory.superseded_by == chain.c.id)
                       .where(Memory.user_id == user_id))


class MemoryRepository:
    """Reads and writes one user's memories; search tokens follow the text automatically."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def add(self, memory: Memory) -> Memory:
        memory.content = clean_text(memory.content)
        self.session.add(memory)
        self.session.flush()
        return memory

    def get(self, user_id: int, memory_id: int, *, include_inactive: bool = False,
            lock: bool = False) -> Memory | None:
        """The user's memory (active unless ``include_inactive``); ``lock`` holds it for this transaction."""
        query = select(Memory).where(Memory.user_id == user_id, Memory.id == memory_id)
        if not include_inactive:
            query = query.where(active())
        if lock:
            query = query.with_for_update()
        return self.session.scalars(query).one_or_none()

    def active_by_key(self, user_id: int, type_: str, subject: str | None, predicate: str | None) -> list[Memory]:
        """Active memories of the same type, subject and predicate (the candidates to supersede)."""
        query = select(Memory).where(
            Memory.user_id == user_id,
            Memory.type == type_,
            Memory.subject.is_not_distinct_from(subject),
            Memory.predicate.is_not_distinct_from(predicate),
            active(),
        )
        return list(self.session.scalars(query.order_by(Memory.id)))

    def page(self, user_id: int, *, type_: str | None = None, search: str | None = None,
             limit: int = 10, offset: int = 0) -> tuple[list[Memory], int]:
        """One page of the user's active memories (newest first) and the total that match."""
        query = select(Memory).where(Memory.user_id == user_id, active())
        if type_ is not None:
            query = query.where(Memory.type == type_)
        if search:
            query = query.where(Memory.content.ilike(like_pattern(search), escape="\\"))
        total = self.session.scalar(select(func.count()).select_from(query.subquery())) or 0
        rows = self.session.scalars(query.order_by(Memory.id.desc()).limit(limit).offset(offset))
        return list(rows), total

    def text_candidates(self, user_id: int, terms: Sequence[str], limit: int = 50) -> list[tuple[Memory, float]]:
        """Active memories matching any term as a prefix, with their ``ts_rank``, best first."""
        tsquery = prefix_tsquery(terms)
        if tsquery is None:
            return []
        query_expr = func.to_tsquery(literal_column("'simple'::regconfig"), tsquery)
        rank = func.ts_rank(Memory.search_tsv, query_expr).label("rank")
        query: Select[Memory, float] = (
            select(Memory, rank)
            .where(Memory.user_id == user_id, active(), Memory.search_tsv.op("@@")(query_expr))
            .order_by(rank.desc(), Memory.id.desc())
            .limit(limit)
        )
        return [(memory, float(score)) for memory, score in self.session.execute(query)]

    def ranked_candidates(self, user_id: int, weighted_terms: Sequence[tuple[str, float]],
                          limit: int = 50, contains: Sequence[str] = ()) -> list[tuple[Memory, float]]:
        """Active memories matching any term as a prefix, with their BM25 score over this user's
        memories (rare words count more; see :mod:`shared.repositories.ranked_search`), best first;
        then, up to ``limit``, the newest whose content ``contains`` one of those words (score 0)."""
        return self.ranked_with_adjacent(user_id, weighted_terms, limit, contains).found

    def ranked_with_adjacent(self, user_id: int, weighted_terms: Sequence[tuple[str, float]], limit: int = 50,
                             contains: Sequence[str] = (), seeds: int = 0) -> RankedCandidates:
        """:meth:`ranked_candidates`, and the memories noted just before and after the best ``seeds``."""
        parameters = bm25_parameters(user_id, weighted_terms, limit, contains, seeds)
        if parameters is None:
            return RankedCandidates([])
        rows = self.session.execute(_RANKED_MEMORIES, parameters).all()
        return RankedCandidates([(memory, float(score)) for memory, score, _ in rows],
                                {memory.id: tuple(next_to) for memory, _, next_to in rows if next_to})

    def touch(self, user_id: int, memory_ids: Sequence[int], now: datetime) -> None:
        """Access tracking for memories that went into a prompt."""
        if memory_ids:
            self.session.execute(
                update(Memory)
                .where(Memory.user_id == user_id, Memory.id.in_(memory_ids))
                .values(last_accessed=now, access_count=Memory.access_count + 1)
            )

    def purge(self, user_id: int, memory_ids: Sequence[int] | None = None) -> list[int]:
        """Really delete memories (all of the user's when ``memory_ids`` is None); returns the ids."""
        statement = delete(Memory).where(Memory.user_id == user_id)
        if memory_ids is not None:
            statement = statement.where(Memory.id.in_(memory_ids))
        return list(self.session.scalars(statement.returning(Memory.id)))

    def binned(self, user_id: int, *, limit: int = 10, offset: int = 0) -> tuple[list[Memory], int]:
        """One page of the user's memories in the recycle bin (latest put there first) and how many there are."""
        query = select(Memory).where(Memory.user_id == user_id, Memory.deleted_at.is_not(None),
                                     Memory.superseded_by.is_(None))
        total = self.session.scalar(select(func.count()).select_from(query.subquery())) or 0
        rows = self.session.scalars(query.order_by(Memory.deleted_at.desc(), Memory.id.desc()).limit(limit)
                                    .offset(offset))
        return list(rows), total

    def in_bin(self, user_id: int, memory_id: int) -> Memory | None:
        """The user's memory if it is in the recycle bin, locked for this transaction."""
        query = select(Memory).where(Memory.user_id == user_id, Memory.id == memory_id,
                                     Memory.deleted_at.is_not(None), Memory.superseded_by.is_(None))
        return self.session.scalars(query.with_for_update()).one_or_none()

    def source_turns(self, user_id: int, memory_ids: Sequence[int]) -> list[int]:
        """The turns these memories of the user were drawn from (those still kept)."""
        if not memory_ids:
            return []
        query = select(Memory.source_turn_id).where(Memory.user_id == user_id, Memory.id.in_(memory_ids),
                                                    Memory.source_turn_id.is_not(None)).distinct()
        return list(self.session.scalars(query))

    def count_active(self, user_id: int) -> int:
        query = select(func.count()).select_from(Memory).where(Memory.user_id == user_id, active())
        return self.session.scalar(query) or 0

    def active_with_content(self, user_id: int, type_: str, content: str) -> Memory | None:
        """An active memory of this type with exactly this content, if the user has one."""
        query = select(Memory).where(Memory.user_id == user_id, Memory.type == type_, Memory.content == content,
                                     active())
        return self.session.scalars(query).first()

    def active_ids(self, user_id: int, memory_ids: Sequence[int]) -> list[int]:
        """Those of ``memory_ids`` that are the user's active memories."""
        query = select(Memory.id).where(Memory.user_id == user_id, Memory.id.in_(memory_ids), active())
        return list(self.session.scalars(query))

    def active_among(self, user_id: int, memory_ids: Sequence[int]) -> list[Memory]:
        """Those of ``memory_ids`` that are the user's active memories (in no particular order)."""
        query = select(Memory).where(Memory.user_id == user_id, Memory.id.in_(memory_ids), active())
        return list(self.session.scalars(query))

    def link_superseded(self, user_id: int, links: dict[int, int]) -> None:
        """Mark each memory (key) superseded by another of the user's (value), in one statement."""
        if not links:
            return
        pairs = select(func.unnest(bindparam("ids", list(links), type_=ARRAY(BigInteger))).label("id"),
                       func.unnest(bindparam("targets", list(links.values()), type_=ARRAY(BigInteger)))
                       .label("target")).subquery()
        target = aliased(Memory)
        mine = select(target.id).where(target.user_id == user_id, target.id == pairs.c.target).exists()
        self.session.execute(update(Memory).where(Memory.user_id == user_id, Memory.id == pairs.c.id, mine)
                             .values(superseded_by=pairs.c.target).execution_options(synchronize_session=False))

    def with_earlier_versions(self, user_id: int, memory_ids: Sequence[int]) -> list[int]:
        """The memories and every older version they superseded, however far back the chain goes."""
        if not memory_ids:
            return []
        return list(self.session.scalars(select(_version_chain(user_id, memory_ids).c.id)))

    def earlier_versions(self, user_id: int, memory_id: int) -> list[Memory]:
        """The older rows this memory superseded, however far back the chain goes, in id order."""
        chain = _version_chain(user_id, [memory_id])
        query = select(Memory).where(Memory.user_id == user_id, Memory.id.in_(select(chain.c.id)),
                                     Memory.id != memory_id)
        return list(self.session.scalars(query.order_by(Memory.id)))


class MemoryEventRepository:
    """The append-only audit of memory changes."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def record(self, user_id: int, memory_id: int | None, action: str, actor: str, *,
               before: dict[str, Any] | None = None, after: dict[str, Any] | None = None,
               reason: str | None = None) -> MemoryEvent:
        event = MemoryEvent(user_id=user_id, memory_id=memory_id, action=action, actor=actor,
                            before=before, after=after, reason=reason)
        self.session.add(event)
        return event

    def tombstone(self, user_id: int, memory_ids: Sequence[int] | None, reason: str) -> None:
        """Strip the content from the audit of these memories (all of the user's when None), keeping
        that something happened and ``reason``; loaded events are not updated."""
        statement = update(MemoryEvent).where(MemoryEvent.user_id == user_id)
        if memory_ids is not None:
            statement = statement.where(MemoryEvent.memory_id.in_(memory_ids))
        self.session.execute(statement.values(before=null(), after=null(), reason=reason)  # SQL NULL, not JSON null
                             .execution_options(synchronize_session=False))

    def record_each(self, user_id: int, action: str, actor: str, afters: dict[int, dict[str, Any]], *,
                    reason: str | None = None) -> None:
        """One event per memory (key) with its ``after`` picture (value) and no ``before``, in a few statements."""
        insert_values(self.session, MemoryEvent, [
            {"user_id": user_id, "memory_id": memory_id, "action": action, "actor": actor, "after": after,
             "reason": reason} for memory_id, after in afters.items()])

    def record_forgotten(self, user_id: int, memory_ids: Sequence[int], actor: str, reason: str) -> None:
        """One ``forget`` event per memory, without content (SQL NULL before and after, unlike ``record``)."""
        self.session.add_all([MemoryEvent(user_id=user_id, memory_id=memory_id, action="forget", actor=actor,
                                          reason=reason) for memory_id in memory_ids])
