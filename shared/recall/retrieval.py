"""Recall for one turn (DESIGN.md §5): the speaker's memories, episodes and profile, scored.

Stages: weighted terms of the message, the session's topic and the user's previous lines
(:mod:`shared.search.recall_query`) → the 50 best matches by BM25 over this user's own memories
(:mod:`shared.repositories.ranked_search`), topped up by the LIKE fallback, and the memories noted
right before and after the 10 best → memories noted in the time the message names ("last week",
:mod:`shared.search.temporal`) match better → each match, mixed with the cosine similarity of the
vector nearest neighbours when there are vectors (the user filter sits inside each branch; one weight,
``VECTOR_SHARE``) → each sitting scored by its best match, which every memory of it borrows a share
of, and the memory noted right beside a match borrows from it → the seed's score → top N. Every
query here is scoped to the speaking user.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from shared.db.memory_models import Episode, Memory, Profile
from shared.metrics import record
from shared.repositories.ranked_search import RankedCandidates
from shared.repositories.rounds import RankedRounds, Round
from shared.repositories.uow import UnitOfWork
from shared.repositories.vectors import VectorIndex
from shared.search.recall_query import RecallQuery, build_recall_query
from shared.search.scoring import (
    ScoreBreakdown,
    adjacent_support,
    combine,
    frequency_score,
    fused_relevance,
    neighbour_support,
    recency_clock,
    recency_score,
    relative_scores,
    with_neighbours,
    with_time_cue,
)
from shared.search.scoring import term_coverage as coverage_of
from shared.search.temporal import TimeSpan, asked_span
from shared.search.tokenizer import matches_by_prefix

CANDIDATE_LIMIT = 50
ADJACENT_SEEDS = 10
"""The memories noted right before and after this many of the best matches are candidates too."""
EPISODE_LIMIT = 2
ROUNDS_IN_SPAN = 20
"""A time cue ("5月2日", "last Tuesday") brings at most this many rounds said in that time, newest first,
whatever their words."""
ROUND_TYPE = "event"
"""Rounds are scored as what happened: the seed's category boost of an event."""
ROUND_CONFIDENCE = 0.5
"""What was said is as sure as a memory of average confidence (the user's words, unverified)."""
ItemKey = tuple[str, int]
"""A memory or a round in the one ranking: ``("m", memory id)`` or ``("r", user turn id)``."""


@dataclass(frozen=True)
class ScoredMemory:
    memory: Memory
    score: ScoreBreakdown


@dataclass(frozen=True)
class ScoredRound:
    round: Round
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
    episodes_matched: bool = True
    """False when ``episodes`` holds only the latest one, offered for continuity (nothing matched)."""
    decisive_ids: frozenset[int] = frozenset()
    """Memories that answer the question's own key (see ``shared.conversation.prepare``)."""
    rounds: tuple[ScoredRound, ...] = ()
    """What was said (the user's lines and the bot's replies), ranked with the memories, best first."""


def recall_for_turn(uow: UnitOfWork, user_id: int, text: str, *, now: datetime, limit: int,
                    topic: str | None = None, query_vector: Sequence[float] | None = None,
                    vectors: VectorIndex | None = None, context: Sequence[str] = (),
                    local_now: datetime | None = None, last_active: datetime | None = None) -> Recall:
    """Everything worth remembering for this message of ``user_id``; ``context`` holds the user's
    previous lines in this conversation, oldest first (they widen the search at a lower weight);
    time cues ("last week") are read against ``local_now``, the user's wall clock (default ``now``); recency is
    counted on the user's own time, from ``last_active`` (when they last spoke before this message) at most a day
    away (:func:`shared.search.scoring.recency_clock`)."""
    started = time.perf_counter()
    query = build_recall_query(text, topic=topic, context=context)
    span = asked_span(text, local_now or now)
    lexical = _lexical_candidates(uow, user_id, query)
    rounds = _round_candidates(uow, user_id, query, span)
    nearest: list[tuple[int, float]] = []
    if query_vector is not None and vectors is not None:
        nearest = vectors.nearest_memories(uow, user_id, query_vector, CANDIDATE_LIMIT)
        rounds = _with_nearest_rounds(uow, user_id, rounds,
                                      vectors.nearest_rounds(uow, user_id, query_vector, CANDIDATE_LIMIT))
    scored, scored_rounds = _score(uow, user_id, lexical, nearest, query, recency_clock(now, last_active), span,
                                   rounds)
    episode_terms = list(query.message_terms + query.topic_terms)
    episodes = _episodes(uow, user_id, episode_terms, span)
    recall = Recall(
        memories=tuple(scored[:limit]),
        rounds=tuple(scored_rounds[:limit]),
        episodes=tuple(episodes),
        profile=uow.profiles.get(user_id),
        query_terms=query.terms,
        mode="hybrid" if nearest else "lexical",
        episodes_matched=(span is not None and bool(episodes)) or any(
            coverage_of(episode_terms, episode.search_tokens.split()) > 0 for episode in episodes),
    )
    record.retrieval(recall.mode, time.perf_counter() - started)
    return recall


