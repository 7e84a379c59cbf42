"""The Telegram front-end (``mnemo telegram``): python-telegram-bot wired to the conversation and
memory-command services. Updates are handled concurrently (one slow LLM call holds no one else),
flood control is obeyed, and the bot polls by default or serves a webhook.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import signal
import warnings
from collections.abc import Callable, Coroutine
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from telegram import BotCommand, Update
from telegram.error import BadRequest, Conflict, Forbidden, NetworkError, RetryAfter, TelegramError
from telegram.ext import (
    Application,
    ApplicationBuilder,
    ApplicationHandlerStop,
    BaseRateLimiter,
    CallbackQueryHandler,
    CommandHandler,
    MessageHandler,
    TypeHandler,
    filters,
)
from telegram.warnings import PTBDeprecationWarning

from bot import telegram_render as render
from bot.telegram_access import AccessCommand, AccessGate, BlockedSince
from bot.telegram_chat import ChatHandler, answer_unanswered
from bot.telegram_handlers import (
    IMPORT_CAPTION,
    CommandHandlers,
    Context,
    answer_privately,
    locale_of,
)
from bot.telegram_once import HandledOnce
from shared.access.service import AccessService
from shared.app.container import BOTS, missing_token, webhook_url_problem
from shared.commands import table, texts
from shared.commands.service import MemoryCommands
from shared.commands.table import Frontend
from shared.conversation.service import ConversationService
from shared.db.leases import Lease
from shared.db.update_log import UpdateHandledElsewhere, UpdateInbox, marked_in
from shared.delivery.pacing import Pace
from shared.errors import ConfigError, MnemoError
from shared.metrics import record
from shared.settings import Settings

log = logging.getLogger(__name__)

ALLOWED_UPDATES = [Update.MESSAGE, Update.CALLBACK_QUERY]
TELEGRAM = BOTS[1]
NO_TOKEN = "create a bot with @BotFather and put its token in .env"
CONCURRENT_UPDATES = 256
POLLER_LEASE_SECONDS = 30.0
"""A long poller holds the ``telegram-poller:<bot id>`` lease; a second one for the same bot is refused."""
CONFLICT = "telegram_conflict"
"""Where the error handler leaves Telegram's 409 for :func:`run_telegram` (another process polls the bot)."""
ONE_POLLER = ("run one `mnemo telegram` per bot token, or webhook mode (--webhook-url) behind a load balancer for "
              "several replicas (docs/deployment.md)")
FLOOD_RETRY_ATTEMPTS = 4
FLOOD_MAX_WAIT_SECONDS = 60.0
NOT_RETRIED = frozenset({"sendChatAction", "sendMessageDraft"})  # a late "typing…" or draft is worthless
PACED_METHODS = frozenset({"sendMessage", "sendDocument", "sendPhoto", "copyMessage", "forwardMessage",
                           "editMessageText"})
"""What takes a slot in the chat's (and the bot's) budget: messages, and the edits of a live reply. A draft
(``sendMessageDraft``) is no message: it streams into the chat's input area at most once a second
(:mod:`bot.live_reply`), and taking a message's slot made the reply that replaces it wait a second. A draft
that meets flood control is not sent again: the reply goes whole."""
"""What Telegram counts as a message against a bot's limits (~30 a second overall, one a second in a chat)."""
SENDER_CHECK_GROUP, ACCESS_GROUP = -2, -1
"""The handler groups run before the commands' and the chat's: every update needs a sender, then access."""


