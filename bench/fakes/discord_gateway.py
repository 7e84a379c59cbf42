"""A fake Discord gateway (v10, JSON text frames) beside :class:`~bench.fakes.discord_api.FakeDiscord`.

A bot finds it as it finds Discord's: ``GET /gateway/bot`` on the fake REST API answers this gateway's
``ws://`` address, the shard count it recommends and the session start limit. On a connection the
gateway says HELLO; an IDENTIFY (the bot token, ``shard: [id, count]``) is answered READY with the
servers of that shard, then a GUILD_CREATE for each; a heartbeat gets its ACK. :meth:`FakeGateway.dispatch`
sends an event to the shard that owns it, as Discord routes them: a server's events to shard
``(server id >> 22) % count``, direct messages to shard 0. Discord's rules that a sharded bot meets
are kept: a shard count other than the gateway's closes the connection with 4010 (invalid shard)
and a second IDENTIFY of one rate-limit bucket (``shard id % max_concurrency``) within
:data:`IDENTIFY_INTERVAL` seconds is answered INVALID_SESSION (op 9), so a bot that splits its shards over
processes must space their IDENTIFYs across the processes. Recorded: ``identifies``
(each with its time), ``dispatched`` (event, shard). aiohttp (discord.py's own dependency) serves it,
from a thread of its own, on 127.0.0.1::

    with FakeDiscord() as discord, FakeGateway(discord, shard_count=2) as gateway:
        gateway.add_guild("800000000000000001")
        ...  # start the bot with DISCORD_API_BASE_URL=discord.base_url
        gateway.wait_ready({0, 1})
        gateway.dispatch("MESSAGE_CREATE", discord.incoming_message("hi", user_id="42"))
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Self

from aiohttp import WSMsgType, web

from bench.fakes.discord_api import DiscordRequest, FakeDiscord

HEARTBEAT_INTERVAL_MS = 41_250
IDENTIFY_INTERVAL = 5.0
"""Discord allows one IDENTIFY per rate-limit bucket every 5 seconds."""
DISPATCH, HEARTBEAT, IDENTIFY, RESUME, INVALID_SESSION, HELLO, HEARTBEAT_ACK = 0, 1, 2, 6, 9, 10, 11
INVALID_SHARD, AUTHENTICATION_FAILED = 4010, 4004


@dataclass(frozen=True)
class Identify:
    """An IDENTIFY the gateway received: its shard, when, and whether it was let in."""

    shard_id: int
    shard_count: int
    at: float
    accepted: bool
    intents: int


@dataclass
class _Session:
    ws: web.WebSocketResponse
    shard_id: int | None = None
    sequence: itertools.count = field(default_factory=lambda: itertools.count(1))


def shard_of(guild_id: str | int | None, shard_count: int) -> int:
    """The shard Discord sends a server's events to; direct messages (no server) go to shard 0."""
    return 0 if guild_id is None else (int(guild_id) >> 22) % shard_count