def _lexical_candidates(uow: UnitOfWork, user_id: int, query: RecallQuery) -> RankedCandidates:
    """BM25-ranked matches, then LIKE for what the tokens missed (e.g. 猫 inside 猫咪; an English stem
    matches whole, so it is not looked for inside other words), and the memories noted beside the best."""
    if not query.weighted_terms:
        return RankedCandidates([])
    return uow.memories.ranked_with_adjacent(
        user_id, query.weighted_terms, CANDIDATE_LIMIT, seeds=ADJACENT_SEEDS,
        contains=[term for term in query.message_terms if matches_by_prefix(term)])


def _round_candidates(uow: UnitOfWork, user_id: int, query: RecallQuery, span: TimeSpan | None) -> RankedRounds:
    """The user's rounds ranked by BM25 as memories are, and those said in the asked-about time."""
    ranked = RankedRounds([])
    if query.weighted_terms:
        ranked = uow.rounds.ranked_with_adjacent(
            user_id, query.weighted_terms, CANDIDATE_LIMIT, seeds=ADJACENT_SEEDS,
            contains=[term for term in query.message_terms if matches_by_prefix(term)])
    if span is None:
        return ranked
    found = {item.turn_id for item, _ in ranked.found}
    dated = [item for item in uow.rounds.said_between(user_id, span.start, span.end, ROUNDS_IN_SPAN)
             if item.turn_id not in found]
    return RankedRounds(ranked.found + [(item, 0.0) for item in dated], ranked.next_to)


def _with_nearest_rounds(uow: UnitOfWork, user_id: int, rounds: RankedRounds,
                         nearest: list[tuple[int, float]]) -> RankedRounds:
    """The rounds with those only the vectors found (score 0 of their own), and every round's similarity."""
    if not nearest:
        return rounds
    found = {item.turn_id for item, _ in rounds.found}
    only_near = [turn_id for turn_id, _ in nearest if turn_id not in found]
    extra = [(item, 0.0) for item in uow.rounds.among(user_id, only_near)] if only_near else []
    return RankedRounds(rounds.found + extra, rounds.next_to, similarity=dict(nearest))


