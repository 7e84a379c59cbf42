"""When the knowledge monitor reads a sitting: its waiting turns together, not one model call a turn (issue 30).

What the user states is stored at once by the turn's own memory update; the monitor's review (ADD, UPDATE,
BOOST, DELETE, SKIP) can wait and read a sitting's turns in one call: when enough turns or words wait, when the
oldest has waited long enough, and, for whatever is left, when the sitting goes idle and is closed (the
``close_session`` job reads its waiting turns before it summarises). Pure: no database, no model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

BATCH_TURNS = 10
"""The most turns one monitor call reads (``shared.lifecycle.extraction.MAX_TURNS_PER_BATCH``) and, by default,
how many waiting turns make a call due."""
BATCH_TOKENS = 1200
"""Estimated tokens of waiting user lines that make a call due (a few long messages)."""
MAX_DELAY = timedelta(minutes=15)
"""The longest a turn waits while its sitting goes on (a sitting that falls idle is read when it closes)."""


@dataclass(frozen=True)
class WaitingTurn:
    """A user turn of the sitting the monitor has not read yet."""

    said_at: datetime
    tokens: int


@dataclass(frozen=True)
class ExtractionTiming:
    batch_turns: int = BATCH_TURNS
    batch_tokens: int = BATCH_TOKENS
    max_delay: timedelta = MAX_DELAY

    def due(self, waiting: Sequence[WaitingTurn], now: datetime) -> bool:
        """True when the sitting's waiting turns (the new one among them) are to be read now."""
        if not waiting:
            return False
        return (len(waiting) >= self.batch_turns or sum(turn.tokens for turn in waiting) >= self.batch_tokens
                or now - min(turn.said_at for turn in waiting) >= self.max_delay)