class FakeGateway:
    """The gateway of ``discord`` (registered as its ``GET /gateway/bot``); use as a context manager."""

    def __init__(self, discord: FakeDiscord, *, shard_count: int = 1, max_concurrency: int = 1,
                 identify_interval: float = IDENTIFY_INTERVAL) -> None:
        self.discord, self.shard_count = discord, shard_count
        self.max_concurrency, self.identify_interval = max_concurrency, identify_interval
        self._lock = threading.Lock()
        self._guilds: dict[str, tuple[str, ...]] = {}
        self._sessions: dict[int, _Session] = {}
        self._last_identify: dict[int, float] = {}
        self._identifies: list[Identify] = []
        self._dispatched: list[tuple[str, int]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._port = 0
        discord.add_route("GET", r"/gateway/bot", self._gateway_bot)

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self._port}/"

    def start(self) -> Self:
        started = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, args=(started,), name="FakeGateway", daemon=True)
        self._thread.start()
        if not started.wait(10):
            raise RuntimeError("the fake Discord gateway did not start")
        return self

    def stop(self) -> None:
        loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is None or thread is None:
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def add_guild(self, guild_id: str, role_ids: tuple[str, ...] = ()) -> int:
        """A server the bot is in (announced to its shard when that shard identifies); returns the shard."""
        with self._lock:
            self._guilds[guild_id] = role_ids
        return shard_of(guild_id, self.shard_count)

    @property
    def identifies(self) -> list[Identify]:
        with self._lock:
            return list(self._identifies)

    @property
    def dispatched(self) -> list[tuple[str, int]]:
        with self._lock:
            return list(self._dispatched)

    def ready_shards(self) -> set[int]:
        """The shards connected and identified now."""
        with self._lock:
            return {shard for shard, session in self._sessions.items() if not session.ws.closed}

    def wait_ready(self, shards: Iterable[int], timeout: float = 60.0) -> None:
        wanted, deadline = set(shards), time.monotonic() + timeout
        while not wanted <= self.ready_shards():
            if time.monotonic() > deadline:
                raise TimeoutError(f"shards {sorted(wanted - self.ready_shards())} did not identify in {timeout} s")
            time.sleep(0.05)

    def dispatch(self, event: str, data: dict[str, Any]) -> int:
        """Send ``event`` to the shard that owns it (by its ``guild_id``); returns that shard.
        Raises LookupError when that shard is not connected (Discord would hold it; a test should wait)."""
        shard = shard_of(data.get("guild_id"), self.shard_count)
        with self._lock:
            session = self._sessions.get(shard)
        if session is None or session.ws.closed or self._loop is None:
            raise LookupError(f"shard {shard} is not connected")
        payload = {"op": DISPATCH, "t": event, "s": next(session.sequence), "d": data}
        asyncio.run_coroutine_threadsafe(session.ws.send_str(json.dumps(payload)), self._loop).result(10)
        with self._lock:
            self._dispatched.append((event, shard))
        return shard

    # -- the server side ------------------------------------------------------------------------------------

    def _gateway_bot(self, _request: DiscordRequest) -> dict[str, Any]:
        return {"url": self.url, "shards": self.shard_count,
                "session_start_limit": {"total": 1000, "remaining": 1000, "reset_after": 86_400_000,
                                        "max_concurrency": self.max_concurrency}}

    def _serve(self, started: threading.Event) -> None:
        assert self._loop is not None
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_get("/", self._connection)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self._port = self._runner.addresses[0][1]
        started.set()
        self._loop.run_forever()

    async def _shutdown(self) -> None:
        with self._lock:
            sessions = list(self._sessions.values())
        for session in sessions:
            await session.ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _connection(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        session = _Session(ws)
        await ws.send_str(json.dumps({"op": HELLO, "d": {"heartbeat_interval": HEARTBEAT_INTERVAL_MS}}))
        async for frame in ws:
            if frame.type != WSMsgType.TEXT:
                continue
            message = json.loads(frame.data)
            if message.get("op") == HEARTBEAT:
                await ws.send_str(json.dumps({"op": HEARTBEAT_ACK}))
            elif message.get("op") == IDENTIFY:
                await self._identify(session, message["d"])
            elif message.get("op") == RESUME:  # nothing to resume here: identify again
                await ws.send_str(json.dumps({"op": INVALID_SESSION, "d": False}))
        with self._lock:
            if session.shard_id is not None and self._sessions.get(session.shard_id) is session:
                del self._sessions[session.shard_id]
        return ws

    async def _identify(self, session: _Session, data: dict[str, Any]) -> None:
        shard_id, shard_count = data.get("shard", [0, 1])
        if data.get("token", "").removeprefix("Bot ") != self.discord.token:
            await session.ws.close(code=AUTHENTICATION_FAILED, message=b"Authentication failed.")
            return
        if shard_count != self.shard_count or not 0 <= shard_id < shard_count:
            await session.ws.close(code=INVALID_SHARD, message=b"Invalid shard.")
            return
        now = time.monotonic()
        bucket = shard_id % self.max_concurrency
        with self._lock:
            accepted = now - self._last_identify.get(bucket, -self.identify_interval) >= self.identify_interval
            if accepted:
                self._last_identify[bucket] = now
                session.shard_id = shard_id
                self._sessions[shard_id] = session
            self._identifies.append(Identify(shard_id, shard_count, now, accepted, int(data.get("intents", 0))))
            guilds = {guild: roles for guild, roles in self._guilds.items()
                      if shard_of(guild, shard_count) == shard_id}
        if not accepted:
            await session.ws.send_str(json.dumps({"op": INVALID_SESSION, "d": False}))
            return
        ready = {"v": 10, "user": dict(self.discord.bot_user),
                 "guilds": [{"id": guild, "unavailable": True} for guild in guilds],
                 "session_id": f"session-{shard_id}-{int(now * 1000)}", "resume_gateway_url": self.url,
                 "shard": [shard_id, shard_count], "application": {"id": self.discord.application["id"], "flags": 0}}
        await session.ws.send_str(json.dumps({"op": DISPATCH, "t": "READY", "s": next(session.sequence), "d": ready}))
        for guild, roles in guilds.items():
            await session.ws.send_str(json.dumps({"op": DISPATCH, "t": "GUILD_CREATE", "s": next(session.sequence),
                                                  "d": self.discord.guild_create(guild, roles)}))

