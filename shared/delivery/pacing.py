"""Outgoing messages within the platforms' rate limits, shared by every worker: a send waits for its slot
rather than being refused by the platform (or dropped).

Telegram allows a bot about 30 messages a second overall and one a second in one chat; Discord 50
requests a second overall and 5 messages per 5 seconds in one channel. The counts live where
:func:`shared.limits.shared_storage` keeps them (Redis, or PostgreSQL), so two workers sending a
burst of due reminders share one budget, with the bots' own replies (the Telegram replicas through
python-telegram-bot's rate limiter, the Discord shards through their HTTP session). A platform's own
429 is still obeyed (the send is retried).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from limits.storage import Storage

from shared.limits import SharedLimit
from shared.reminders.service import ReminderSender, ReminderTarget

log = logging.getLogger(__name__)

MAX_WAIT_SECONDS = 60.0
"""A send waits at most this long for its slot in all; past it, it goes (the platform's 429 is the judge)."""


@dataclass(frozen=True)
class PlatformPace:
    overall: str
    per_chat: str
    background: str
    """The most of ``overall`` the workers' sends (reminders, follow-ups) take, about a third: the rest is kept for the
    bots' live replies, so a burst of due reminders does not hold a user's answer back a second."""


PACES = {"telegram": PlatformPace(overall="30/second", per_chat="1/second", background="10/second"),
         "discord": PlatformPace(overall="50/second", per_chat="5 per 5 seconds", background="15/second")}


class Pace:
    """One platform's budget, shared by every process that sends: the workers' reminders
    (:class:`PacedSender`) and the bots' own replies (:meth:`wait`). A send takes a slot in its chat, then
    one overall; without a chat (a request that posts no message), one overall. A ``background`` pace (the
    workers') also takes a slot of its own share first (:attr:`PlatformPace.background`)."""

    def __init__(self, platform: str, storage: Storage, *, background: bool = False) -> None:
        pace = PACES[platform]
        self.platform = platform
        self.overall = SharedLimit(storage, f"send-{platform}", pace.overall)
        self.per_chat = SharedLimit(storage, f"send-{platform}-chat", pace.per_chat)
        self.share = SharedLimit(storage, f"send-{platform}-background", pace.background) if background else None

    def slots(self, chat: str | None) -> list[tuple[SharedLimit, str]]:
        own = [(self.per_chat, chat)] if chat else []
        share = [(self.share, "all")] if self.share is not None else []
        return [*own, *share, (self.overall, "all")]

    def take(self, chat: str | None, *, sleep: Callable[[float], None] = time.sleep) -> float:
        """Wait (blocking) for the slots; the seconds waited."""
        waited = 0.0
        for limit, key in self.slots(chat):
            while waited < MAX_WAIT_SECONDS and (wait := self._hit(limit, key)) is not None:
                sleep(min(wait, MAX_WAIT_SECONDS - waited))
                waited += wait
        return waited

    async def wait(self, chat: str | None) -> float:
        """:meth:`take` for an event loop: the counting runs on a worker thread, the waiting is a sleep."""
        waited = 0.0
        for limit, key in self.slots(chat):
            while waited < MAX_WAIT_SECONDS and (wait := await asyncio.to_thread(self._hit, limit, key)) is not None:
                await asyncio.sleep(min(wait, MAX_WAIT_SECONDS - waited))
                waited += wait
        if waited:
            log.info("a %s message waited %.1f s for its slot in the platform's rate limit", self.platform, waited)
        return waited

    def _hit(self, limit: SharedLimit, key: str) -> float | None:
        """The wait for a slot; None (go) when the counts cannot be reached: a message is not held back, or
        lost, because Redis or the database is away, and the platform's own 429 still applies."""
        try:
            return limit.hit(key)
        except Exception as exc:  # the storage's own errors: redis, psycopg, SQLAlchemy
            log.warning("the %s send budget could not be counted (%s): sending without waiting", self.platform,
                        type(exc).__name__)
            return None


class PacedSender:
    """``sender`` with the platform's pace: each send takes a slot in its chat and one overall first."""

    def __init__(self, sender: ReminderSender, platform: str, storage: Storage, *,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.sender, self.sleep = sender, sleep
        self.pace = Pace(platform, storage, background=True)

    def send(self, target: ReminderTarget, text: str, *, idempotency_key: str) -> None:
        chat = target.platform_chat_id or target.platform_user_id or "-"
        if waited := self.pace.take(chat, sleep=self.sleep):
            log.info("a reminder waited %.1f s for its slot in the platform's rate limit", waited)
        self.sender.send(target, text, idempotency_key=idempotency_key)

    def close(self) -> None:
        close = getattr(self.sender, "close", None)
        if close is not None:
            close()