def _score(uow: UnitOfWork, user_id: int, lexical: RankedCandidates, nearest: list[tuple[int, float]],
           query: RecallQuery, recency_at: datetime, span: TimeSpan | None = None,
           rounds: RankedRounds | None = None) -> tuple[list[ScoredMemory], list[ScoredRound]]:
    """Memories and rounds scored in one ranking: relevance is relative to the best match of either, and
    a sitting's memories and rounds lend each other support (keys: ``("m", id)`` and ``("r", turn id)``)."""
    memories = {memory.id: memory for memory, _ in lexical.found}
    own = {("m", memory.id): score for memory, score in lexical.found}
    vector_only = [memory_id for memory_id, _ in nearest if memory_id not in memories]
    if vector_only:  # one round trip for the memories only the vectors found
        memories.update((memory.id, memory) for memory in uow.memories.active_among(user_id, vector_only))
    similarity = {("m", memory_id): value for memory_id, value in nearest if memory_id in memories}
    said = {item.turn_id: item for item, _ in (rounds.found if rounds else [])}
    own.update({("r", item.turn_id): score for item, score in (rounds.found if rounds else [])})
    if rounds is not None:
        similarity.update({("r", turn_id): value for turn_id, value in rounds.similarity.items() if turn_id in said})
    if not memories and not said:
        return [], []
    noted_at = {("m", memory_id): _noted_at(memory) for memory_id, memory in memories.items()}
    noted_at.update({("r", turn_id): item.said_at for turn_id, item in said.items()})
    if span is not None:  # when it happened, where the monitor could tell, else when it was noted or said
        own = with_time_cue(own, [key for key in own if span.holds(
            (memories[key[1]].happened_at if key[0] == "m" else None) or noted_at[key])])
    next_to = {("m", key): tuple(("m", other) for other in others) for key, others in lexical.next_to.items()}
    if rounds:
        next_to.update({("r", key): tuple(("r", other) for other in others) for key, others in rounds.next_to.items()})
    relevance, support = _relevance(own, similarity, next_to, noted_at)
    keyword, neighbours = relative_scores(own), relative_scores(support)
    max_uses = max((memory.access_count for memory in memories.values()), default=0)
    scored_memories, scored_rounds = [], []
    for kind, key in relevance:
        shared = {"relevance": relevance[(kind, key)], "keyword": keyword.get((kind, key), 0.0),
                  "neighbours": neighbours.get((kind, key), 0.0)}
        if kind == "r":
            item = said[key]
            scored_rounds.append(ScoredRound(item, combine(
                **shared, memory_type=ROUND_TYPE, recency=recency_score(item.said_at, recency_at), frequency=0.0,
                confidence=ROUND_CONFIDENCE, on_topic=_on_topic(query, item.search_tokens.split()),
                vector_similarity=similarity.get(("r", key)))))
            continue
        memory = memories[key]
        scored_memories.append(ScoredMemory(memory, combine(
            **shared, memory_type=memory.type,
            recency=recency_score(memory.last_accessed or memory.updated_at or memory.created_at, recency_at),
            frequency=frequency_score(memory.access_count, max_uses), confidence=memory.confidence,
            on_topic=_on_topic(query, memory.search_tokens.split()), vector_similarity=similarity.get(("m", key)))))
    scored_memories.sort(key=lambda item: (item.score.total, item.memory.id), reverse=True)
    scored_rounds.sort(key=lambda item: (item.score.total, item.round.turn_id), reverse=True)
    return scored_memories, scored_rounds


def _on_topic(query: RecallQuery, tokens: Sequence[str]) -> bool:
    return bool(query.topic_terms) and coverage_of(query.topic_terms, tokens) > 0




def _relevance(own: dict[ItemKey, float], similarity: dict[ItemKey, float],
               next_to: dict[ItemKey, tuple[ItemKey, ...]],
               noted_at: dict[ItemKey, datetime]) -> tuple[dict[ItemKey, float], dict[ItemKey, float]]:
    """Each memory's relevance (0-1) and its sitting's support. A memory's own match is its BM25 score
    relative to the best, mixed with its vector similarity when there is one (one weight,
    ``VECTOR_SHARE``); a sitting is then scored by its best-matching memory (late interaction) and the
    memory noted right beside a match borrows from it, whichever signal found them."""
    matched = relative_scores(own)
    if similarity:
        matched = fused_relevance(matched, similarity)
    support = neighbour_support(matched, {key: noted_at[key] for key in matched})
    beside = adjacent_support(matched, next_to, noted_at)
    relevance = relative_scores(with_neighbours(matched, support, adjacent=beside))
    for key in next_to:  # found only beside a match of another sitting: nothing to recall it for
        if matched.get(key, 0.0) == 0.0 and beside.get(key, 0.0) == 0.0:
            relevance.pop(key, None)
    return relevance, support


def _noted_at(memory: Memory) -> datetime:
    return memory.created_at or memory.updated_at


def _episodes(uow: UnitOfWork, user_id: int, terms: list[str], span: TimeSpan | None = None) -> list[Episode]:
    """The episodes of the time the message names ("昨天", "last Tuesday"), else the best matching ones, or the
    latest one for continuity when none matches."""
    if span is not None:
        dated = uow.episodes.overlapping(user_id, span.start, span.end, EPISODE_LIMIT)
        if dated:
            return dated
    return uow.episodes.matching_or_latest(user_id, terms, EPISODE_LIMIT)
