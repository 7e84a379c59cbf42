"""How fast a model answers, and the ``LLM_TIMEOUT_SECONDS`` that follows from it. Pure: the figures come
from :mod:`shared.llm.speed_probe` (``mnemo doctor``) or ``make test-llm``.

A turn's time is the wait for its first token (the server reads the prompt) plus its answer written at the
model's speed. :data:`TYPICAL_TURN_TOKENS` is what a turn's JSON answer measured on the real server of
``make test-llm`` (never more than ``LLM_MAX_OUTPUT_TOKENS``); the advised deadline leaves half again as
much for a longer prompt (memories and history), a longer answer and a busier machine, rounded up to whole
ten seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

TYPICAL_TURN_TOKENS = 200
"""Completion tokens of a turn's answer (reply, emotion, memories, topic): 10 of 12 answers ``make test-llm``
timed ran to its 200-token cap, the others wrote 139 and 148 (README "LLM servers")."""
TIMEOUT_MARGIN = 1.5
TIMEOUT_STEP_SECONDS = 10
SHORTEST_ADVISED_TIMEOUT = 30  # the default: a fast model needs no longer, and no shorter is advised


@dataclass(frozen=True)
class SpeedReading:
    """One streamed answer, timed: ``first_token_seconds`` from sending (None: no token before the
    deadline), ``tokens`` written in all, the last of them ``last_token_seconds`` after sending."""

    mode: str
    first_token_seconds: float | None
    tokens: int
    last_token_seconds: float | None
    pieces: int  # streamed chunks with content (one token each on llama.cpp; a few on some APIs)

    @property
    def tokens_per_second(self) -> float | None:
        """Writing speed after the first piece; None with fewer than two pieces."""
        if self.first_token_seconds is None or self.last_token_seconds is None or self.pieces < 2:
            return None
        span = self.last_token_seconds - self.first_token_seconds
        after_first = self.tokens * (self.pieces - 1) / self.pieces
        return after_first / span if span > 0 else None

    def turn_seconds(self, tokens: int = TYPICAL_TURN_TOKENS) -> float | None:
        """How long an answer of ``tokens`` takes at this speed; None when the speed is unknown."""
        speed = self.tokens_per_second
        if speed is None or self.first_token_seconds is None:
            return None
        return self.first_token_seconds + tokens / speed

    def describe(self) -> str:
        if self.first_token_seconds is None:
            return "no token yet"
        speed = self.tokens_per_second
        rate = f", {speed:.1f} tokens/s" if speed is not None else ""
        return f"first token after {self.first_token_seconds:.1f} s{rate} ({self.tokens} tokens timed)"


def advised_timeout(turn_seconds: float) -> int:
    """The ``LLM_TIMEOUT_SECONDS`` for turns that take ``turn_seconds``: half again, whole ten seconds."""
    padded = turn_seconds * TIMEOUT_MARGIN
    return max(SHORTEST_ADVISED_TIMEOUT, math.ceil(padded / TIMEOUT_STEP_SECONDS) * TIMEOUT_STEP_SECONDS)
