"""Webhook replicas handle each Telegram update once (:mod:`shared.db.update_log` holds the rule).

The receiver records an update before answering Telegram (:mod:`bot.telegram_webhook`); here, each update
is handled with the update *in hand*, so the first transaction it commits (the turn, the reminder, the
memory forgotten) marks it handled, and one that committed nothing is marked when its handling ends. Every
:data:`RECLAIM_EVERY_SECONDS` a replica takes over the updates another replica received and never handled.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable
from typing import Any

from telegram import Update
from telegram.ext import Application, SimpleUpdateProcessor

from shared.db.update_log import UpdateHandledElsewhere, UpdateInbox, UpdateInHand, handling

log = logging.getLogger(__name__)

RECLAIM_EVERY_SECONDS = 30.0


class HandledOnce(SimpleUpdateProcessor):
    """Runs each update's handlers with the update in hand, then marks it handled if no commit did."""

    def __init__(self, inbox: UpdateInbox, max_concurrent_updates: int) -> None:
        super().__init__(max_concurrent_updates)
        self.inbox = inbox

    async def do_process_update(self, update: object, coroutine: Awaitable[Any]) -> None:
        if not isinstance(update, Update):
            await coroutine
            return
        in_hand = UpdateInHand(self.inbox.platform, update.update_id)
        with handling(in_hand):
            await coroutine
        try:
            await asyncio.to_thread(self.inbox.finish, in_hand)
        except UpdateHandledElsewhere:
            log.info("update %s was handled by another replica meanwhile", update.update_id)
        except Exception:  # it stays unmarked: a replica claims it again after a silence
            log.exception("could not mark update %s handled", update.update_id)


async def reclaim_forever(application: Application, inbox: UpdateInbox,
                          every: float = RECLAIM_EVERY_SECONDS) -> None:
    """Now and every ``every`` seconds: queue here the updates a replica received and never handled."""
    while True:
        try:
            bodies = await asyncio.to_thread(inbox.reclaim)
        except Exception as exc:  # the database is away: try again at the next round
            log.warning("could not look for updates left unhandled: %s", exc)
            bodies = []
        for body in bodies:
            try:
                await application.update_queue.put(Update.de_json(json.loads(body), application.bot))
            except Exception as exc:  # read once already; a PTB upgrade may refuse it now
                log.warning("a reclaimed update could not be read (%s): dropped", type(exc).__name__)
        await asyncio.sleep(every)
