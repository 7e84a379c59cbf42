"""Recall for one turn (DESIGN.md §5): the speaker's memories, episodes and profile, scored.

Stages: keywords of the message (and of the session's topic) → up to 50 lexical candidates by
prefix tsquery, topped up by the LIKE fallback → optionally fused with the vector nearest
neighbours (reciprocal rank fusion; the user filter sits inside each branch) → the seed's score
→ top N. Every query here is scoped to the speaking user.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from shared.db.memory_models import Episode, Memory, Profile
from shared.db.uow import UnitOfWork
from shared.scoring import ScoreBreakdown, combine, frequency_score, keyword_score, recency_score, rrf_scores
from shared.scoring import term_coverage as coverage_of
from shared.tokenizer import query_terms as terms_of
from shared.vector_search import VectorIndex

CANDIDATE_LIMIT = 50
EPISODE_LIMIT = 2
MAX_QUERY_CHARS = 2000
"""Only the start of a very long message is used to search (the whole message still reaches the LLM)."""


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
                    vectors: VectorIndex | None = None) -> Recall:
    """Everything worth remembering for this message of ``user_id``."""
    terms = terms_of(text[:MAX_QUERY_CHARS])
    topic_terms = terms_of(topic or "")
    query_terms = list(dict.fromkeys(terms + topic_terms))
    lexical = _lexical_candidates(uow, user_id, query_terms)
    nearest: list[tuple[int, float]] = []
    if query_vector is not None and vectors is not None:
        nearest = vectors.nearest_memories(uow.session, user_id, query_vector, CANDIDATE_LIMIT)
    scored = _score(uow, user_id, lexical, nearest, query_terms, topic_terms, now)
    return Recall(
        memories=tuple(scored[:limit]),
        episodes=tuple(_episodes(uow, user_id, query_terms)),
        profile=uow.profiles.get(user_id),
        query_terms=tuple(query_terms),
        mode="hybrid" if nearest else "lexical",
    )


def _lexical_candidates(uow: UnitOfWork, user_id: int, terms: list[str]) -> list[tuple[Memory, float]]:
    """Prefix-tsquery candidates, then LIKE for what the tokens missed (e.g. 猫 inside 猫咪)."""
    if not terms:
        return []
    found = uow.memories.text_candidates(user_id, terms, CANDIDATE_LIMIT)
    if len(found) < CANDIDATE_LIMIT:
        seen = {memory.id for memory, _ in found}
        extra = uow.memories.like_candidates(user_id, terms, CANDIDATE_LIMIT - len(found))
        found += [(memory, 0.0) for memory in extra if memory.id not in seen]
    return found


def _score(uow: UnitOfWork, user_id: int, lexical: list[tuple[Memory, float]], nearest: list[tuple[int, float]],
           terms: list[str], topic_terms: list[str], now: datetime) -> list[ScoredMemory]:
    memories = {memory.id: memory for memory, _ in lexical}
    ranks = {memory.id: rank for memory, rank in lexical}
    similarity = dict(nearest)
    missing = [memory_id for memory_id in similarity if memory_id not in memories]
    for memory_id in missing:
        memory = uow.memories.get(user_id, memory_id)
        if memory is not None:
            memories[memory_id] = memory
    if not memories:
        return []
    fused = rrf_scores([[m.id for m, _ in lexical], [i for i, _ in nearest]]) if nearest else {}
    best_rank = max(ranks.values(), default=0.0)
    max_uses = max(memory.access_count for memory in memories.values())
    results = []
    for memory in memories.values():
        tokens = memory.search_tokens.split()
        keyword = keyword_score(coverage_of(terms, tokens), ranks.get(memory.id, 0.0), best_rank)
        breakdown = combine(
            relevance=fused.get(memory.id, 0.0) if nearest else keyword,
            keyword=keyword,
            memory_type=memory.type,
            recency=recency_score(memory.last_accessed or memory.updated_at or memory.created_at, now),
            frequency=frequency_score(memory.access_count, max_uses),
            confidence=memory.confidence,
            on_topic=bool(topic_terms) and coverage_of(topic_terms, tokens) > 0,
            vector_similarity=similarity.get(memory.id),
        )
        results.append(ScoredMemory(memory, breakdown))
    results.sort(key=lambda item: (item.score.total, item.memory.id), reverse=True)
    return results


def _episodes(uow: UnitOfWork, user_id: int, terms: list[str]) -> list[Episode]:
    """The best matching episodes, or the latest one for continuity when none matches."""
    matched = [episode for episode, _ in uow.episodes.text_candidates(user_id, terms, EPISODE_LIMIT)] if terms else []
    return matched or uow.episodes.recent(user_id, 1)
