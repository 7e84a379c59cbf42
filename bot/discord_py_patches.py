"""The discord.py internals Mnemo sets, all of them here, each with why: discord.py has no public option for
either address. Read against discord.py :data:`CHECKED_AGAINST`; tests/unit/test_discord_py_patches.py
fails when an upgrade stops reading them where these functions write.

- :func:`use_api`, called where the bot starts (``run_discord``, ``sync_commands``): every REST request
  (bot routes, interaction callbacks, follow-ups) is built on the class attribute ``discord.http.Route.BASE``
  (``Route.__init__``), so a self-hosted proxy or the tests' fake Discord is reached only through it.
- :func:`use_gateway`, called when the client launches its shards (``MnemoBot.launch_shards``, which overrides
  the undocumented ``AutoShardedClient.launch_shards``) with the address ``GET /gateway/bot`` gave: with an
  explicit shard count discord.py dials the class attribute ``DiscordWebSocket.DEFAULT_GATEWAY`` instead of
  asking, and so does a shard whose session was invalidated (``DiscordWebSocket.received_message``,
  ``INVALIDATE_SESSION``): the public gateway, whatever API the bot was pointed at.

- :func:`sweep_buckets_seldom`, called when the bot is made (``MnemoBot.__init__``): discord.py forgets a
  rate-limit bucket idle for five minutes by walking every bucket it holds each time it makes a new one
  (``HTTPClient.get_ratelimit`` calls ``_try_clear_expired_ratelimits``), and a bot makes a new one for every
  channel it first writes to: each private chat. A bot that answered thousands of people within five minutes
  walked thousands of buckets for every new one (in the load bench at 30 messages a second, 4 % of a Discord
  shard's CPU). The walk now runs at most once every :data:`BUCKET_SWEEP_SECONDS` (per client).

The first two are class attributes, so they hold for the whole process: one bot a process.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import discord
import yarl

CHECKED_AGAINST = "2.7.1"
"""The discord.py whose source these were read against."""
BUCKET_SWEEP_SECONDS = 60.0
"""How often idle rate-limit buckets are forgotten at most: they live up to this long past discord.py's five idle
minutes (a few hundred bytes each)."""


def use_api(base_url: str) -> None:
    """Point discord.py's REST calls at ``base_url`` (``DISCORD_API_BASE_URL``)."""
    discord.http.Route.BASE = base_url.rstrip("/")


def api_base_url() -> str:
    """Where discord.py's REST calls go."""
    return discord.http.Route.BASE


def use_gateway(url: str) -> None:
    """Every gateway connection discord.py makes without being given an address goes to ``url``."""
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(url)


def sweep_buckets_seldom(http: discord.http.HTTPClient, every: float = BUCKET_SWEEP_SECONDS,
                         clock: Callable[[], float] = time.monotonic) -> None:
    """``http`` walks its rate-limit buckets for idle ones at most once every ``every`` seconds."""
    sweep = http._try_clear_expired_ratelimits
    last_swept = clock() - every  # the first new bucket may sweep at once

    def seldom() -> None:
        nonlocal last_swept
        if clock() - last_swept >= every:
            last_swept = clock()
            sweep()

    http._try_clear_expired_ratelimits = seldom  # type: ignore[method-assign]
