"""Conversation on Telegram: a text message addressed to the bot goes to the conversation service and
its reply comes back, with "typing…" meanwhile; in a group only messages that mention the bot or reply
to it count. A model's reply shows as it is written (:mod:`bot.live_reply`): in a private chat as a draft
(``sendMessageDraft``), then sent whole as the API requires; in a group as a first message edited as it grows,
and at last into the final reply (the offline answer when the model's turned out unreadable). A bot whose
drafts Telegram refuses edits a message in private chats too. If the database is away the user is told once that
the message is kept; what the bot recorded but never answered before it stopped is answered, as a reply, when it
starts again.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from datetime import datetime

from telegram import Bot, Message, MessageEntity, ReplyParameters, Update, User
from telegram.constants import ChatAction, ChatType
from telegram.error import BadRequest, RetryAfter, TelegramError, TimedOut

from bot import telegram_render as render
from bot.live_reply import LiveReply
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
        self.drafts = True
        """Private chats' replies show as drafts (False once Telegram refused one: a message is edited instead)."""

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

        shown = _ShownReply(context.bot, message, drafts=private and self.drafts)
        live = LiveReply(shown.show, final_paced=not shown.drafts)
        try:
            async with typing(context.bot, message):
                reply = await self.service.handle_message(incoming, on_delay=tell_waiting, on_busy=tell_busy,
                                                          on_text=live.hear)
        except Exception:
            await live.close()
            await shown.withdraw()
            raise
        await live.close()
        if shown.draft_refused:
            self.drafts = False
        if reply.duplicate or not reply.text.strip():
            await shown.withdraw()
            return
        await shown.finish(render.reply_messages(reply), quote=not private)


class _ShownReply:
    """A reply on its way to one chat: shown as a draft or as a message edited as it grows, then sent whole."""

    def __init__(self, bot: Bot, message: Message, *, drafts: bool) -> None:
        self.bot, self.message, self.drafts = bot, message, drafts
        self.sent: Message | None = None  # the message edited as the reply grows (groups, or no drafts)
        self.sent_text = ""  # what it shows now
        self.draft_refused = False

    async def show(self, text: str) -> None:
        """The reply so far: the draft, or the first message and then its edits."""
        shown = render.fit_message(text)
        if self.drafts:
            try:
                await self.bot.send_message_draft(self.message.chat_id, self.message.message_id, shown,
                                                  message_thread_id=self.message.message_thread_id)
            except (RetryAfter, TimedOut):
                raise  # flood control or a slow network: this reply goes whole, the next ones are drafts again
            except TelegramError:
                self.draft_refused = True  # this reply goes whole; the next ones are edited messages
                raise
        elif self.sent is None:
            self.sent = await self.message.reply_text(shown, do_quote=self.message.chat.type != ChatType.PRIVATE)
            self.sent_text = shown
        else:
            await self.sent.edit_text(shown)
            self.sent_text = shown

    async def finish(self, parts: list[render.OutgoingText], *, quote: bool) -> None:
        """The final reply: the shown message edited into its first part (a draft is followed by the messages)."""
        if self.sent is not None and parts:
            first, *parts = parts
            if first.entities or first.text != self.sent_text:  # the same words again would cost a slot, refused
                try:
                    await self.sent.edit_text(first.text, entities=list(first.entities) or None)
                except BadRequest as exc:
                    if "not modified" not in exc.message.lower():
                        raise
            quote = False
        for index, part in enumerate(parts):
            await self.message.reply_text(part.text, entities=list(part.entities) or None,
                                          do_quote=index == 0 and quote)

    async def withdraw(self) -> None:
        """No reply after all (a duplicate, or the turn failed): the message shown so far goes."""
        if self.sent is None:
            return
        try:
            await self.sent.delete()
        except TelegramError as exc:  # cosmetic now: the error handler tells the user what happened
            log.warning("could not delete a reply shown in part: %s", exc)


async def answer_unanswered(bot: Bot, service: ConversationService,
                            skip: Callable[[IncomingMessage], Awaitable[bool]] | None = None,
                            recorded_by: datetime | None = None) -> None:
    """Each owed answer (of a message recorded by ``recorded_by``, when the bot started) as a reply to the message
    it answers (a message the user deleted: as a plain message), but those ``skip`` says no to."""
    try:
        async for incoming, reply in service.unanswered_replies("telegram", skip=skip, recorded_by=recorded_by):
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
