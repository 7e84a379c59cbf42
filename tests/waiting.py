"""Waiting in tests for what can be observed, never for a length of time.

A test that needs something to have happened (a row written, a request seen by a fake, a line
logged, a process gone) polls for exactly that, with a deadline that only bounds a hang: on a slow
machine it waits longer, on a fast one not at all.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
POLL_SECONDS = 0.05


def wait_for(condition: Callable[[], T], seconds: float, what: str | Callable[[], str]) -> T:
    """Poll ``condition()`` until it is truthy and return it; fail naming ``what`` after ``seconds``
    (``what`` may be a function, to describe the state at the time of the failure)."""
    deadline = time.monotonic() + seconds
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds:g} s waiting for {what() if callable(what) else what}")
        time.sleep(POLL_SECONDS)
    return value


async def until(condition: Callable[[], T], seconds: float = 15.0, what: str = "the bot to do it") -> T:
    """:func:`wait_for` inside an event loop: polls without blocking the loop the code under test runs on."""
    deadline = asyncio.get_running_loop().time() + seconds
    while not (value := condition()):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {seconds:g} s waiting for {what}")
        await asyncio.sleep(POLL_SECONDS / 2)
    return value
