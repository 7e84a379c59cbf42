"""Back-pressure on the hot path: how many turns of one bot process wait for the language model at once.

When the model (or what is in front of it) slows down, turns pile up. :class:`TurnGate` lets at most
``slots`` of them into the LLM call at a time; the next ``queue_limit`` wait their turn, first come
first served. A turn that has waited ``busy_after`` seconds gets its front-end's "busy, one moment"
said once; a turn that finds the queue full, or has waited ``give_up_after`` seconds, does not get a
slot and is answered by the offline responder (its message is recorded and the worker still reads it,
so nothing is lost). The bot's memory stays bounded by the gate; background work waits in the broker
(jobs are rows of the outbox and messages in the broker, never held by the bot).

Owns the gate and its settings. Imports asyncio only; the service decides what "no slot" means.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

log = logging.getLogger(__name__)

OnBusy = Callable[[], Awaitable[None]]
"""Said once to a user whose turn waits for a slot (e.g. "busy, one moment")."""


@dataclass(frozen=True)
class PressureConfig:
    slots: int = 64
    """Turns in the LLM call at once, in one process (``TURN_LLM_CONCURRENCY``)."""
    queue_limit: int = 256
    """Turns waiting for a slot at most (``TURN_QUEUE_LIMIT``); past it a turn is answered offline at once."""
    busy_after: float = 8.0
    """Seconds of waiting before the user is told the bot is busy (``TURN_BUSY_NOTICE_SECONDS``)."""
    give_up_after: float = 30.0
    """Seconds of waiting before the turn is answered offline (``TURN_QUEUE_SECONDS``)."""


class TurnGate:
    """At most ``slots`` turns in the LLM at once, a bounded queue behind them; one per process.

    Slots are handed over first come, first served: a finishing turn passes its slot to the longest
    waiting one. Plain futures of the running event loop, not an ``asyncio.Semaphore``, so a gate can
    serve one event loop after another (the benchmarks run each message on a loop of its own)."""

    def __init__(self, config: PressureConfig | None = None) -> None:
        self.config = config or PressureConfig()
        self._running = 0
        self._waiting: deque[asyncio.Future[None]] = deque()

    @property
    def running(self) -> int:
        return self._running

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    @asynccontextmanager
    async def slot(self, on_busy: OnBusy | None = None) -> AsyncIterator[bool]:
        """Yields True holding a slot for the body, or False when the turn gets none (answer it without
        the model). ``on_busy`` is awaited once if the turn waits ``busy_after`` seconds."""
        admitted = await self._acquire(on_busy)
        try:
            yield admitted
        finally:
            if admitted:
                self._release()

    async def _acquire(self, on_busy: OnBusy | None) -> bool:
        if self._running < self.config.slots and not self._waiting:
            self._running += 1
            return True
        if len(self._waiting) >= self.config.queue_limit:
            log.warning("%d turns wait for the model already; this one is answered offline", len(self._waiting))
            return False
        handed = asyncio.get_running_loop().create_future()
        self._waiting.append(handed)
        busy_after, give_up_after = self.config.busy_after, self.config.give_up_after
        try:
            if await self._handed_within(handed, min(busy_after, give_up_after)):
                return True
            if give_up_after > busy_after:  # else the offline answer comes at once, with the busy notice
                await _tell(on_busy)
                if await self._handed_within(handed, give_up_after - busy_after):
                    return True
        except BaseException:  # cancelled while waiting: a slot handed over meanwhile goes on to the next turn
            self._leave(handed)
            raise
        self._leave(handed)
        log.warning("a turn waited %.0f s for the model; answered offline", self.config.give_up_after)
        return False

    @staticmethod
    async def _handed_within(handed: asyncio.Future[None], seconds: float) -> bool:
        if not handed.done() and seconds > 0:
            await asyncio.wait({handed}, timeout=seconds)
        return handed.done() and not handed.cancelled()

    def _leave(self, handed: asyncio.Future[None]) -> None:
        """Give up waiting; a slot that was handed to this turn already is passed on."""
        if handed.done() and not handed.cancelled():
            self._release()
            return
        handed.cancel()
        self._waiting.remove(handed)

    def _release(self) -> None:
        while self._waiting:
            handed = self._waiting.popleft()
            if not handed.done():
                handed.set_result(None)  # the slot goes straight to the longest waiting turn
                return
        self._running -= 1


async def _tell(on_busy: OnBusy | None) -> None:
    if on_busy is None:
        return
    try:
        await on_busy()
    except Exception:  # telling the user is a courtesy; the turn goes on waiting either way
        log.warning("could not tell the user the bot is busy", exc_info=True)
