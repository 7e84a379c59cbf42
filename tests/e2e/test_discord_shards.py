"""Two real ``mnemo discord`` processes splitting two shards, on one database, against the fake Discord REST
API and its fake gateway: each process identifies its own shard (the two IDENTIFYs spaced as Discord
requires, though each is its process's first), every message and command reaches the process owning its
shard and is answered once, and one user's message rate is counted across both processes."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from bench.fakes.discord_api import FakeDiscord
from bench.fakes.discord_gateway import IDENTIFY_INTERVAL, FakeGateway, shard_of
from bench.fakes.openai_server import FakeOpenAI
from shared.db.engine import make_engine
from tests.e2e.bot_process import REPLY, stop
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
START_SECONDS = 90
ALICE, BOB = "300000000000000001", "300000000000000002"
GUILD_ZERO = str(4 << 22)  # (id >> 22) % 2 == 0: shard 0
GUILD_ONE = str(5 << 22)  # shard 1
MESSAGES_PER_MINUTE = 3

pytestmark = pytest.mark.e2e


@pytest.fixture
def gateway(discord) -> Iterator[FakeGateway]:
    with FakeGateway(discord, shard_count=2) as server:
        yield server


def shard_process(database_url: str, discord: FakeDiscord, llm: FakeOpenAI, shard: int, log: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LOG_", "LLM_", "REDIS_", "TELEGRAM_", "DISCORD_", "METRICS_", "PROMETHEUS_",
                                "MESSAGE_RATE"))}
    env.update(DATABASE_URL=database_url, DISCORD_TOKEN=discord.token, DISCORD_API_BASE_URL=discord.base_url,
               LLM_BASE_URL=llm.base_url, LLM_API_KEY="test", LLM_MODEL="fake-chat", DEFAULT_TIMEZONE="UTC",
               MESSAGE_RATE_PER_USER=f"{MESSAGES_PER_MINUTE}/minute", MNEMO_DATA_DIR=str(log.parent),
               PYTHONPATH=str(ROOT), LOG_LEVEL="INFO")
    with open(log, "wb") as output:
        return subprocess.Popen([sys.executable, "-m", "shared.app.cli", "discord", "--no-workers",
                                 "--shard-count", "2", "--shards", str(shard)],
                                env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)


def user_turns(database_url: str) -> int:
    engine = make_engine(database_url)
    try:
        with engine.connect() as connection:
            return connection.scalar(text("SELECT count(*) FROM conversation_turns WHERE role = 'user'"))
    finally:
        engine.dispose()


def test_two_shard_processes_each_answer_their_own_shard_once_and_share_one_users_message_rate(
        migrated_system_db, discord, gateway, llm, tmp_path):
    assert (shard_of(GUILD_ZERO, 2), shard_of(GUILD_ONE, 2)) == (0, 1)
    gateway.add_guild(GUILD_ZERO)
    gateway.add_guild(GUILD_ONE)
    logs = [tmp_path / "shard0" / "bot.log", tmp_path / "shard1" / "bot.log"]
    for log in logs:
        log.parent.mkdir()
    processes = [shard_process(migrated_system_db, discord, llm, shard, log) for shard, log in enumerate(logs)]
    said = lambda: "\n".join(log.read_text() for log in logs)  # noqa: E731
    bot = discord.bot_user["id"]
    try:
        wait_for(lambda: gateway.ready_shards() == {0, 1} or any(p.poll() is not None for p in processes),
                 START_SECONDS, said)
        assert gateway.ready_shards() == {0, 1}, said()
        chats = [discord.incoming_message("hello from a direct message", user_id=ALICE),
                 discord.incoming_message(f"<@{bot}> hello from server zero", user_id=ALICE, guild_id=GUILD_ZERO,
                                          mentions=(discord.bot_user,)),
                 discord.incoming_message(f"<@{bot}> hello from server one", user_id=ALICE, guild_id=GUILD_ONE,
                                          mentions=(discord.bot_user,))]
        assert [gateway.dispatch("MESSAGE_CREATE", message) for message in chats] == [0, 0, 1]
        command = discord.slash_command("help", user_id=ALICE, guild_id=GUILD_ONE, channel_id=discord.new_id())
        assert gateway.dispatch("INTERACTION_CREATE", command) == 1
        wait_for(lambda: all(discord.messages_in(m["channel_id"]) for m in chats) and discord.interaction_responses,
                 60, said)
        floods = [discord.incoming_message(f"<@{bot}> message {number}", user_id=BOB,
                                           guild_id=(GUILD_ZERO, GUILD_ONE)[number % 2], mentions=(discord.bot_user,))
                  for number in range(MESSAGES_PER_MINUTE + 1)]
        for message in floods:  # one at a time, so the one past the rate is the last
            gateway.dispatch("MESSAGE_CREATE", message)
            wait_for(lambda message=message: discord.messages_in(message["channel_id"]), 60, said)
    finally:
        codes = [stop(process) for process in processes]
    assert codes == [0, 0], said()

    identified = [identify for identify in gateway.identifies if identify.accepted]
    assert sorted(identify.shard_id for identify in identified) == [0, 1] and len(gateway.identifies) == 2
    assert abs(identified[1].at - identified[0].at) >= IDENTIFY_INTERVAL  # the second process waited its turn
    for message in chats + floods:  # each answered once; in a server, as a reply to it
        [answer] = discord.messages_in(message["channel_id"])
        assert "guild_id" not in message or str(answer["message_reference"]["message_id"]) == message["id"]
    assert [m["content"] for m in (discord.messages_in(c["channel_id"])[0] for c in chats)] == [REPLY] * 3
    [response] = discord.interaction_responses
    assert response["type"] == 4 and "/memories" in response["content"]
    flood_answers = [discord.messages_in(m["channel_id"])[0]["content"] for m in floods]
    assert flood_answers[:MESSAGES_PER_MINUTE] == [REPLY] * MESSAGES_PER_MINUTE, flood_answers
    assert flood_answers[-1] != REPLY  # past the rate: answered offline, with a notice, by the other process
    assert len(llm.chat_requests()) == 3 + MESSAGES_PER_MINUTE
    assert user_turns(migrated_system_db) == 3 + MESSAGES_PER_MINUTE + 1  # every message kept
    assert discord.command_syncs == []  # the commands are published once, by `mnemo discord --sync`
    assert "shard 1 waits" in said() or "shard 0 waits" in said()
