"""Splitting the Discord bot's shards over processes: ``mnemo discord --shard-count N --shards 0,1``."""

from __future__ import annotations

import pytest

from bot.discord_bot import MnemoBot, Shards
from shared.app.cli import build_parser
from shared.errors import ConfigError


def parsed(*argv: str) -> Shards | None:
    args = build_parser().parse_args(["discord", *argv])
    return Shards.parse(args.shard_count, args.shards)


def test_without_flags_discord_py_places_the_shards_itself() -> None:
    assert parsed() is None


@pytest.mark.parametrize(("argv", "expected"), [
    (("--shard-count", "4", "--shards", "0,1"), Shards(4, (0, 1))),
    (("--shard-count", "4", "--shards", "3, 2"), Shards(4, (2, 3))),
    (("--shard-count", "2"), Shards(2, (0, 1))),
])
def test_the_shards_of_this_process(argv: tuple[str, ...], expected: Shards) -> None:
    assert parsed(*argv) == expected


@pytest.mark.parametrize(("argv", "said"), [
    (("--shards", "0"), "needs --shard-count"),
    (("--shard-count", "0"), "needs --shard-count"),
    (("--shard-count", "2", "--shards", "2"), "between 0 and 1"),
    (("--shard-count", "2", "--shards", "-1"), "between 0 and 1"),
    (("--shard-count", "2", "--shards", "one"), "separated by commas"),
    (("--shard-count", "2", "--shards", ","), "between 0 and 1"),
])
def test_shards_that_cannot_be_are_refused_with_what_to_give(argv: tuple[str, ...], said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        parsed(*argv)


def test_the_client_asks_discord_for_exactly_its_shards() -> None:
    client = MnemoBot(conversation=None, memory=_Memory(), shards=Shards(4, (1, 3)))
    assert (client.shard_count, client.shard_ids) == (4, [1, 3])
    automatic = MnemoBot(conversation=None, memory=_Memory())
    assert (automatic.shard_count, automatic.shard_ids) == (None, None)
    # each client sweeps its idle rate-limit buckets seldom (bot/discord_py_patches.py)
    assert {bot.http._try_clear_expired_ratelimits.__name__ for bot in (client, automatic)} == {"seldom"}


class _Memory:
    """What the client reads of the command service when it is built."""

    uow_factory = staticmethod(lambda: None)


def test_the_shards_dial_the_gateway_that_the_api_names_never_the_public_one() -> None:
    import asyncio

    import discord

    from bench.fakes.discord_api import FakeDiscord
    from bot.discord_bot import use_api

    dialled: list[tuple[str, int, bool]] = []

    async def scenario(fake: FakeDiscord) -> None:
        use_api(fake.base_url)
        client = MnemoBot(conversation=None, memory=_Memory(), shards=Shards(4, (1, 3)))

        async def launch_shard(gateway, shard_id: int, *, initial: bool = False) -> None:
            dialled.append((str(gateway), shard_id, initial))

        client.launch_shard = launch_shard
        await client.login(fake.token)
        try:
            await client.launch_shards()
        finally:
            await client.close()

    base, public = discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
    reconnects_to = []
    with FakeDiscord() as fake:
        fake.add_route("GET", r"/gateway/bot", lambda _request: {
            "url": "ws://127.0.0.1:9", "shards": 1,
            "session_start_limit": {"total": 1000, "remaining": 1000, "reset_after": 0, "max_concurrency": 1}})
        try:
            asyncio.run(scenario(fake))
            reconnects_to.append(str(discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY))
        finally:
            discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = base, public
    assert dialled == [("ws://127.0.0.1:9", 1, True), ("ws://127.0.0.1:9", 3, False)]
    assert reconnects_to == ["ws://127.0.0.1:9"]  # a shard identifying afresh after its session was invalidated


def test_processes_of_one_bot_pace_their_identifies_under_the_bots_id() -> None:
    from bot.discord_bot import _bot_id

    assert _bot_id("MTAwMDAwMDAwMDAwMDAwMDAwMQ.GxYz12.abcdefghijklmnopqrstuvwxyz") == "1000000000000000001"
    assert _bot_id("discord-token") == _bot_id("discord-token") != _bot_id("another-token")
    assert len(_bot_id("not.base64!.token")) == 16
