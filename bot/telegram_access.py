"""Who the Telegram bot answers: every update passes the access lists (:mod:`shared.access`) before any
handler runs, so a refused one stores nothing and calls no model; and ``/access`` for operators.

A refused message in a private chat is answered with the refusal; in a group a refused mention gets no
answer (a stranger cannot make the bot post there). A refused command is answered in the private chat,
as every command is, and when the user has none with the bot nothing is said, not even in the group.
Commands about data the bot already holds of their sender (``/memories``, ``/export``, ``/forget``…) go
ahead. A refused button press gets the refusal as an alert.
"""

from __future__ import annotations

import asyncio
import logging
import re

from telegram import Update
from telegram.constants import ChatType
from telegram.error import BadRequest, Forbidden
from telegram.ext import ApplicationHandlerStop

from bot import telegram_render as render
from bot.telegram_chat import addressed_text
from bot.telegram_handlers import Context, answer_privately, command_argument, locale_of
from shared.access.rule import Facts
from shared.access.service import AccessListing, AccessService
from shared.access.texts import change_text, listing_text, refusal_text
from shared.conversation.messages import IncomingMessage
from shared.log_context import hash_user

log = logging.getLogger(__name__)

COMMAND = re.compile(r"/(\w+)(?:@(\w+))?")
BUTTONS = {"mp": "memories", "cf": "forget", "cx": "forget", "rd": "done", "rc": "cancel", "rs": "snooze"}
"""The command each kind of button (its callback data's prefix) belongs to."""
ALERT_CHARS = 200


def facts_of(update: Update) -> Facts:
    user, chat = update.effective_user, update.effective_chat
    assert user is not None and chat is not None
    return Facts("telegram", str(user.id), chat_id=str(chat.id), private=chat.type == ChatType.PRIVATE)


def command_of(update: Update, bot_username: str | None) -> str | None:
    """The command a message or button is (``"memories"``), ``""`` for conversation addressed to the bot,
    None for anything else (not for this bot, not addressed, a service message): nothing to check."""
    if update.callback_query is not None:
        return BUTTONS.get((update.callback_query.data or "").partition(":")[0], "button")
    message = update.message
    if message is None:
        return None
    found = COMMAND.match(message.text or message.caption or "")
    if found is not None:
        addressed_to = found.group(2)
        mine = addressed_to is None or (bot_username or "").lower() == addressed_to.lower()
        return found.group(1).lower() if mine else None
    return "" if message.text is not None else None


class AccessGate:
    """The first handler of every update: refuse here, or let the update go on to its handler."""

    def __init__(self, access: AccessService) -> None:
        self.access = access

    async def __call__(self, update: Update, context: Context) -> None:
        command = command_of(update, context.bot.username)
        if command is None or update.effective_user is None or update.effective_chat is None:
            return
        if command == "" and (update.message is None or not addressed_text(update.message, context.bot.bot)):
            return  # group talk not meant for the bot: nobody is answered, nothing to refuse
        admission = await asyncio.to_thread(self.access.admit, facts_of(update), command or None)
        if admission.allowed:
            return
        log.info("Telegram %s refused (%s) for user %s", f"/{command}" if command else "message",
                 admission.decision.reason, hash_user("telegram", str(update.effective_user.id)))
        await self._refuse(update, context, refusal_text(locale_of(update), known=admission.known), command)
        raise ApplicationHandlerStop

    @staticmethod
    async def _refuse(update: Update, context: Context, answer: str, command: str) -> None:
        """An alert for a button; in a private chat, the answer; a command typed in a group, the answer in the
        private chat if the user has one with the bot (nothing in the group); a group message, silence."""
        user, chat, message = update.effective_user, update.effective_chat, update.effective_message
        assert user is not None and chat is not None  # the gate returned earlier on an update without either
        if update.callback_query is not None:
            await update.callback_query.answer(render.fit_message(answer, ALERT_CHARS), show_alert=True)
        elif chat.type == ChatType.PRIVATE and message is not None:
            await message.reply_text(answer)
        elif command:
            try:
                await context.bot.send_message(user.id, answer)
            except (Forbidden, BadRequest) as exc:  # no private chat with the bot: the group hears nothing
                log.info("refusal not delivered privately: %s", exc)


class BlockedSince:
    """Whether an answer owed since before a restart would go to someone blocked meanwhile (it is not given)."""

    def __init__(self, access: AccessService) -> None:
        self.access = access

    async def __call__(self, incoming: IncomingMessage) -> bool:
        facts = Facts("telegram", incoming.user_id, chat_id=incoming.chat_id, private=incoming.is_private)
        return await asyncio.to_thread(self.access.blocked, facts)


class AccessCommand:
    """``/access …`` for operators: the lists, or a change to them (answered privately)."""

    def __init__(self, access: AccessService) -> None:
        self.access = access

    async def __call__(self, update: Update, context: Context) -> None:
        message = update.effective_message
        assert message is not None  # a command handler runs for a message
        result = await asyncio.to_thread(self.access.run, facts_of(update), command_argument(message))
        locale = locale_of(update)
        shown = listing_text(result, locale) if isinstance(result, AccessListing) else change_text(result, locale)
        await answer_privately(update, context, shown)
