"""The Telegram front-end (``mnemo telegram``): python-telegram-bot wired to the conversation and
memory-command services. Updates are handled concurrently (one slow LLM call holds no one else),
flood control is obeyed, and the bot polls by default or serves a webhook.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import warnings
from collections.abc import Callable, Coroutine
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from telegram import BotCommand, Update
from telegram.error import Forbidden, NetworkError, RetryAfter, TelegramError
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
from bot.telegram_chat import ChatHandler, answer_unanswered
from bot.telegram_handlers import (
    IMPORT_CAPTION,
    CommandHandlers,
    Context,
    answer_privately,
    locale_of,
)
from shared.commands import texts
from shared.commands.service import MemoryCommands
from shared.conversation.service import ConversationService
from shared.errors import ConfigError, MnemoError
from shared.settings import Settings

log = logging.getLogger(__name__)

ALLOWED_UPDATES = [Update.MESSAGE, Update.CALLBACK_QUERY]
CONCURRENT_UPDATES = 256
FLOOD_RETRY_ATTEMPTS = 4
FLOOD_MAX_WAIT_SECONDS = 60.0
NOT_RETRIED = frozenset({"sendChatAction"})  # a late "typing…" is worthless


def retry_seconds(error: RetryAfter) -> float:
    """``retry_after`` in seconds (an int or a timedelta, depending on PTB_TIMEDELTA)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value = error.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


class FloodControl(BaseRateLimiter[None]):
    """Obeys flood control: a request refused with ``RetryAfter`` is sent again after the wait (bounded)."""

    def __init__(self, attempts: int = FLOOD_RETRY_ATTEMPTS, max_wait: float = FLOOD_MAX_WAIT_SECONDS) -> None:
        self.attempts, self.max_wait = attempts, max_wait

    async def initialize(self) -> None:
        """Nothing to set up."""

    async def shutdown(self) -> None:
        """Nothing to release."""

    async def process_request(self, callback: Callable[..., Coroutine[Any, Any, Any]], args: Any,
                              kwargs: dict[str, Any], endpoint: str, data: dict[str, Any],
                              rate_limit_args: None) -> Any:
        attempt = 1
        while True:
            try:
                return await callback(*args, **kwargs)
            except RetryAfter as exc:
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
    if not isinstance(update, Update):
        if isinstance(error, NetworkError):
            log.warning("Telegram unreachable: %s", error)
        else:
            log.error("Telegram error outside an update", exc_info=error)
        return
    locale = locale_of(update)
    if isinstance(error, MnemoError):
        log.info("update %s refused: %r", update.update_id, error)
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

    def __init__(self, service: ConversationService) -> None:
        self.service = service
        self.answering: asyncio.Task[None] | None = None

    async def __call__(self, application: Application) -> None:
        await set_command_menus(application)
        self.answering = asyncio.get_running_loop().create_task(answer_unanswered(application.bot, self.service))


async def set_command_menus(application: Application) -> None:
    """The command menu in English (every language) and Chinese, set only when it changed."""
    for language, column in ((None, 1), ("zh", 2)):
        menu = [BotCommand(entry[0], entry[column]) for entry in texts.COMMANDS]
        if tuple(await application.bot.get_my_commands(language_code=language)) != tuple(menu):
            await application.bot.set_my_commands(menu, language_code=language)


def file_base_url(api_base_url: str) -> str:
    """Where files are downloaded: ``…/bot`` → ``…/file/bot`` (api.telegram.org and local Bot API servers)."""
    return api_base_url.rstrip("/").removesuffix("/bot") + "/file/bot"


def build_application(settings: Settings, service: ConversationService, commands: MemoryCommands) -> Application:
    """The bot, every handler registered here in one block, with the one error handler."""
    if settings.telegram_token is None:
        raise ConfigError("TELEGRAM_TOKEN is not set: create a bot with @BotFather and put its token there")
    application = (ApplicationBuilder().token(settings.telegram_token.get_secret_value())
                   .base_url(settings.telegram_api_base_url).base_file_url(file_base_url(settings.telegram_api_base_url))
                   .concurrent_updates(CONCURRENT_UPDATES).rate_limiter(FloodControl()).job_queue(None)
                   .post_init(OnStart(service)).build())
    on_command = CommandHandlers(commands, bot_name=settings.bot_name)
    application.add_handler(TypeHandler(Update, drop_without_sender), group=-1)
    application.add_handlers([
        CommandHandler("start", on_command.start),
        CommandHandler("help", on_command.help),
        CommandHandler("memories", on_command.memories),
        CommandHandler("forget", on_command.forget),
        CommandHandler("remember", on_command.remember),
        CommandHandler("reminders", on_command.reminders),
        CommandHandler("remind", on_command.remind),
        CommandHandler("cancel", on_command.cancel),
        CommandHandler("done", on_command.done),
        CommandHandler("snooze", on_command.snooze),
        CommandHandler("export", on_command.export),
        CommandHandler("import", on_command.import_file),
        MessageHandler(filters.Document.ALL & filters.CaptionRegex(IMPORT_CAPTION), on_command.import_file),
        CommandHandler("pause", on_command.pause),
        CommandHandler("resume", on_command.resume),
        CommandHandler("link", on_command.link),
        CommandHandler("panel", on_command.panel),
        CommandHandler("unlink", on_command.unlink),
        MessageHandler(filters.StatusUpdate.MIGRATE, on_command.chat_migrated),
        CallbackQueryHandler(on_command.memory_page_button, pattern=r"^mp:"),
        CallbackQueryHandler(on_command.confirmation_button, pattern=r"^c[fx]:"),
        CallbackQueryHandler(on_command.reminder_button, pattern=r"^r[dsc]:"),
        MessageHandler(filters.UpdateType.MESSAGE & filters.TEXT & ~filters.COMMAND, ChatHandler(service)),
    ])
    application.add_error_handler(on_error)
    return application


def run_telegram(settings: Settings, *, webhook_url: str | None = None, listen: str = "127.0.0.1",
                 port: int = 8443, secret_token: str | None = None, workers: bool | None = None) -> int:
    """Run the bot until SIGINT/SIGTERM: long polling, or a webhook server when ``webhook_url`` is given.
    On the embedded database (or with ``workers``) a worker, beat and the panel's API run beside it."""
    from shared.app.bootstrap import conversation_service, memory_commands, runtime
    from shared.app.processes import companions

    if settings.telegram_token is None:
        raise ConfigError("TELEGRAM_TOKEN is not set: create a bot with @BotFather and put its token there")
    if webhook_url is not None and not secret_token:
        raise ConfigError("webhook mode needs TELEGRAM_WEBHOOK_SECRET (Telegram sends it with every update)")
    if webhook_url is not None and importlib.util.find_spec("tornado") is None:
        raise ConfigError("webhook mode needs python-telegram-bot[webhooks] installed (it serves with tornado)")
    with runtime(settings) as rt, companions(rt.database_url, settings.data_dir / "logs",
                                             embedded=settings.uses_embedded_database, wanted=workers):
        service = conversation_service(rt)
        commands = memory_commands(rt, embeddings_wanted=service.embedder is not None)
        application = build_application(settings, service, commands)
        if webhook_url is None:
            application.run_polling(allowed_updates=ALLOWED_UPDATES, drop_pending_updates=False)
        else:
            from bot.telegram_webhook import serve_until_signalled

            asyncio.run(serve_until_signalled(application, url=webhook_url, listen=listen, port=port,
                                              path=urlsplit(webhook_url).path, secret_token=secret_token,
                                              allowed_updates=ALLOWED_UPDATES))
    return 0
