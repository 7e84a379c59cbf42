"""Keeping a message while the database is away: a step is tried again, with growing waits, until it
works or the patience runs out. The front-end is told once, at the first failure, so it can let the
user know their message is kept."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TypeVar

from shared.errors import DatabaseUnavailable

log = logging.getLogger(__name__)

T = TypeVar("T")
FIRST_WAIT_SECONDS = 0.5
MAX_WAIT_SECONDS = 10.0
OnDelay = Callable[[], Awaitable[None]]
"""Called once when a message has to wait for the database (e.g. to say "I'll answer when it's back")."""


async def patiently(step: Callable[[bool], T], patience: timedelta, on_delay: OnDelay | None = None,
                    *, what: str = "a step") -> T:
    """``step(retrying)`` in a thread; again after waits of 0.5, 1, 2 … 10 s while it raises
    :class:`DatabaseUnavailable`, for at most ``patience``; then the last failure is raised."""
    deadline = time.monotonic() + patience.total_seconds()
    wait, retrying = FIRST_WAIT_SECONDS, False
    while True:
        try:
            return await asyncio.to_thread(step, retrying)
        except DatabaseUnavailable as exc:
            if time.monotonic() + wait > deadline:
                log.error("the database stayed away; giving up on %s: %s", what, exc.__cause__ or exc)
                raise
            if not retrying:
                log.warning("the database is away; %s waits for it: %s", what, exc.__cause__ or exc)
                await _tell(on_delay)
            retrying = True
        await asyncio.sleep(wait)
        wait = min(wait * 2, MAX_WAIT_SECONDS)


async def _tell(on_delay: OnDelay | None) -> None:
    if on_delay is None:
        return
    try:
        await on_delay()
    except Exception:  # telling the user is a courtesy; the message is kept either way
        log.warning("could not tell the user their message waits for the database", exc_info=True)
