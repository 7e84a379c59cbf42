"""A memory as stated, before it is written: the same shape whether the turn's LLM call, the knowledge
monitor or the offline rules found it. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class StatedMemory:
    """One thing the user said about themselves (or someone in their life)."""

    type: str
    subject: str
    predicate: str
    content: str
    tier: str = "long"
    entities: tuple[str, ...] = ()
    """What it is about (people, pets, places, things), when the one who read it could tell."""
    happened_at: datetime | None = None
    """When what it tells of happened, when that differs from when it is said."""
    importance: float | None = None
    """How much it matters, as the one who read it judged (shared/memory/policy.py's scale); None: by its kind."""
    source: str = "user_stated"
    """``user_stated`` (the user said it of themselves) or ``inferred`` (a model concluded it)."""
