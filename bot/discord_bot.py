"""The Discord front-end (`mnemo discord`): discord.py turned into Mnemo's two services.

Chat: a direct message, or a server message that mentions the bot or replies to one of its
messages, becomes an ``IncomingMessage`` for ``ConversationService.handle_message``; the reply is
posted (split at 2000 characters) while a typing indicator runs. Discord delivers the content of
exactly those messages without the privileged message-content intent, so it is not requested.
Commands: see :mod:`bot.discord_commands`. They are synced with Discord once, by
``mnemo discord --sync [--guild ID]``, never on start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import signal
from typing import Any

import discord
from discord import app_commands

from bot.discord_commands import ForgetAnswer, install_commands
from bot.discord_render import CommandTranslator, plain_text, reply_messages
from shared.commands import texts
from shared.commands.service import MemoryCommands
from shared.conversation.messages import IncomingMessage, Reply
from shared.conversation.service import ConversationService
from shared.errors import ConfigError
from shared.settings import Settings

log = logging.getLogger(__name__)
CJK = re.compile(r"[\u4e00-\u9fff]")

# Replies ping the person answered and nobody else, whatever the model wrote (@everyone, roles).
REPLY_MENTIONS = discord.AllowedMentions(everyone=False, users=False, roles=False, replied_user=True)
TOKEN_REFUSED = "DISCORD_TOKEN was refused by Discord; copy the bot token again"


def chat_intents() -> discord.Intents:
    """Guilds, DMs and server messages; not the privileged message-content intent."""
    intents = discord.Intents.default()
    intents.dm_messages = True
    intents.guild_messages = True
    intents.message_content = False
    return intents


def use_api(base_url: str) -> None:
    """Point discord.py's REST calls (bot routes, interaction callbacks, follow-ups) at ``base_url``."""
    discord.http.Route.BASE = base_url.rstrip("/")


class MnemoBot(discord.Client):
    """The bot process's client: the conversation service for chat, the command service for /commands."""

    def __init__(self, conversation: ConversationService, memory: MemoryCommands, *,
                 intents: discord.Intents | None = None) -> None:
        super().__init__(intents=intents or chat_intents(), allowed_mentions=REPLY_MENTIONS)
        self.conversation = conversation
        self.memory = memory
        self.tree = app_commands.CommandTree(self)
        install_commands(self.tree)
        self.answering: asyncio.Task[None] | None = None

    async def setup_hook(self) -> None:
        await self.tree.set_translator(CommandTranslator())
        self.add_dynamic_items(ForgetAnswer)  # confirmation buttons keep working after a restart

    async def on_ready(self) -> None:
        log.info("connected to Discord as %s (%s guilds)", self.user, len(self.guilds))
        if self.answering is None:  # on_ready comes again after each reconnect; the owed answers once
            self.answering = asyncio.create_task(self.answer_unanswered())

    async def answer_unanswered(self) -> None:
        """Answer what was recorded but never answered before the bot stopped, each as a reply to its message."""
        try:
            async for incoming, reply in self.conversation.unanswered_replies("discord"):
                await self._send_late_reply(incoming, reply)
        except Exception:  # the bot runs on; these messages are tried again on the next start
            log.exception("answering the messages left unanswered failed")

    async def _send_late_reply(self, incoming: IncomingMessage, reply: Reply) -> None:
        channel = self.get_partial_messageable(int(incoming.chat_id))
        answered = discord.MessageReference(message_id=int(incoming.message_id or 0), channel_id=channel.id,
                                            fail_if_not_exists=False)
        try:
            for index, piece in enumerate(reply_messages(reply)):
                await channel.send(piece, reference=answered if index == 0 else None)
        except discord.HTTPException as exc:  # the answer is recorded, only not delivered
            log.warning("could not deliver a late answer to channel %s: %s", incoming.chat_id, exc)

    async def on_message(self, message: discord.Message) -> None:
        """Answer a DM, a mention or a reply to the bot; ignore every other message and all bots."""
        if self.user is None or message.author.bot or not self.is_addressed(message):
            return
        incoming = self.incoming(message)
        if not incoming.text:
            return
        async def tell_waiting() -> None:
            await message.reply(texts.waiting_for_database_text(_locale(incoming)))

        try:
            async with message.channel.typing():
                reply = await self.conversation.handle_message(incoming, on_delay=tell_waiting)
        except Exception as exc:  # the one chat handler: logged with the traceback, the user told (as on Telegram)
            log.exception("Discord message %s failed", message.id)
            await self._apologise(message, exc, incoming)
            return
        for index, piece in enumerate(reply_messages(reply)):
            if index == 0 and not incoming.is_private:
                await message.reply(piece)
            else:
                await message.channel.send(piece)

    @staticmethod
    async def _apologise(message: discord.Message, error: Exception, incoming: IncomingMessage) -> None:
        try:
            await message.reply(texts.error_text(error, _locale(incoming)))
        except discord.HTTPException as exc:
            log.warning("could not tell the user about the error: %s", exc)

    def is_addressed(self, message: discord.Message) -> bool:
        """A DM, a message mentioning the bot, or a reply to one of the bot's messages."""
        me = self.user
        if me is None:
            return False
        if isinstance(message.channel, discord.DMChannel):
            return True
        if any(user.id == me.id for user in message.mentions):
            return True
        replied_to = message.reference.resolved if message.reference else None
        return isinstance(replied_to, discord.Message) and replied_to.author.id == me.id

    def incoming(self, message: discord.Message) -> IncomingMessage:
        """The message as the conversation service reads it."""
        assert self.user is not None
        names = {user.id: user.display_name for user in message.mentions}
        private = isinstance(message.channel, discord.DMChannel)
        return IncomingMessage(
            platform="discord", chat_id=str(message.channel.id), user_id=str(message.author.id),
            text=plain_text(message.content, self.user.id, names), sent_at=message.created_at,
            is_private=private, display_name=message.author.display_name, message_id=str(message.id),
            chat_title=None if private else getattr(message.channel, "name", None))

    async def on_error(self, event_method: str, /, *args: Any, **kwargs: Any) -> None:
        """Events' errors (commands have theirs in the tree's handler): logged with the traceback."""
        log.exception("Discord event %s failed", event_method)


