"""The Discord front-end (`mnemo discord`): discord.py turned into Mnemo's two services.

Chat: a direct message, or a server message that mentions the bot or replies to one of its
messages, becomes an ``IncomingMessage`` for ``ConversationService.handle_message``; the reply is
posted (split at 2000 characters) while a typing indicator runs; a model's reply is posted from its first words
and edited as it grows, at most once a second (:mod:`bot.discord_live`). Discord delivers the content of
exactly those messages without the privileged message-content intent, so it is not requested.
Commands: see :mod:`bot.discord_commands`. They are synced with Discord once, by
``mnemo discord --sync [--guild ID]``, never on start.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import logging
import re
import signal
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

import aiohttp
import discord
from discord import app_commands

from bot.discord_access import AccessTree, admit_message, blocked_since
from bot.discord_attachments import carries_attachment, with_attachments
from bot.discord_commands import ForgetAnswer, install_commands
from bot.discord_live import ShownReply
from bot.discord_py_patches import sweep_buckets_seldom, use_api, use_gateway
from bot.discord_render import CommandTranslator, plain_text, reply_messages
from bot.live_reply import LiveReply
from shared.access.rule import Policy
from shared.access.service import AccessService
from shared.app.container import BOTS, missing_token
from shared.commands import texts
from shared.commands.service import MemoryCommands
from shared.conversation.messages import IncomingMessage, Reply
from shared.conversation.service import ConversationService
from shared.delivery.pacing import Pace
from shared.errors import ConfigError
from shared.limits import SharedLimit
from shared.metrics import record
from shared.settings import Settings
from shared.text import language_of

log = logging.getLogger(__name__)

# Replies ping the person answered and nobody else, whatever the model wrote (@everyone, roles).
REPLY_MENTIONS = discord.AllowedMentions(everyone=False, users=False, roles=False, replied_user=True)
DISCORD = BOTS[0]
TOKEN_REFUSED = "DISCORD_TOKEN was refused by Discord; copy the bot token again"
POSTED_MESSAGE = re.compile(r"/channels/(\d+)/messages(?:/\d+)?$")
"""A message posted in a channel, or edited there (a live reply): each takes a slot in the channel's budget."""
IDENTIFY_RATE = "1 per 5 seconds"
"""Discord lets a bot IDENTIFY one shard per rate-limit bucket (shard id % ``max_concurrency``) every 5 s,
counted over all its processes; a shard that identifies too soon has its session invalidated."""


def chat_intents() -> discord.Intents:
    """Guilds, DMs and server messages; not the privileged message-content intent."""
    intents = discord.Intents.default()
    intents.dm_messages = True
    intents.guild_messages = True
    intents.message_content = False
    return intents


def counting_api_errors(pace: Pace | None = None) -> aiohttp.TraceConfig:
    """discord.py's documented hook on its HTTP session: every failed REST call is counted in the metrics, the
    429s it waits out by itself included. With ``pace``, a request first waits for its slot in the bot's
    budget that every shard process and worker shares (:mod:`shared.delivery.pacing`): 50 requests a second,
    and 5 messages (posted or edited) per 5 seconds in a channel; interaction answers are outside Discord's global
    limit."""
    trace = aiohttp.TraceConfig()

    async def paced(_session: object, _context: object, params: aiohttp.TraceRequestStartParams) -> None:
        path = params.url.path
        if pace is None or "/interactions/" in path or "/webhooks/" in path or "/gateway" in path:
            return
        posted = POSTED_MESSAGE.search(path) if params.method in ("POST", "PATCH") else None
        await pace.wait(posted.group(1) if posted else None)

    trace.on_request_start.append(paced)

    async def answered(_session: object, _context: object, params: aiohttp.TraceRequestEndParams) -> None:
        if params.response.status >= 400:
            record.platform_api_error("discord", params.response.status)

    async def unanswered(_session: object, _context: object, _params: object) -> None:
        record.platform_api_error("discord", None)

    trace.on_request_end.append(answered)
    trace.on_request_exception.append(unanswered)
    return trace


