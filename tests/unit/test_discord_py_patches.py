"""The discord.py internals Mnemo sets (bot/discord_py_patches.py) are still read where it writes them, and
nothing else in bot/ reaches into discord.py's internals. (The shards dialling the gateway that
``GET /gateway/bot`` names: tests/unit/test_discord_shards.py.)"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import discord

from bot import discord_py_patches
from bot.discord_py_patches import api_base_url, use_api, use_gateway

BOT = Path(__file__).resolve().parents[2] / "bot"
INTERNALS = re.compile(r"discord\.(http|gateway)\b|\._connection\b|Route\.BASE|DEFAULT_GATEWAY")


def test_every_rest_request_is_built_on_the_address_use_api_sets() -> None:
    before = discord.http.Route.BASE
    try:
        use_api("http://127.0.0.1:9/api/v10/")
        assert api_base_url() == "http://127.0.0.1:9/api/v10"
        assert discord.http.Route("GET", "/users/@me").url == "http://127.0.0.1:9/api/v10/users/@me"
    finally:
        discord.http.Route.BASE = before


def test_a_shard_whose_session_was_invalidated_dials_the_gateway_use_gateway_sets() -> None:
    before = discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
    try:
        use_gateway("ws://127.0.0.1:9/")
        assert str(discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY) == "ws://127.0.0.1:9/"
    finally:
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = before
    source = inspect.getsource(discord.gateway.DiscordWebSocket.received_message)
    assert "self.gateway = self.DEFAULT_GATEWAY" in source  # on INVALIDATE_SESSION, as in discord.py 2.7.1
    assert "DiscordWebSocket.DEFAULT_GATEWAY" in inspect.getsource(discord.AutoShardedClient.launch_shards)


def test_only_the_patches_module_touches_discord_py_internals() -> None:
    touching = sorted(path.name for path in BOT.rglob("*.py")
                      if INTERNALS.search(path.read_text()) and path.name != "discord_py_patches.py")
    assert touching == []
    assert discord_py_patches.CHECKED_AGAINST.split(".")[0] == discord.__version__.split(".")[0]


def test_idle_rate_limit_buckets_are_swept_at_most_once_a_minute() -> None:
    """discord.py walks every bucket for idle ones whenever it makes a new one (a new channel); Mnemo's walk
    runs at most once every BUCKET_SWEEP_SECONDS, and still forgets the idle ones."""
    import asyncio

    from bot.discord_py_patches import BUCKET_SWEEP_SECONDS, sweep_buckets_seldom

    source = inspect.getsource(discord.http.HTTPClient.get_ratelimit)
    assert "self._try_clear_expired_ratelimits()" in source  # where discord.py 2.7.1 sweeps: each new bucket

    async def check() -> None:
        http = discord.http.HTTPClient(asyncio.get_running_loop())
        now = [1000.0]
        sweep_buckets_seldom(http, clock=lambda: now[0])

        def idle_buckets(prefix: str) -> None:
            for n in range(300):
                bucket = http._buckets[f"{prefix}{n}"] = discord.http.Ratelimit(None)
                bucket._last_request -= 301  # idle for more than discord.py's five minutes

        idle_buckets("a")
        http.get_ratelimit("first new channel")  # the first sweep: the idle ones go
        assert set(http._buckets) == {"first new channel"}
        idle_buckets("b")
        now[0] += BUCKET_SWEEP_SECONDS - 1
        http.get_ratelimit("second new channel")  # within the minute: no walk
        assert len(http._buckets) == 302
        now[0] += 1
        http.get_ratelimit("third new channel")
        assert set(http._buckets) == {"first new channel", "second new channel", "third new channel"}
        await http.close()

    asyncio.run(check())