def retry_seconds(error: RetryAfter) -> float:
    """``retry_after`` in seconds (an int or a timedelta, depending on PTB_TIMEDELTA)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value = error.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


def api_error_status(error: TelegramError) -> int | None:
    """The HTTP status a Bot API error stands for, for the metrics (None: no answer came)."""
    if isinstance(error, RetryAfter):
        return 429
    if isinstance(error, BadRequest):  # a NetworkError in python-telegram-bot's tree, but Telegram did answer
        return 400
    if isinstance(error, NetworkError):
        return None
    return 403 if isinstance(error, Forbidden) else 400


class FloodControl(BaseRateLimiter[None]):
    """Obeys flood control: a request refused with ``RetryAfter`` is sent again after the wait (bounded). Every
    request but ``getUpdates`` passes here, so here its failures are counted. With ``pace``, a message first
    waits for its slot in the bot's budget that every replica and worker shares (:mod:`shared.delivery.pacing`)."""

    def __init__(self, attempts: int = FLOOD_RETRY_ATTEMPTS, max_wait: float = FLOOD_MAX_WAIT_SECONDS, *,
                 pace: Pace | None = None) -> None:
        self.attempts, self.max_wait, self.pace = attempts, max_wait, pace

    async def initialize(self) -> None:
        """Nothing to set up."""

    async def shutdown(self) -> None:
        """Nothing to release."""

    async def process_request(self, callback: Callable[..., Coroutine[Any, Any, Any]], args: Any,
                              kwargs: dict[str, Any], endpoint: str, data: dict[str, Any],
                              rate_limit_args: None) -> Any:
        if self.pace is not None and endpoint in PACED_METHODS:
            await self.pace.wait(str(data.get("chat_id") or "") or None)
        attempt = 1
        while True:
            try:
                return await callback(*args, **kwargs)
            except TelegramError as exc:
                record.platform_api_error("telegram", api_error_status(exc))
                if not isinstance(exc, RetryAfter):
                    raise
                wait = retry_seconds(exc)
                if attempt >= self.attempts or wait > self.max_wait or endpoint in NOT_RETRIED:
                    raise
                log.warning("Telegram flood control on %s: retrying in %.0f s (attempt %d)", endpoint, wait, attempt)
                await asyncio.sleep(wait)
                attempt += 1


async def drop_without_sender(update: Update, context: Context) -> None:
    """An update no user sent (a malformed one: Telegram names a stand-in bot even for anonymous
    admins) reaches no handler: every command acts for, and answers, its sender."""
    if update.effective_user is None or update.effective_chat is None:
        log.info("update %s has no sender or chat: ignored", update.update_id)
        raise ApplicationHandlerStop


async def on_error(update: object, context: Context) -> None:
    """The one error handler: a domain error becomes the user's message; anything else is logged with
    its traceback and the user told that something went wrong."""
    error = context.error
    if isinstance(error, UpdateHandledElsewhere):  # a replica took it over after a silence, and got there first
        log.info("update %s: %s", getattr(update, "update_id", "?"), error)
        return
    if isinstance(error, Conflict):  # another process polls this bot (or a webhook is set): stop, say why
        log.error("Telegram refuses this poller: %s", error)
        context.application.bot_data[CONFLICT] = str(error)
        context.application.stop_running()
        return
    if not isinstance(update, Update):  # polling (getUpdates) failed, or a job did
        if isinstance(error, TelegramError):
            record.platform_api_error("telegram", api_error_status(error))
        if isinstance(error, NetworkError):
            log.warning("Telegram unreachable: %s", error)
        else:
            log.error("Telegram error outside an update", exc_info=error)
        return
    locale = locale_of(update)
    if isinstance(error, MnemoError):
        log.info("update %s refused: %s", update.update_id, _refusal(error))
        message = texts.error_text(error, locale)
    elif isinstance(error, Forbidden):
        log.info("update %s: the user cannot be reached: %s", update.update_id, error)
        return
    else:
        log.error("update %s failed", update.update_id, exc_info=error)
        message = render.text("failed", locale)
    try:
        if update.callback_query is not None:
            await update.callback_query.answer(render.fit_message(message, 200), show_alert=True)
        elif update.effective_message is not None:
            await answer_privately(update, context, message)
    except TelegramError as exc:
        log.warning("could not tell the user about the error: %s", exc)


class OnStart:
    """What the bot does once connected: set its command menus, then (in the background, while new
    updates are already handled) answer the messages it recorded but never answered before it stopped."""

    def __init__(self, service: ConversationService, access: AccessService) -> None:
        self.service = service
        self.access = access
        self.answering: asyncio.Task[None] | None = None

    async def __call__(self, application: Application) -> None:
        started = self.service.clock()  # what is recorded from now on is in a live process's hands
        await set_command_menus(application)
        self.answering = asyncio.get_running_loop().create_task(
            answer_unanswered(application.bot, self.service, skip=BlockedSince(self.access), recorded_by=started))


