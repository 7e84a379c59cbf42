"""A message mixing Chinese and English is answered in the same language on Discord, Telegram and the console:
its reply, its notes and labels, by the one rule (:func:`shared.text.language_of`), whatever the platform's locale.
Offline mode (no model), through the real discord.py and python-telegram-bot against the fake servers."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import SecretStr

from bench.fakes.discord_api import FakeDiscord
from bench.fakes.telegram_api import FakeTelegram
from shared.commands.service import MemoryCommands
from shared.conversation.service import ConversationService
from shared.settings import Settings
from shared.text import Language, language_of
from tests.integration.test_console_commands import run_console
from tests.integration.test_discord_bot import CONFIG, Bot
from tests.integration.test_telegram_bot import BOB, all_fetched, run_bot
from tests.waiting import until

MIXED = {Language.EN: "我 really love green tea and jazz", Language.ZH: "我最近很喜欢听 jazz 和 blues"}
OFFLINE_MARK = {Language.EN: "offline mode", Language.ZH: "离线模式"}

pytestmark = pytest.mark.committed


@pytest.mark.parametrize("language", list(Language))
def test_a_mixed_message_gets_the_same_language_on_discord_telegram_and_the_console(
        uow_factory, tmp_path, monkeypatch, language):
    text = MIXED[language]
    assert language_of(text) is language

    with FakeDiscord() as fake:
        async def discord_scenario() -> None:
            async with Bot(fake, ConversationService(uow_factory, CONFIG, chat_model=None),
                           MemoryCommands(uow_factory)) as bot:
                await bot.receive(fake.incoming_message(text, user_id="300000000000000008"))

        asyncio.run(discord_scenario())
        [on_discord] = fake.messages_in(fake.dm_channel("300000000000000008"))
    assert on_discord["content"].splitlines()[-1] == f"*⚠ {OFFLINE_MARK[language]}*"

    with FakeTelegram() as telegram:  # BOB's Telegram is in Chinese: the message's words decide, not that
        for name in Settings.model_fields:
            monkeypatch.delenv(name.upper(), raising=False)
        settings = Settings(_env_file=None, telegram_token=SecretStr(telegram.token),
                            telegram_api_base_url=telegram.base_url, default_timezone="Asia/Shanghai")

        async def telegram_scenario(_app) -> None:
            telegram.push_message(1002, BOB, text)
            await all_fetched(telegram)
            await until(lambda: telegram.messages_to(1002), what="the reply")

        run_bot(settings, ConversationService(uow_factory, CONFIG, chat_model=None), MemoryCommands(uow_factory),
                telegram_scenario)
        [on_telegram] = telegram.messages_to(1002)
    assert on_telegram["text"].split("\n\n")[-1].startswith(OFFLINE_MARK[language])

    [on_console] = run_console(uow_factory, tmp_path, [text], locale="zh" if language is Language.EN else "en")
    assert on_console.startswith("Mnemo (offline)> " if language is Language.EN else "Mnemo（离线）> ")

    replies = [on_discord["content"].splitlines()[0], on_telegram["text"].split("\n\n")[0],
               on_console.removeprefix("Mnemo (offline)> ").removeprefix("Mnemo（离线）> ").splitlines()[0]]
    assert {language_of(reply) for reply in replies} == {language}, replies
