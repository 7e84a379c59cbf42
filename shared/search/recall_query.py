"""What one turn searches for: weighted terms from the message, the topic and the recent conversation.

A message alone is often too short to find anything ("and what did she say?"), while the lines
just before it say what the conversation is about. So the query holds the message's terms at full
weight, the session topic's terms and those of the user's previous lines at lower weights that
fall off with distance; a general word of the message ("pets") brings the words it covers at a lower weight.
The message's own terms always come first, so when the number of query
terms is capped it is the context that gives way. Pure rules, no database.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shared.search.kinds import covered_by
from shared.search.tokenizer import query_terms as terms_of

MAX_QUERY_CHARS = 2000
"""Only the start of a very long message is used to search (the whole message still reaches the LLM)."""
MESSAGE_WEIGHT = 1.0
TOPIC_WEIGHT = 0.5
CONTEXT_WEIGHT = 0.5
"""Weight of the terms of the user's line just before this message."""
CONTEXT_DECAY = 0.7
"""Each earlier line counts this much less than the one after it."""
MAX_CONTEXT_LINES = 6
COVERED_WEIGHT = 0.5
"""Weight of the words a general word of the message covers ("pets" → dog, cat …)."""


@dataclass(frozen=True)
class RecallQuery:
    """Search terms with weights, most important first; ``message_terms`` are the message's own."""

    weighted_terms: tuple[tuple[str, float], ...]
    message_terms: tuple[str, ...]
    topic_terms: tuple[str, ...]

    @property
    def terms(self) -> tuple[str, ...]:
        return tuple(term for term, _ in self.weighted_terms)


def build_recall_query(text: str, *, topic: str | None = None, context: Sequence[str] = ()) -> RecallQuery:
    """The query for ``text``; ``context`` holds the user's earlier lines, oldest first."""
    message = terms_of(text[:MAX_QUERY_CHARS])
    topic_terms = terms_of(topic or "")
    weights: dict[str, float] = {term: MESSAGE_WEIGHT for term in message}
    for term in message:
        for covered in covered_by(term):
            weights.setdefault(covered, COVERED_WEIGHT)
    for term in topic_terms:
        weights.setdefault(term, TOPIC_WEIGHT)
    for distance, line in enumerate(reversed(context[-MAX_CONTEXT_LINES:])):
        weight = CONTEXT_WEIGHT * CONTEXT_DECAY ** distance
        for term in terms_of(line[:MAX_QUERY_CHARS]):
            weights.setdefault(term, weight)
    return RecallQuery(tuple(weights.items()), tuple(message), tuple(topic_terms))
