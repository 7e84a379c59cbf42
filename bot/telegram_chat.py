"""Conversation on Telegram: a text message addressed to the bot goes to the conversation service and
its reply comes back, with "typing…" meanwhile; in a group only messages that mention the bot or reply
to it count. If the database is away the user is told once that the message is kept; what the bot
recorded but never answered before it stopped is answered, as a reply, when it starts again.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress

from telegram import Bot, Message, MessageEntity, ReplyParameters, Update, User
from telegram.constants import ChatAction, ChatType
from telegram.error import TelegramError

from bot import telegram_render as render
from bot.telegram_attachments import attachments_of, carries_attachment
from bot.telegram_handlers import Context, user_locale
from shared.attachments.kinds import Attachment
from shared.attachments.texts import turn_line
from shared.commands import texts
from shared.conversation.messages import IncomingMessage, Reply
from shared.conversation.service import ConversationService

log = logging.getLogger(__name__)

TYPING_REPEAT_SECONDS = 4.0  # Telegram shows "typing…" for 5 s per chat action
_SPACE_RUN = re.compile(r"[ \t]{2,}")
_LEADING_PUNCTUATION = re.compile(r"^[\s,:;，：；]+")
"""What is left before the text once the bot's mention is taken out ("@MnemoBot, hi" → "hi")."""


@asynccontextmanager
async def typing(bot: Bot, message: Message) -> AsyncIterator[None]:
    """Show "typing…" in the message's chat until the block ends (repeated, as it fades after 5 s)."""

    async def keep_typing() -> None:
        while True:
            try:
                await bot.send_chat_action(message.chat_id, ChatAction.TYPING,
                                           message_thread_id=message.message_thread_id)
            except TelegramError as exc:  # cosmetic: never let it stop the reply
                log.debug("chat action failed: %s", exc)
            await asyncio.sleep(TYPING_REPEAT_SECONDS)

    task = asyncio.create_task(keep_typing())
    try:
        yield
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task


def addressed_text(message: Message, me: User) -> str | None:
    """What was said to the bot: a private message whole; in a group only when the bot is mentioned
    or replied to (its mentions removed), else None."""
    value = message.text or message.caption or ""
    if message.chat.type == ChatType.PRIVATE:
        return value
    handle = f"@{me.username}".lower()
    entities, parse = ((message.entities, message.parse_entity) if message.text is not None
                       else (message.caption_entities, message.parse_caption_entity))
    mentions = [entity for entity in entities
                if (entity.type == MessageEntity.MENTION and parse(entity).lower() == handle)
                or (entity.type == MessageEntity.TEXT_MENTION and entity.user and entity.user.id == me.id)]
    replied = message.reply_to_message
    if not mentions and not (replied and replied.from_user and replied.from_user.id == me.id):
        return None
    encoded = value.encode("utf-16-le")  # entity offsets count UTF-16 code units
    for entity in sorted(mentions, key=lambda e: e.offset, reverse=True):
        encoded = encoded[:entity.offset * 2] + b" \x00" + encoded[(entity.offset + entity.length) * 2:]
    stripped = _SPACE_RUN.sub(" ", encoded.decode("utf-16-le"))
    return _LEADING_PUNCTUATION.sub("", stripped).strip()


class ChatHandler:
    """Conversation messages: each addressed one goes to the conversation service, the reply comes back."""

    def __init__(self, service: ConversationService) -> None:
        self.service = service

    async def __call__(self, update: Update, context: Context) -> None:
        """Answer a text message (in groups only when addressed), showing "typing…" meanwhile."""
        message, user = update.effective_message, update.effective_user
        if message is None or user is None or user.is_bot:
            return
        said = addressed_text(message, context.bot.bot)
        hearing = self.service.transcriber is not None
        attached: tuple[Attachment, ...] = ()
        if said is not None and carries_attachment(message):  # a sticker is its emoji: nothing to fetch
            allowed = message.sticker is not None or await self.service.may_fetch("telegram", str(user.id))
            attached = await attachments_of(context.bot, message, hearing=hearing, allowed=allowed)
        if not said and not attached:
            return
        private = message.chat.type == ChatType.PRIVATE
        incoming = IncomingMessage(platform="telegram", chat_id=str(message.chat_id), user_id=str(user.id),
                                   text=turn_line(said or "", attached), sent_at=message.date, is_private=private,
                                   display_name=user.full_name, message_id=str(message.message_id),
                                   locale=user_locale(user), chat_title=message.chat.title, attachments=attached)
        async def tell_waiting() -> None:
            await message.reply_text(texts.waiting_for_database_text(incoming.locale), do_quote=not private)

        async def tell_busy() -> None:
            await message.reply_text(texts.busy_text(incoming.locale), do_quote=not private)

        async with typing(context.bot, message):
            reply = await self.service.handle_message(incoming, on_delay=tell_waiting, on_busy=tell_busy)
        if reply.duplicate or not reply.text.strip():
            return
        for index, part in enumerate(render.reply_messages(reply)):
            await message.reply_text(part.text, entities=list(part.entities) or None,
                                     do_quote=index == 0 and not private)


async def answer_unanswered(bot: Bot, service: ConversationService,
                            skip: Callable[[IncomingMessage], Awaitable[bool]] | None = None) -> None:
    """Each owed answer as a reply to the message it answers (a message the user deleted: as a plain message),
    but those ``skip`` says no to."""
    try:
        async for incoming, reply in service.unanswered_replies("telegram", skip=skip):
            if reply.text.strip():
                await _send_late_reply(bot, incoming, reply)
    except Exception:  # the bot runs on; these messages are tried again on the next start
        log.exception("answering the messages left unanswered failed")


async def _send_late_reply(bot: Bot, incoming: IncomingMessage, reply: Reply) -> None:
    quoted = ReplyParameters(message_id=int(incoming.message_id or 0), allow_sending_without_reply=True)
    try:
        for index, part in enumerate(render.reply_messages(reply)):
            await bot.send_message(int(incoming.chat_id), part.text, entities=list(part.entities) or None,
                                   reply_parameters=quoted if index == 0 else None)
    except TelegramError as exc:  # blocked, kicked, chat gone: the answer is recorded, only not delivered
        log.warning("could not deliver a late answer to chat %s: %s", incoming.chat_id, exc)