class MnemoBot(discord.AutoShardedClient):
    """The bot process's client: the conversation service for chat, the command service for /commands, the
    access lists in front of both (without ``access``: no settings' lists, only the operators' table).

    Sharded as discord.py's ``AutoShardedClient``: by default all the shards Discord recommends, in this
    process; with ``shards`` (and ``shard_count``), only those, so processes can split them."""

    def __init__(self, conversation: ConversationService, memory: MemoryCommands, *,
                 access: AccessService | None = None, intents: discord.Intents | None = None,
                 shards: Shards | None = None, identify_pace: SharedLimit | None = None,
                 pace: Pace | None = None) -> None:
        trace = counting_api_errors(pace)
        if shards is None:
            super().__init__(intents=intents or chat_intents(), allowed_mentions=REPLY_MENTIONS, http_trace=trace)
        else:
            super().__init__(intents=intents or chat_intents(), allowed_mentions=REPLY_MENTIONS, http_trace=trace,
                             shard_count=shards.count, shard_ids=list(shards.ids))
        sweep_buckets_seldom(self.http)
        self.conversation = conversation
        self.memory = memory
        self.access = access or AccessService(memory.uow_factory, Policy())
        self.tree = AccessTree(self, self.access)
        install_commands(self.tree)
        self.answering: asyncio.Task[None] | None = None
        self.identify_pace = identify_pace
        self.max_concurrency = 1

    async def launch_shards(self) -> None:
        """discord.py's own launch, after asking ``GET /gateway/bot`` (as Discord advises) for the gateway's
        address, the recommended shard count and the identify concurrency: with the count known, discord.py
        dials the gateway :func:`~bot.discord_py_patches.use_gateway` set (why: :mod:`bot.discord_py_patches`)."""
        if self.is_closed():
            return
        recommended, url, session_start_limit = await self.http.get_bot_gateway()
        use_gateway(url)
        self.max_concurrency = max(1, int(session_start_limit.get("max_concurrency", 1)))
        self.shard_count = self.shard_count or recommended
        await super().launch_shards()

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        """Wait for this shard's IDENTIFY slot, shared with the bot's other processes when ``identify_pace``
        is given (each process's first shard would otherwise identify at once); else discord.py's 5 s."""
        if self.identify_pace is None:
            await super().before_identify_hook(shard_id, initial=initial)
            return
        bucket = str((shard_id or 0) % self.max_concurrency)
        while (wait := await asyncio.to_thread(self.identify_pace.hit, bucket)) is not None:
            log.info("shard %s waits %.0f s to identify (another shard of the bot identified just now)", shard_id, wait)
            await asyncio.sleep(wait)

    async def setup_hook(self) -> None:
        await self.tree.set_translator(CommandTranslator())
        self.add_dynamic_items(ForgetAnswer)  # confirmation buttons keep working after a restart

    async def on_ready(self) -> None:
        log.info("connected to Discord as %s (%s guilds)", self.user, len(self.guilds))
        if self.answering is None:  # on_ready comes again after each reconnect; the owed answers once
            # what was recorded before now; a message the gateway sends after READY is this process's own
            self.answering = asyncio.create_task(self.answer_unanswered(self.conversation.clock()))

    async def answer_unanswered(self, recorded_by: datetime | None = None) -> None:
        """Answer what was recorded (by ``recorded_by``) but never answered before the bot stopped, each as a reply
        to its message."""
        try:
            skip = partial(blocked_since, self.access, self)
            async for incoming, reply in self.conversation.unanswered_replies("discord", skip=skip,
                                                                             recorded_by=recorded_by):
                await self._send_late_reply(incoming, reply)
        except Exception:  # the bot runs on; these messages are tried again on the next start
            log.exception("answering the messages left unanswered failed")

    async def _send_late_reply(self, incoming: IncomingMessage, reply: Reply) -> None:
        channel = self.get_partial_messageable(int(incoming.chat_id))
        answered = discord.MessageReference(message_id=int(incoming.message_id or 0), channel_id=channel.id,
                                            fail_if_not_exists=False)
        try:
            for index, piece in enumerate(reply_messages(reply)):
                if index == 0:
                    await channel.send(piece, reference=answered)
                else:
                    await channel.send(piece)
        except discord.HTTPException as exc:  # the answer is recorded, only not delivered
            log.warning("could not deliver a late answer to channel %s: %s", incoming.chat_id, exc)

    async def on_message(self, message: discord.Message) -> None:
        """Answer a DM, a mention or a reply to the bot; ignore every other message and all bots."""
        if self.user is None or message.author.bot or not self.is_addressed(message):
            return
        incoming = self.incoming(message)
        if not (incoming.text or carries_attachment(message)) or \
                not await admit_message(self.access, message, _locale(incoming)):
            return
        if carries_attachment(message):  # fetched once the sender is let in
            allowed = not message.attachments or await self.conversation.may_fetch("discord", str(message.author.id))
            incoming = await with_attachments(incoming, message, hearing=self.conversation.transcriber is not None,
                                              allowed=allowed)
        async def tell_waiting() -> None:
            await message.reply(texts.waiting_for_database_text(_locale(incoming)))

        async def tell_busy() -> None:
            await message.reply(texts.busy_text(_locale(incoming)))

        shown = ShownReply(message, private=incoming.is_private)
        live = LiveReply(shown.show)
        try:
            async with message.channel.typing():
                reply = await self.conversation.handle_message(incoming, on_delay=tell_waiting, on_busy=tell_busy,
                                                               on_text=live.hear)
        except Exception as exc:  # the one chat handler: logged with the traceback, the user told (as on Telegram)
            log.exception("Discord message %s failed", message.id)
            await live.close()
            await shown.withdraw()
            await self._apologise(message, exc, incoming)
            return
        await live.close()
        await shown.finish(reply_messages(reply))

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


