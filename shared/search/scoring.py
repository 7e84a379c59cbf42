"""The retrieval score of a memory (DESIGN.md §5, the seed's formula), as pure functions.

``score = 0.40·relevance + 0.20·category_boost + 0.15·confidence
+ relevance·(0.15·recency + 0.10·frequency)``, times 1.3 when the memory is related to the
session's current topic. Recency and frequency say how a memory has been *used*, not whether it
fits this message, so they count in proportion to relevance: they decide between memories that
match about as well, and never lift last week's weak match over an exact one from months ago.
Recency is counted on the user's own time with the bot (:func:`recency_clock`): months away do not age
what they said, so a user who comes back finds what they last talked about as fresh as the day after.

``relevance`` is lexical: the memory's BM25 score (rare words count more) plus a share of the best
score among its neighbours (memories noted within the same sitting, ``NEIGHBOUR_WINDOW``) and a share
of the score of the memory noted right before or after it (``ADJACENT_SHARE``), relative to the best
candidate; when vectors are in play the memory's own match is first mixed with the cosine similarity
of its embedding (``VECTOR_SHARE``). Every result keeps its breakdown, so ``/memories why`` and the
tests can explain it.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import TypeVar

from shared.search.tokenizer import matches_by_prefix

WEIGHT_RELEVANCE = 0.40
WEIGHT_CATEGORY = 0.20
WEIGHT_RECENCY = 0.15
WEIGHT_FREQUENCY = 0.10
WEIGHT_CONFIDENCE = 0.15
TOPIC_BOOST = 1.3
RECENCY_HALF_LIFE_DAYS = 7.0
NEIGHBOUR_WINDOW = timedelta(minutes=30)
"""Memories noted this close together come from one sitting (the idle time that closes a session)."""
NEIGHBOUR_SHARE = 0.3
"""How much of its best neighbour's match a memory borrows: things said together belong together."""
ADJACENT_SHARE = 0.3
"""How much of its best match a memory noted right before or after it lends: a line often answers or
continues the one before it ("it was rich and creamy" after "I made coconut milk ice cream")."""
TIME_CUE_BOOST = 0.5
"""A memory noted within the time the message asks about ("last week", "在去年夏天", "in June") matches
this much better (its BM25 score × 1.5)."""
BM25_K1 = 1.2
"""Okapi BM25 term-frequency saturation (the usual 1.2)."""
BM25_B = 0.75
"""Okapi BM25 length normalisation (the usual 0.75): a match in a short memory counts more."""
VECTOR_SHARE = 0.3
"""With vectors, a memory's own match is ``0.7·lexical + 0.3·cosine similarity`` (lexical: its BM25
relative to the best), the one weight of the fusion. It is mixed per memory, before the sitting and
adjacent shares, so a sitting is scored by its best memory whichever signal found it (late
interaction), and a stronger embedder adds on top of the same rules. A convex combination keeps how
strong each match is; reciprocal rank fusion over 50-item lists flattens a clear lexical winner to the
level of a memory both branches ranked mediocre, and lost a third of the hits on LoCoMo with a small
embedder. Words the user actually said lead; vectors add what is said differently."""

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
    neighbours: float
    topic_boost: float
    vector_similarity: float | None
    total: float

    def as_dict(self) -> dict[str, float | None]:
        return {name: (round(value, 4) if isinstance(value, float) else value)
                for name, value in asdict(self).items()}


AWAY_COUNTED = timedelta(days=1)
"""How much of a user's time away ages what they said and used: recency is counted on their own time with the
bot, so whoever comes back after months finds the same things freshest as on the day after they left."""


def recency_clock(now: datetime, last_active: datetime | None) -> datetime:
    """The moment recency is counted at: ``now``, or a day after the user last spoke when they have been away
    longer (:data:`AWAY_COUNTED`). Time away fades nothing: a fact last used the week before a six-month break
    ranks as it did the day after it, against the same other things (they all aged the same calendar months)."""
    if last_active is None:
        return now
    return min(now, last_active + AWAY_COUNTED)


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
    """Share of query terms that some memory token matches as the tsquery does: whole for an English
    stem, as a prefix for any other term (see :func:`shared.search.tokenizer.matches_by_prefix`)."""
    if not query_terms:
        return 0.0
    tokens = set(memory_tokens)
    matched = sum(1 for term in query_terms if term in tokens or (
        matches_by_prefix(term) and any(token.startswith(term) for token in tokens)))
    return matched / len(query_terms)