def _refusal(error: MnemoError) -> str:
    """What a refused update is logged as: the message's key or the error's type, never its parameters (they
    may quote what the user wrote, such as a time phrase)."""
    return getattr(error, "key", None) or type(error).__name__


async def set_command_menus(application: Application) -> None:
    """The command menu in English (every language) and Chinese, set only when it changed."""
    for language, column in ((None, 1), ("zh", 2)):
        menu = [BotCommand(entry[0], entry[column]) for entry in texts.COMMANDS]
        if tuple(await application.bot.get_my_commands(language_code=language)) != tuple(menu):
            await application.bot.set_my_commands(menu, language_code=language)


ATTACHMENTS = filters.PHOTO | filters.Sticker.ALL | filters.VOICE | filters.AUDIO | filters.Document.ALL
"""Messages with something besides text (:mod:`bot.telegram_attachments`); an export sent to be imported is not one."""


def file_base_url(api_base_url: str) -> str:
    """Where files are downloaded: ``…/bot`` → ``…/file/bot`` (api.telegram.org and local Bot API servers)."""
    return api_base_url.rstrip("/").removesuffix("/bot") + "/file/bot"


def build_application(settings: Settings, service: ConversationService, commands: MemoryCommands,
                      access: AccessService | None = None, *, inbox: UpdateInbox | None = None,
                      pace: Pace | None = None) -> Application:
    """The bot, every handler registered here in one block, with the one error handler (without ``access``,
    the lists are the settings' and the operators' table of ``commands``' database). With ``inbox`` (webhook
    replicas), each update is marked handled in the transaction of what it changed (:mod:`bot.telegram_once`)."""
    if settings.telegram_token is None:
        raise ConfigError(missing_token(TELEGRAM, NO_TOKEN))
    access = access or AccessService(commands.uow_factory, settings.access_policy(),
                                     refresh_seconds=settings.access_refresh_seconds)
    application = (ApplicationBuilder().token(settings.telegram_token.get_secret_value())
                   .base_url(settings.telegram_api_base_url).base_file_url(file_base_url(settings.telegram_api_base_url))
                   .concurrent_updates(CONCURRENT_UPDATES if inbox is None else HandledOnce(inbox, CONCURRENT_UPDATES))
                   .rate_limiter(FloodControl(pace=pace)).job_queue(None)
                   .post_init(OnStart(service, access)).build())
    on_command = CommandHandlers(commands, bot_name=settings.bot_name)
    application.add_handler(TypeHandler(Update, drop_without_sender), group=SENDER_CHECK_GROUP)
    application.add_handler(TypeHandler(Update, AccessGate(access)), group=ACCESS_GROUP)
    application.add_handlers([
        *(CommandHandler(name, callback) for name, callback in table.bind(Frontend.TELEGRAM, on_command.by_head(
            AccessCommand(access)))),
        MessageHandler(filters.Document.ALL & filters.CaptionRegex(IMPORT_CAPTION), on_command.import_file),
        MessageHandler(filters.StatusUpdate.MIGRATE, on_command.chat_migrated),
        CallbackQueryHandler(on_command.memory_page_button, pattern=r"^mp:"),
        CallbackQueryHandler(on_command.confirmation_button, pattern=r"^c[fx]:"),
        CallbackQueryHandler(on_command.reminder_button, pattern=r"^r[dsc]:"),
        MessageHandler(filters.UpdateType.MESSAGE & filters.TEXT & ~filters.COMMAND, ChatHandler(service)),
        MessageHandler(filters.UpdateType.MESSAGE & ATTACHMENTS & ~filters.CaptionRegex(IMPORT_CAPTION),
                       ChatHandler(service)),
    ])
    application.add_error_handler(on_error)
    return application


