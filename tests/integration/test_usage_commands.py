"""``/usage`` and the over-quota notice on every front-end: Telegram through python-telegram-bot and Discord
through discord.py against the loopback fakes, and the console's chat loop; real PostgreSQL, the fake LLM."""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from datetime import timedelta

import pytest
from pydantic import SecretStr
from telegram.ext import Application

from bench.fakes.discord_api import EPHEMERAL, FakeDiscord
from bench.fakes.telegram_api import FakeTelegram, user_object
from bot.console import chat_loop
from bot.console_commands import ConsoleCommands
from shared.commands.service import Caller, MemoryCommands
from shared.conversation.config import ConversationConfig
from shared.conversation.service import ConversationService
from shared.llm.client import ChatModel
from shared.settings import Settings
from shared.usage.policy import Prices, QuotaPolicy, UsagePolicy
from tests.builders import typed
from tests.integration.test_discord_bot import ALICE as DISCORD_ALICE
from tests.integration.test_discord_bot import Bot
from tests.integration.test_telegram_bot import llm_turn, run_bot
from tests.waiting import until

QUOTA = QuotaPolicy(per_user=50)
"""Smaller than one turn: the first answer spends the day's allowance."""
POLICY = UsagePolicy(QUOTA, Prices(input_per_mtok=0.15, cached_input_per_mtok=0.075, output_per_mtok=0.6))
CONFIG = replace(ConversationConfig(bot_name="Mnemo", personality="a warm friend", emotion_enabled=True,
                                    retrieval_limit=5, memory_budget_tokens=700, history_turns=15,
                                    idle=timedelta(minutes=30), default_timezone="UTC"), quota=QUOTA)
ANNA = user_object(1001, "Anna", language_code="en")
WEI = user_object(1002, "Wei", language_code="zh-hans")


@pytest.fixture
def llm(llm):
    llm.set_responder(lambda _request: llm_turn("Lovely."))
    return llm


def services(uow_factory, llm) -> tuple[ConversationService, MemoryCommands]:
    model = ChatModel(base_url=llm.base_url, api_key="test", model="fake-chat", timeout_seconds=10)
    return (ConversationService(uow_factory, CONFIG, chat_model=model),
            MemoryCommands(uow_factory, default_timezone="UTC", usage_policy=POLICY))


@pytest.mark.committed
def test_telegram_usage_and_the_notice_past_the_allowance_in_each_users_language(uow_factory, llm, monkeypatch):
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    with FakeTelegram() as telegram:
        settings = Settings(_env_file=None, telegram_token=SecretStr(telegram.token),
                            telegram_api_base_url=telegram.base_url)

        async def scenario(_app: Application) -> None:
            for user, first, second in ((ANNA, "I love green tea", "and hiking"), (WEI, "我喜欢绿茶", "还有爬山")):
                for number, text in enumerate((first, second, "/usage"), 1):
                    telegram.push_message(user["id"], user, text)
                    await until(lambda user=user, number=number: len(telegram.messages_to(user["id"])) == number)

        run_bot(settings, *services(uow_factory, llm), scenario)
        english = [message["text"] for message in telegram.messages_to(ANNA["id"])]
        chinese = [message["text"] for message in telegram.messages_to(WEI["id"])]
    assert english[0] == "Lovely."
    assert chinese[0] == "Lovely."
    assert "You've used today's allowance" in english[1]
    assert "offline mode" in english[1]
    assert "今天的额度已经用完" in chinese[1]
    assert english[2].startswith("Your usage (UTC days):\nToday: 2 messages · ")
    assert "cached" in english[2]
    assert "USD" in english[2]
    assert "Daily allowance: 50 tokens, 0 left today" in english[2]
    assert chinese[2].startswith("你的用量（按 UTC 日计算）：\n今天：2 条消息 · ")
    assert "今天还剩 0" in chinese[2]
    assert len(llm.chat_requests()) == 2  # one answer each: the second messages were not sent to the model


def test_discord_usage_is_ephemeral_and_the_notice_rides_under_the_dm_reply(uow_factory, llm):
    conversation, memory = services(uow_factory, llm)
    with FakeDiscord() as fake:
        async def scenario() -> None:
            async with Bot(fake, conversation, memory) as bot:
                await bot.receive(fake.incoming_message("I love green tea", user_id=DISCORD_ALICE))
                await bot.receive(fake.incoming_message("and hiking", user_id=DISCORD_ALICE))
                await bot.command("usage", locale="zh-CN")

        asyncio.run(scenario())
        answered, refused = (message["content"] for message in fake.messages_in(fake.dm_channel(DISCORD_ALICE)))
        [usage] = fake.followups
    assert answered == "Lovely."
    assert "*You've used today's allowance" in refused
    assert "offline mode" in refused
    assert usage["flags"] & EPHEMERAL
    assert usage["content"].startswith("你的用量（按 UTC 日计算）：\n今天：2 条消息")
    assert re.search(r"约 0\.\d{4} USD", usage["content"])


def test_console_usage_shows_the_three_windows_and_no_limit_when_none_is_set(uow_factory, tmp_path):
    read_line, out = typed(["hello there", "/usage"]), []

    caller = Caller(platform="console", platform_user_id="tester", locale="en", platform_chat_id="console")
    commands = ConsoleCommands(MemoryCommands(uow_factory), caller, ask=lambda _question: "n", export_dir=tmp_path)
    service = ConversationService(uow_factory, replace(CONFIG, quota=QuotaPolicy()), chat_model=None)
    asyncio.run(chat_loop(service, user_id="tester", bot_name="Mnemo", read_line=read_line, write=out.append,
                          commands=commands))
    usage = out[-2]
    assert usage.splitlines() == ["Your usage (UTC days):", "Today: 1 message · 0 tokens · — cached",
                                  "7 days: 1 message · 0 tokens · — cached", "30 days: 1 message · 0 tokens · — cached"]