Key = TypeVar("Key", bound=Hashable)
"""What a score belongs to: a memory's id, or (in recall's one ranking) a memory's or a round's tagged key."""


def relative_scores(scores: Mapping[Key, float]) -> dict[Key, float]:
    """Each score over the best one (the best becomes 1); all 0 when nothing scored."""
    best = max(scores.values(), default=0.0)
    return {key: (value / best if best > 0 else 0.0) for key, value in scores.items()}


def neighbour_support(scores: Mapping[Key, float], noted_at: Mapping[Key, datetime],
                      window: timedelta = NEIGHBOUR_WINDOW) -> dict[Key, float]:
    """For each item, the best score among the *other* items noted within ``window`` of it."""
    order = sorted(scores, key=lambda key: noted_at[key])
    support = dict.fromkeys(scores, 0.0)
    start = 0
    for position, key in enumerate(order):
        while noted_at[key] - noted_at[order[start]] > window:
            start += 1
        for other in order[start:position]:
            support[key] = max(support[key], scores[other])
            support[other] = max(support[other], scores[key])
    return support


def with_time_cue(scores: Mapping[Key, float], in_span: Iterable[Key],
                  boost: float = TIME_CUE_BOOST) -> dict[Key, float]:
    """The scores, those of the memories noted within the asked-about time raised by ``boost``."""
    raised = set(in_span)
    return {key: value * (1 + boost) if key in raised else value for key, value in scores.items()}


def adjacent_support(scores: Mapping[Key, float], next_to: Mapping[Key, Sequence[Key]],
                     noted_at: Mapping[Key, datetime], window: timedelta = NEIGHBOUR_WINDOW) -> dict[Key, float]:
    """For each item noted right beside others (``next_to``), the best score among those noted within
    ``window`` of it (one sitting)."""
    return {key: max((scores.get(other, 0.0) for other in others
                      if other in noted_at and abs(noted_at[key] - noted_at[other]) <= window), default=0.0)
            for key, others in next_to.items() if key in noted_at}


def with_neighbours(scores: Mapping[Key, float], support: Mapping[Key, float], share: float = NEIGHBOUR_SHARE,
                    adjacent: Mapping[Key, float] | None = None,
                    adjacent_share: float = ADJACENT_SHARE) -> dict[Key, float]:
    """A memory's own score plus ``share`` of its best neighbour's in the sitting and ``adjacent_share``
    of the best of those noted right beside it."""
    adjacent = adjacent or {}
    return {key: value + share * support.get(key, 0.0) + adjacent_share * adjacent.get(key, 0.0)
            for key, value in scores.items()}


def fused_relevance(lexical: Mapping[Key, float], similarity: Mapping[Key, float],
                    vector_share: float = VECTOR_SHARE) -> dict[Key, float]:
    """Lexical relevance (0-1) and vector cosine similarity (clipped to 0-1), mixed convexly."""
    return {key: (1 - vector_share) * lexical.get(key, 0.0) + vector_share * max(similarity.get(key, 0.0), 0.0)
            for key in lexical.keys() | similarity.keys()}


def combine(*, relevance: float, keyword: float, memory_type: str, recency: float, frequency: float,
            confidence: float, on_topic: bool, vector_similarity: float | None = None,
            neighbours: float = 0.0) -> ScoreBreakdown:
    """The seed's weighted sum (usage signals in proportion to relevance), topic boost applied last."""
    boost = CATEGORY_BOOST.get(memory_type, 1.0)
    topic = TOPIC_BOOST if on_topic else 1.0
    usage = WEIGHT_RECENCY * recency + WEIGHT_FREQUENCY * frequency
    total = (WEIGHT_RELEVANCE * relevance + WEIGHT_CATEGORY * boost + WEIGHT_CONFIDENCE * confidence
             + relevance * usage) * topic
    return ScoreBreakdown(relevance=relevance, keyword=keyword, category_boost=boost, recency=recency,
                          frequency=frequency, confidence=confidence, neighbours=neighbours, topic_boost=topic,
                          vector_similarity=vector_similarity, total=total)
