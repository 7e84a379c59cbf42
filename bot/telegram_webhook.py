"""Webhook mode: the updates Telegram POSTs, served by tornado with a receiver of our own.

python-telegram-bot's own webhook handler answers 500 to a body that is not UTF-8 JSON (and
Telegram retries any answer that is not 2xx), logs a body it cannot read whole at CRITICAL, and
reads bodies up to tornado's 100 MB. Here a request without the secret token is answered 403; a
body over :data:`MAX_UPDATE_BYTES` is refused with 400 by tornado before it is read; a body that is
not an update (not UTF-8, not JSON, nested deeper than 32, not an object, an ``update_id`` that is not a
whole number from 0 to 2^63-1, or one PTB cannot read)
is answered 200, so that Telegram does not send it again, logged as one line without its content,
and dropped. Every update read goes to the application's queue, as PTB's handler does; with an
:class:`~shared.db.update_log.UpdateInbox` (replicas), only once it is recorded there, and only by the
replica that received it first (answered 503 when the database cannot record it: Telegram sends it again).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import re
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import tornado.netutil
import tornado.web
from sqlalchemy.exc import DataError
from telegram import Update
from telegram.ext import Application
from tornado.httpserver import HTTPServer

from bot.api.json_body import parse_json_body
from bot.telegram_once import reclaim_forever
from shared.db.availability import database_unreachable
from shared.db.update_log import UpdateInbox

log = logging.getLogger(__name__)

MAX_UPDATE_BYTES = 1024 * 1024
"""Telegram's updates are a few KB; a message's text is at most 4096 characters."""
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
MAX_REASON_CHARS = 120
MAX_UPDATE_ID = 2**63 - 1


class UpdateReceiver(tornado.web.RequestHandler):
    """``POST`` of one update: checked, read and queued, or dropped with one log line."""

    SUPPORTED_METHODS = ("POST",)  # type: ignore[assignment]

    def initialize(self, bot_application: Application, secret_token: str, inbox: UpdateInbox | None) -> None:
        self.bot_application, self.secret_token, self.inbox = bot_application, secret_token, inbox

    async def post(self) -> None:
        """403 without the secret token; 503 when the update cannot be recorded; otherwise 200, whether the
        update was read or dropped."""
        given = self.request.headers.get(SECRET_HEADER, "")
        if not hmac.compare_digest(given.encode(), self.secret_token.encode()):
            log.info("webhook: a request from %s without the right secret token", self.request.remote_ip)
            self.set_status(403)
            return
        update = self._update()
        if update is not None and await self._first_delivery(update):
            await self.bot_application.update_queue.put(update)

    async def _first_delivery(self, update: Update) -> bool:
        """Whether this update is new to every replica (recorded now); 503 when it cannot be recorded."""
        if self.inbox is None:
            return True
        try:
            first = await asyncio.to_thread(self.inbox.receive, update.update_id, self.request.body.decode())
        except DataError as exc:  # a value the table cannot hold: an update the bot cannot read, not a failure
            _dropped("an update the inbox cannot record", exc)
            return False
        except Exception as exc:
            if not database_unreachable(exc):
                raise
            log.warning("webhook: update %s not recorded (the database is away): Telegram will send it again",
                        update.update_id)
            self.set_status(503)
            return False
        if not first:
            log.info("webhook: update %s was received before (delivered again, or to another replica): dropped",
                     update.update_id)
        return first

    def _update(self) -> Update | None:
        body = self.request.body
        try:
            data = parse_json_body(body)
        except (json.JSONDecodeError, RecursionError) as exc:
            _dropped(f"a body of {len(body)} bytes that is not JSON the bot reads", exc)
            return None
        if not isinstance(data, dict):
            _dropped(f"a JSON {type(data).__name__} instead of an update")
            return None
        if not readable_update_id(data.get("update_id")):
            _dropped(f"an update the bot cannot read: its update_id is not a whole number from 0 to "
                     f"2^63-1 (a JSON {type(data.get('update_id')).__name__})")
            return None
        try:
            return Update.de_json(data, self.bot_application.bot)
        except Exception as exc:  # whatever PTB cannot read is dropped, never retried
            _dropped(f"update {data.get('update_id')!r:.20} that PTB cannot read", exc)
            return None

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        """One line, never the request (its headers hold the secret token)."""
        log.error("webhook: %s", type(value).__name__ if value is not None else "error")


def readable_update_id(value: object) -> bool:
    """Telegram's ``update_id``: a whole JSON number (not ``true``), from 0 to 2^63-1 (what ``platform_updates``
    stores). Anything else is an update the bot cannot read."""
    return type(value) is int and 0 <= value <= MAX_UPDATE_ID


def _dropped(what: str, error: BaseException | None = None) -> None:
    reason = getattr(error, "msg", None) or (str(error) if error is not None else "")
    detail = f" ({type(error).__name__}: {reason[:MAX_REASON_CHARS]})" if error is not None else ""
    log.warning("webhook: dropped %s%s", what, detail)


def _no_access_log(handler: tornado.web.RequestHandler) -> None:
    """Requests are not logged one by one."""


@asynccontextmanager
async def webhook_server(application: Application, *, listen: str, port: int, path: str,
                         secret_token: str, inbox: UpdateInbox | None = None) -> AsyncIterator[int]:
    """Updates POSTed to ``/path`` on ``listen:port`` go to ``application`` while the block runs (those
    ``inbox`` records first); yields the port (``port=0`` binds a free one)."""
    routes = [(rf"/{re.escape(path.strip('/'))}/?", UpdateReceiver,
               {"bot_application": application, "secret_token": secret_token, "inbox": inbox})]
    server = HTTPServer(tornado.web.Application(routes, log_function=_no_access_log),
                        max_body_size=MAX_UPDATE_BYTES)
    sockets = tornado.netutil.bind_sockets(port, address=listen)
    server.add_sockets(sockets)
    try:
        yield sockets[0].getsockname()[1]
    finally:
        server.stop()
        await server.close_all_connections()


@asynccontextmanager
async def webhook_running(application: Application, *, url: str, listen: str, port: int, path: str,
                          secret_token: str, allowed_updates: list[str],
                          inbox: UpdateInbox | None = None) -> AsyncIterator[int]:
    """The bot started, serving its webhook and registered with Telegram while the block runs; yields
    the port. With ``inbox`` (replicas), it also takes over what a stopped replica left unhandled.
    On leaving, the server stops first, then the application handles what it was given."""
    async with application:
        if application.post_init is not None:
            await application.post_init(application)
        await application.start()
        reclaiming = asyncio.create_task(reclaim_forever(application, inbox)) if inbox is not None else None
        try:
            async with webhook_server(application, listen=listen, port=port, path=path,
                                      secret_token=secret_token, inbox=inbox) as bound:
                await application.bot.set_webhook(url, secret_token=secret_token, allowed_updates=allowed_updates,
                                                  drop_pending_updates=False)
                yield bound
        finally:
            if reclaiming is not None:
                reclaiming.cancel()
            await application.stop()


async def serve_until_signalled(application: Application, **webhook: Any) -> None:
    """Run :func:`webhook_running` until SIGINT or SIGTERM."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with webhook_running(application, **webhook) as port:
        log.info("webhook: listening on %s:%d", webhook["listen"], port)
        await stop.wait()
