"""The retrieval score of a memory (DESIGN.md §5, the seed's formula), as pure functions.

``score = 0.40·relevance + 0.20·category_boost + 0.15·recency + 0.10·frequency + 0.15·confidence``,
times 1.3 when the memory is related to the session's current topic. ``relevance`` is the keyword
score (share of query terms the memory matches, blended with the normalised text rank); when
vectors are in play it is the reciprocal-rank fusion of the lexical and the vector ranking.
Every result keeps its breakdown, so ``/memories why`` and the tests can explain it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime

WEIGHT_RELEVANCE = 0.40
WEIGHT_CATEGORY = 0.20
WEIGHT_RECENCY = 0.15
WEIGHT_FREQUENCY = 0.10
WEIGHT_CONFIDENCE = 0.15
TOPIC_BOOST = 1.3
RECENCY_HALF_LIFE_DAYS = 7.0
RANK_SHARE_OF_KEYWORD_SCORE = 0.3
"""The keyword score is 70 % term coverage and 30 % the text rank relative to the best candidate."""
RRF_K = 60
"""Reciprocal rank fusion constant (Cormack et al.): 1 / (k + rank)."""

CATEGORY_BOOST = {"preference": 1.5, "fact": 1.2, "person": 1.2, "event": 1.1, "pattern": 1.0,
                  "rule": 1.0, "todo": 1.0}


@dataclass(frozen=True)
class ScoreBreakdown:
    """Every component of one memory's score, and the total."""

    relevance: float
    keyword: float
    category_boost: float
    recency: float
    frequency: float
    confidence: float
    topic_boost: float
    vector_similarity: float | None
    total: float

    def as_dict(self) -> dict[str, float | None]:
        return {name: (round(value, 4) if isinstance(value, float) else value)
                for name, value in asdict(self).items()}


def recency_score(last_used: datetime, now: datetime) -> float:
    """``exp(-ln2/7 · days)``: 1 when used just now, 0.5 after a week without use."""
    days = max((now - last_used).total_seconds(), 0.0) / 86_400
    return math.exp(-math.log(2) / RECENCY_HALF_LIFE_DAYS * days)


def frequency_score(access_count: int, max_access_count: int) -> float:
    """``log(n+1) / log(max+1)`` over the candidates; 0.5 for all when none was ever used."""
    if max_access_count <= 0:
        return 0.5
    return math.log(access_count + 1) / math.log(max_access_count + 1)


def term_coverage(query_terms: Sequence[str], memory_tokens: Iterable[str]) -> float:
    """Share of query terms that some memory token starts with (the prefix match of the tsquery)."""
    if not query_terms:
        return 0.0
    tokens = set(memory_tokens)
    matched = sum(1 for term in query_terms if any(token.startswith(term) for token in tokens))
    return matched / len(query_terms)


def keyword_score(coverage: float, rank: float, best_rank: float) -> float:
    relative_rank = rank / best_rank if best_rank > 0 else 0.0
    return (1 - RANK_SHARE_OF_KEYWORD_SCORE) * coverage + RANK_SHARE_OF_KEYWORD_SCORE * relative_rank


def rrf_scores(rankings: Iterable[Sequence[int]], k: int = RRF_K) -> dict[int, float]:
    """Reciprocal rank fusion of several best-first id lists, normalised so the best is 1."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for position, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + position)
    best = max(fused.values(), default=0.0)
    return {item: value / best for item, value in fused.items()} if best else {}


def combine(*, relevance: float, keyword: float, memory_type: str, recency: float, frequency: float,
            confidence: float, on_topic: bool, vector_similarity: float | None = None) -> ScoreBreakdown:
    """The seed's weighted sum, with the topic boost applied last."""
    boost = CATEGORY_BOOST.get(memory_type, 1.0)
    topic = TOPIC_BOOST if on_topic else 1.0
    total = (WEIGHT_RELEVANCE * relevance + WEIGHT_CATEGORY * boost + WEIGHT_RECENCY * recency
             + WEIGHT_FREQUENCY * frequency + WEIGHT_CONFIDENCE * confidence) * topic
    return ScoreBreakdown(relevance=relevance, keyword=keyword, category_boost=boost, recency=recency,
                          frequency=frequency, confidence=confidence, topic_boost=topic,
                          vector_similarity=vector_similarity, total=total)