async def sync_commands(settings: Settings, guild_id: int | None = None) -> list[str]:
    """Publish the slash commands: to one guild (instant, for development) or globally (production)."""
    use_api(settings.discord_api_base_url)
    client = discord.Client(intents=discord.Intents.none())
    tree = app_commands.CommandTree(client)
    install_commands(tree)
    async with client:
        try:
            await client.login(_token(settings))
        except discord.LoginFailure as exc:
            raise ConfigError(TOKEN_REFUSED) from exc
        await tree.set_translator(CommandTranslator())
        if guild_id is None:
            synced = await tree.sync()
        else:
            guild = discord.Object(id=guild_id)
            tree.copy_global_to(guild=guild)
            synced = await tree.sync(guild=guild)
    return [command.name for command in synced]


def run_discord(settings: Settings, *, sync: bool = False, guild_id: int | None = None,
                workers: bool | None = None) -> int:
    """``mnemo discord``: run the bot until SIGTERM or Ctrl-C; with ``sync``, publish the commands and exit.
    On the embedded database (or with ``workers``) a worker, beat and the panel's API run beside it."""
    token = _token(settings)
    if sync:
        names = asyncio.run(sync_commands(settings, guild_id))
        where = f"guild {guild_id}" if guild_id is not None else "all guilds (global; may take up to an hour)"
        print(f"Synced {len(names)} commands to {where}: {', '.join('/' + name for name in names)}")
        return 0
    from shared.app.bootstrap import conversation_service, memory_commands, runtime
    from shared.app.processes import companions

    use_api(settings.discord_api_base_url)
    with runtime(settings) as rt, companions(rt.database_url, settings.data_dir / "logs",
                                             embedded=settings.uses_embedded_database, wanted=workers):
        service = conversation_service(rt)
        client = MnemoBot(service, memory_commands(rt, embeddings_wanted=service.embedder is not None))
        asyncio.run(_serve(client, token))
    return 0


async def _serve(client: MnemoBot, token: str) -> None:
    """Run the client; SIGTERM and SIGINT close it cleanly (gateway, HTTP session, pending views)."""
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, lambda: loop.create_task(client.close()))
    async with client:
        try:
            await client.start(token)
        except discord.LoginFailure as exc:
            raise ConfigError(TOKEN_REFUSED) from exc


def _locale(incoming: IncomingMessage) -> str:
    """Discord sends no language with a message: the language it is written in."""
    return "zh" if CJK.search(incoming.text) else "en"


def _token(settings: Settings) -> str:
    if settings.discord_token is None:
        raise ConfigError("DISCORD_TOKEN is not set: create a bot at https://discord.com/developers/applications "
                          "and put its token in .env")
    return settings.discord_token.get_secret_value()
