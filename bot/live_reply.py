"""A reply shown while the model writes it, at the platforms' pace: the newest words go out at most once a second.

The conversation service tells :meth:`LiveReply.hear` the words so far, as often as the model streams them;
hearing never waits. A task of its own shows the newest of them through the front-end's ``show`` (a Telegram
draft, a first message and then its edits, the console), at once the first time and then no sooner than
:data:`LIVE_EDIT_SECONDS` after the last (llmcord's pace, within Discord's 5 edits per 5 seconds and Telegram's
message a second in a chat). :meth:`LiveReply.close` stops it, waiting for a show under way (a message half
created would be lost) and for the pace, so the final message or edit that follows keeps it too (not after a
Telegram draft, which is no message: the final message replaces it at once). A show that fails stops the live
reply; the final message still goes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import suppress

log = logging.getLogger(__name__)

LIVE_EDIT_SECONDS = 1.0
"""The least time between two shows of one live reply (and between the last and the final message)."""


class LiveReply:
    """One reply in the making. ``hear`` is the service's ``on_text``; ``close`` before the final message."""

    def __init__(self, show: Callable[[str], Awaitable[None]], *, interval: float = LIVE_EDIT_SECONDS,
                 final_paced: bool = True) -> None:
        self._show = show
        self.interval = interval
        self.final_paced = final_paced
        """Whether the final message keeps the pace after the last show (an edit of the shown message, or a message
        in the same budget); a Telegram draft is not a message, and the final message replaces it at once."""
        self.shown = ""
        """What the user sees now ("" while nothing was shown)."""
        self.shows = 0
        self._latest = ""
        self._last_at: float | None = None
        self._changed = asyncio.Event()
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def hear(self, text: str) -> None:
        """The words so far (the whole reply, not what was added); shown soon, never awaited here."""
        if self._closing.is_set():
            return
        self._latest = text
        self._changed.set()
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="live-reply")

    async def close(self) -> bool:
        """No more shows; waits for one under way and for the pace since the last. True if anything was shown."""
        self._closing.set()
        if self._task is not None:
            await self._task
        if self._last_at is not None and self.final_paced:
            await asyncio.sleep(max(0.0, self._last_at + self.interval - time.monotonic()))
        return bool(self.shown)

    async def _run(self) -> None:
        while not self._closing.is_set():
            await self._first_of(self._changed, self._closing)
            self._changed.clear()
            text = self._latest
            if self._closing.is_set() or text == self.shown:
                continue
            try:
                await self._show(text)
            except Exception as exc:  # the platform's refusal or a network error: the final message still goes
                log.warning("showing a reply as it is written failed (%s): the reply goes whole", exc)
                return
            self.shown, self.shows, self._last_at = text, self.shows + 1, time.monotonic()
            with suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), self.interval)

    @staticmethod
    async def _first_of(*events: asyncio.Event) -> None:
        waits = [asyncio.create_task(event.wait()) for event in events]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