def run_telegram(settings: Settings, *, webhook_url: str | None = None, listen: str = "127.0.0.1",
                 port: int = 8443, secret_token: str | None = None, workers: bool | None = None) -> int:
    """Run the bot until SIGINT/SIGTERM: long polling, or a webhook server when ``webhook_url`` is given.
    On the embedded database (or with ``workers``) a worker, beat and the panel's API run beside it."""
    from shared.app.bootstrap import access_service, conversation_service, memory_commands, runtime
    from shared.app.ops_server import serve_operations
    from shared.app.processes import companions
    from shared.limits import shared_storage

    if settings.telegram_token is None:
        raise ConfigError(missing_token(TELEGRAM, NO_TOKEN))
    if webhook_url is not None and (problem := webhook_url_problem(webhook_url)):
        raise ConfigError(problem)
    if webhook_url is not None and not secret_token:
        raise ConfigError("webhook mode needs TELEGRAM_WEBHOOK_SECRET (Telegram sends it with every update)")
    if webhook_url is not None and importlib.util.find_spec("tornado") is None:
        raise ConfigError("webhook mode needs python-telegram-bot[webhooks] installed (it serves with tornado)")
    replicas = webhook_url is not None  # each update handled once, marked in the commit of what it changed
    with runtime(settings, around_commit=marked_in if replicas else None) as rt, \
            companions(rt.database_url, settings.data_dir / "logs", embedded=settings.uses_embedded_database,
                       wanted=workers, metrics_port=settings.metrics_port), \
            serve_operations(settings, rt.database_url, "telegram"):
        service = conversation_service(rt)
        commands = memory_commands(rt, embeddings_wanted=service.embedder is not None)
        inbox = UpdateInbox(rt.engine, "telegram") if replicas else None
        pace = Pace("telegram", shared_storage(settings.redis_url, rt.engine))  # shared with every sender
        application = build_application(settings, service, commands, access_service(rt), inbox=inbox, pace=pace)
        if webhook_url is None:
            _poll(application, poller_lease(rt.engine, settings.telegram_token.get_secret_value()))
        else:
            from bot.telegram_webhook import serve_until_signalled

            asyncio.run(serve_until_signalled(application, url=webhook_url, listen=listen, port=port,
                                              path=urlsplit(webhook_url).path, secret_token=secret_token,
                                              allowed_updates=ALLOWED_UPDATES, inbox=inbox))
    return 0


def poller_lease(engine, token: str) -> Lease:
    """The lease of the one long poller of this bot (named by the bot's id, the token's public part)."""
    return Lease(engine, f"telegram-poller:{token.split(':', 1)[0][:40]}", POLLER_LEASE_SECONDS)


def _poll(application: Application, lease: Lease) -> None:
    """Long polling while this process holds the bot's poller lease; a second poller of the same database is
    refused before it asks Telegram anything, and one Telegram refuses (409: another deployment polls the
    same token) stops. Both raise :class:`ConfigError` naming what to do."""
    if not lease.take():
        raise ConfigError(f"another `mnemo telegram` already polls this bot ({lease.current_holder()}); "
                          f"{ONE_POLLER}. A poller that stopped without a word gives way within "
                          f"{POLLER_LEASE_SECONDS:.0f} s.")
    application.post_init = _webhook_refused_first(application.post_init)
    with lease.kept(on_lost=lambda: os.kill(os.getpid(), signal.SIGTERM)):
        application.run_polling(allowed_updates=ALLOWED_UPDATES, drop_pending_updates=False)
    if CONFLICT in application.bot_data:
        raise ConfigError(f"Telegram says another process polls this bot token "
                          f"({application.bot_data[CONFLICT]}); {ONE_POLLER}.")


def _webhook_refused_first(on_start: Callable[[Application], Coroutine[Any, Any, None]] | None):
    """``on_start`` preceded by a look at the bot's webhook: python-telegram-bot deletes a webhook before it
    polls, which would silently take the updates away from the webhook replicas that set it."""

    async def refuse_then_start(application: Application) -> None:
        url = (await application.bot.get_webhook_info()).url
        if url:
            raise ConfigError(f"a webhook is set for this bot ({urlsplit(url).netloc}): webhook replicas receive "
                              f"its updates, and polling would take them away. {ONE_POLLER[0].upper()}"
                              f"{ONE_POLLER[1:]}; to poll instead, stop the replicas and delete the webhook.")
        if on_start is not None:
            await on_start(application)

    return refuse_then_start
