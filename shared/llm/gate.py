"""The user's turn first on a model server the bots and the workers share.

A self-hoster often runs one local model (llama.cpp with one slot) for the bot and the workers. A server
like that answers one request at a time, in the order they came, so a worker's extraction queued ahead of a
user's turn makes the person wait for it. The gate, shared by every process (Redis or PostgreSQL:
:mod:`shared.db.model_gate`), keeps two rules:

- a live turn never waits for the gate: it says it is there (:meth:`GatedCalls.live`) and is sent at once;
- a background call is sent only when fewer than the server's slots of background calls are in flight and
  no live turn is (:meth:`GatedCalls.background`); after waiting :data:`BACKGROUND_PATIENCE` it stops yielding
  to turns and waits only for a free slot, so a steady stream of users cannot starve the workers.

So a turn waits for at most the background calls already on the server, at most one call's time each with
as many of them as the server has slots. Each hold ends when its call does, or when its lease runs out (a
process that died holding it).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Protocol

BACKGROUND_PATIENCE = 120.0
"""Seconds a background call yields to live turns before it only waits for a free slot."""
POLL_SECONDS = 0.05
"""How often a waiting background call looks again."""
LEASE_MARGIN = 5.0
"""Seconds a hold outlives its call's own deadline (a process that died holding it frees it then)."""

log = logging.getLogger(__name__)


class ModelGate(Protocol):
    """Where the holds of every process are counted (one short operation each)."""

    slots: int

    def enter_live(self, holder: str, seconds: float) -> None:
        """A live turn is in flight for at most ``seconds``."""

    def try_background(self, holder: str, seconds: float, yield_to_live: bool) -> bool:
        """Hold a background slot for at most ``seconds`` if one is free (and, with ``yield_to_live``, no live
        turn is in flight); False otherwise."""

    def leave(self, holder: str) -> None:
        """The holder's call ended."""


@dataclass
class GatedCalls:
    """How the chat model's calls pass the gate (the blocking operations run off the event loop)."""

    gate: ModelGate
    patience: float = BACKGROUND_PATIENCE
    poll: float = POLL_SECONDS

    @asynccontextmanager
    async def live(self, seconds: float) -> AsyncIterator[None]:
        holder = uuid.uuid4().hex
        await asyncio.to_thread(self.gate.enter_live, holder, seconds + LEASE_MARGIN)
        try:
            yield
        finally:
            await asyncio.to_thread(self.gate.leave, holder)

    @asynccontextmanager
    async def background(self, seconds: float) -> AsyncIterator[float]:
        """Held while the call runs; yields the seconds it waited for its turn."""
        holder, started = uuid.uuid4().hex, time.monotonic()
        while not await asyncio.to_thread(self.gate.try_background, holder, seconds + LEASE_MARGIN,
                                          time.monotonic() - started < self.patience):
            await asyncio.sleep(self.poll)
        waited = time.monotonic() - started
        if waited >= 1:
            log.debug("a background model call waited %.1f s for live turns and free slots", waited)
        try:
            yield waited
        finally:
            await asyncio.to_thread(self.gate.leave, holder)
