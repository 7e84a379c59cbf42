"""Which part of the product made each request the fake LLM received.

Every LLM call of the product starts with a system message of its own (the turn prompt ends with
the output rules; the knowledge monitor, the episode summariser, the reviews and dedup have their
own rules), so a recorded request body tells which job sent it. Pure: no database, no server.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

TURN = "turn"
EXTRACTION = "extraction"
SITTING = "sitting"
"""A closed sitting's last monitor read and its summary in one call (shared/lifecycle/sitting.py)."""
EPISODE_SUMMARY = "episode_summary"
REVIEW = "review"
DEDUP = "dedup"
OTHER = "other"


def _signatures() -> tuple[tuple[str, str], ...]:
    """(kind, text its system message starts with or contains), imported lazily from the product."""
    from shared.conversation.prompt import OUTPUT_RULES
    from shared.lifecycle.dedup import CONFIRM_RULES
    from shared.lifecycle.episodes import SUMMARY_RULES
    from shared.lifecycle.extraction import MONITOR_RULES
    from shared.lifecycle.reviews import RULES
    from shared.lifecycle.sitting import SITTING_MARK

    review_opening = RULES.split("{", 1)[0]
    return ((SITTING, SITTING_MARK), (EXTRACTION, MONITOR_RULES), (EPISODE_SUMMARY, SUMMARY_RULES),
            (DEDUP, CONFIRM_RULES), (REVIEW, review_opening), (TURN, OUTPUT_RULES))


def request_kind(body: Mapping[str, Any]) -> str:
    """The job that sent this chat-completion request body."""
    system = system_prompt(body)
    for kind, signature in _signatures():
        if signature in system:
            return kind
    return OTHER


def system_prompt(body: Mapping[str, Any]) -> str:
    """The first system message of a chat request ("" without one)."""
    for message in body.get("messages") or ():
        if isinstance(message, Mapping) and message.get("role") == "system":
            content = message.get("content")
            return content if isinstance(content, str) else ""
    return ""


def count_kinds(bodies: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How many requests each job sent, most first."""
    return dict(Counter(request_kind(body) for body in bodies).most_common())


def per_message(counts: Mapping[str, int], messages: int) -> dict[str, float]:
    """Requests of each kind divided by the user messages that caused them."""
    return {kind: count / messages for kind, count in counts.items()} if messages else {}
