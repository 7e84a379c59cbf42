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

Both are class attributes, so they hold for the whole process: one bot a process.
"""

from __future__ import annotations

import discord
import yarl

CHECKED_AGAINST = "2.7.1"
"""The discord.py whose source these were read against."""


def use_api(base_url: str) -> None:
    """Point discord.py's REST calls at ``base_url`` (``DISCORD_API_BASE_URL``)."""
    discord.http.Route.BASE = base_url.rstrip("/")


def api_base_url() -> str:
    """Where discord.py's REST calls go."""
    return discord.http.Route.BASE


def use_gateway(url: str) -> None:
    """Every gateway connection discord.py makes without being given an address goes to ``url``."""
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(url)
