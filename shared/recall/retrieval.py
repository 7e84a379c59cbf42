"""Recall for one turn (DESIGN.md §5): the speaker's memories, episodes and profile, scored.

Stages: weighted terms of the message, the session's topic and the user's previous lines
(:mod:`shared.search.recall_query`) → the 50 best matches by BM25 over this user's own memories
(:mod:`shared.repositories.ranked_search`), topped up by the LIKE fallback → each candidate
borrows a share of its best neighbour's match (memories noted in the same sitting) → optionally
mixed with the cosine similarity of the vector nearest neighbours (the user filter sits inside
each branch) → the seed's score → top N. Every query here is scoped to the speaking user.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from shared.db.memory_models import Episode, Memory, Profile
from shared.repositories.uow import UnitOfWork
from shared.repositories.vectors import VectorIndex
from shared.search.recall_query import RecallQuery, build_recall_query
from shared.search.scoring import (
    ScoreBreakdown,
    combine,
    frequency_score,
    fused_relevance,
    neighbour_support,
    recency_score,
    relative_scores,
    with_neighbours,
)
from shared.search.scoring import term_coverage as coverage_of
from shared.search.tokenizer import matches_by_prefix

CANDIDATE_LIMIT = 50
EPISODE_LIMIT = 2


@dataclass(frozen=True)
class ScoredMemory:
    memory: Memory
    score: ScoreBreakdown


@dataclass(frozen=True)
class Recall:
    """What retrieval found for one turn, best first, with how it was found."""

    memories: tuple[ScoredMemory, ...]
    episodes: tuple[Episode, ...]
    profile: Profile | None
    query_terms: tuple[str, ...]
    mode: str = "lexical"
    notes: tuple[str, ...] = field(default=())


def recall_for_turn(uow: UnitOfWork, user_id: int, text: str, *, now: datetime, limit: int,
                    topic: str | None = None, query_vector: Sequence[float] | None = None,
                    vectors: VectorIndex | None = None, context: Sequence[str] = ()) -> Recall:
    """Everything worth remembering for this message of ``user_id``; ``context`` holds the user's
    previous lines in this conversation, oldest first (they widen the search at a lower weight)."""
    query = build_recall_query(text, topic=topic, context=context)
    lexical = _lexical_candidates(uow, user_id, query)
    nearest: list[tuple[int, float]] = []
    if query_vector is not None and vectors is not None:
        nearest = vectors.nearest_memories(uow, user_id, query_vector, CANDIDATE_LIMIT)
    scored = _score(uow, user_id, lexical, nearest, query, now)
    return Recall(
        memories=tuple(scored[:limit]),
        episodes=tuple(_episodes(uow, user_id, list(query.message_terms + query.topic_terms))),
        profile=uow.profiles.get(user_id),
        query_terms=query.terms,
        mode="hybrid" if nearest else "lexical",
    )


def _lexical_candidates(uow: UnitOfWork, user_id: int, query: RecallQuery) -> list[tuple[Memory, float]]:
    """BM25-ranked matches, then LIKE for what the tokens missed (e.g. 猫 inside 猫咪; an English stem
    matches whole, so it is not looked for inside other words)."""
    if not query.weighted_terms:
        return []
    return uow.memories.ranked_candidates(user_id, query.weighted_terms, CANDIDATE_LIMIT,
                                          contains=[term for term in query.message_terms if matches_by_prefix(term)])


def _score(uow: UnitOfWork, user_id: int, lexical: list[tuple[Memory, float]], nearest: list[tuple[int, float]],
           query: RecallQuery, now: datetime) -> list[ScoredMemory]:
    memories = {memory.id: memory for memory, _ in lexical}
    own = {memory.id: score for memory, score in lexical}
    similarity = dict(nearest)
    for memory_id in [memory_id for memory_id in similarity if memory_id not in memories]:
        memory = uow.memories.get(user_id, memory_id)
        if memory is not None:
            memories[memory_id] = memory
    if not memories:
        return []
    support = neighbour_support(own, {memory_id: _noted_at(memories[memory_id]) for memory_id in own})
    lexical_relevance = relative_scores(with_neighbours(own, support))
    fused = fused_relevance(lexical_relevance, similarity) if nearest else {}
    keyword, neighbours = relative_scores(own), relative_scores(support)
    max_uses = max(memory.access_count for memory in memories.values())
    results = []
    for memory in memories.values():
        breakdown = combine(
            relevance=fused.get(memory.id, 0.0) if nearest else lexical_relevance.get(memory.id, 0.0),
            keyword=keyword.get(memory.id, 0.0),
            neighbours=neighbours.get(memory.id, 0.0),
            memory_type=memory.type,
            recency=recency_score(memory.last_accessed or memory.updated_at or memory.created_at, now),
            frequency=frequency_score(memory.access_count, max_uses),
            confidence=memory.confidence,
            on_topic=bool(query.topic_terms) and coverage_of(query.topic_terms, memory.search_tokens.split()) > 0,
            vector_similarity=similarity.get(memory.id),
        )
        results.append(ScoredMemory(memory, breakdown))
    results.sort(key=lambda item: (item.score.total, item.memory.id), reverse=True)
    return results


def _noted_at(memory: Memory) -> datetime:
    return memory.created_at or memory.updated_at


def _episodes(uow: UnitOfWork, user_id: int, terms: list[str]) -> list[Episode]:
    """The best matching episodes, or the latest one for continuity when none matches."""
    return uow.episodes.matching_or_latest(user_id, terms, EPISODE_LIMIT)