@dataclass(frozen=True)
class Shards:
    """The shards one process runs: ``ids`` of ``count`` (Discord routes a server to shard
    ``(server id >> 22) % count``; direct messages go to shard 0)."""

    count: int
    ids: tuple[int, ...]

    @classmethod
    def parse(cls, count: int | None, ids: str | None) -> Shards | None:
        """From ``--shard-count N --shards 0,1``; None without either (automatic). Raises ConfigError."""
        if count is None and ids is None:
            return None
        if count is None or count < 1:
            raise ConfigError("--shards needs --shard-count N (N ≥ 1: the shards of the whole bot, in all processes)")
        if ids is None:
            return cls(count, tuple(range(count)))
        try:
            chosen = tuple(sorted({int(part) for part in ids.split(",") if part.strip()}))
        except ValueError:
            raise ConfigError(f"--shards {ids!r}: give shard numbers separated by commas, e.g. 0,1") from None
        if not chosen or any(not 0 <= shard < count for shard in chosen):
            raise ConfigError(f"--shards {ids!r}: each shard must be between 0 and {count - 1} (--shard-count {count})")
        return cls(count, chosen)


def run_discord(settings: Settings, *, sync: bool = False, guild_id: int | None = None,
                workers: bool | None = None, shards: Shards | None = None) -> int:
    """``mnemo discord``: run the bot until SIGTERM or Ctrl-C; with ``sync``, publish the commands and exit.
    On the embedded database (or with ``workers``) a worker, beat and the panel's API run beside it."""
    token = _token(settings)
    if sync:
        names = asyncio.run(sync_commands(settings, guild_id))
        where = f"guild {guild_id}" if guild_id is not None else "all guilds (global; may take up to an hour)"
        print(f"Synced {len(names)} commands to {where}: {', '.join('/' + name for name in names)}")
        return 0
    from shared.app.bootstrap import access_service, conversation_service, memory_commands, runtime
    from shared.app.ops_server import serve_operations
    from shared.app.processes import companions
    from shared.limits import shared_storage

    use_api(settings.discord_api_base_url)
    with runtime(settings) as rt, companions(rt.database_url, settings.data_dir / "logs",
                                             embedded=settings.uses_embedded_database, wanted=workers,
                                             metrics_port=settings.metrics_port), \
            serve_operations(settings, rt.database_url, "discord"):
        service = conversation_service(rt)
        storage = shared_storage(settings.redis_url, rt.engine)  # the limits every replica and worker shares
        client = MnemoBot(service, memory_commands(rt, embeddings_wanted=service.embedder is not None),
                          access=access_service(rt), shards=shards, pace=Pace("discord", storage),
                          identify_pace=SharedLimit(storage, f"discord-identify-{_bot_id(token)}", IDENTIFY_RATE))
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
    return language_of(incoming.text).value


def _token(settings: Settings) -> str:
    if settings.discord_token is None:
        raise ConfigError(missing_token(DISCORD, "create a bot at https://discord.com/developers/applications "
                                                 "and put its token in .env"))
    return settings.discord_token.get_secret_value()


def _bot_id(token: str) -> str:
    """The bot's id, which a bot token begins with (base64), so two bots on one Redis pace apart; a token
    not of that form (tests) is hashed."""
    head = token.split(".", 1)[0]
    try:
        decoded = base64.b64decode(head + "=" * (-len(head) % 4), validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        decoded = ""
    return decoded if decoded.isdigit() else hashlib.sha256(token.encode()).hexdigest()[:16]
