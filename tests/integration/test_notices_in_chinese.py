"""A Chinese user reads every notice and warning in Chinese, on Discord and on Telegram, and no one ever reads a
setting's name: the real discord.py and python-telegram-bot against the fake Discord, Telegram and OpenAI servers,
with the real conversation service on real PostgreSQL.

The turns: the model's answer is not the JSON asked for (kept, nothing remembered), it sets a reminder with no
time, it fails (an offline reply), and the user sends faster than their rate (the flood notice). Then the notices:
a reminder the rules set (confirmed, with the zone it used) and the flood notice, each worded by the front-end in
the reader's language from its code and values."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator

import pytest
from limits.storage import MemoryStorage
from pydantic import SecretStr

from bench.fakes.discord_api import FakeDiscord
from bench.fakes.openai_server import FakeOpenAI
from bench.fakes.telegram_api import FakeTelegram
from bot import discord_render, telegram_render
from bot.console import render_reply
from shared.commands.service import MemoryCommands
from shared.conversation.messages import Reply
from shared.conversation.notice_texts import Notice, NoticeCode, notice_text
from shared.conversation.service import ConversationService
from shared.conversation.warning_texts import OFFLINE_REASONS, WARNING_TEXTS, TurnWarning, WarningCode
from shared.emotion import PLAIN_STRATEGY, UNKNOWN
from shared.limits import SharedLimit
from shared.llm.client import ChatModel
from shared.settings import Settings
from shared.text import Language
from tests.integration.test_discord_bot import CONFIG, Bot
from tests.integration.test_telegram_bot import BOB, all_fetched, run_bot
from tests.unit.test_notice_texts import params_of
from tests.waiting import until

SETTING_NAMES = sorted(name.upper() for name in Settings.model_fields)
NOTICE_TURNS = ("提醒我明天早上9点买花", "好的，谢谢", "再说一句", "还有一句")
"""A reminder the model did not set (the rules set it and say so), then messages up to one over the rate."""
REMINDER_NOTICE = "好的，明天 09:00（Asia/Shanghai）提醒你：买花。"
FLOOD_NOTICE = "你发消息有点快，我先简单回一句"
CHINESE_TURNS = ("我养了一只猫，叫团子", "提醒我买花", "我今天好累", "再说一句")
"""The user's four messages, answered as :func:`script` has the model answer them."""
_HAN = re.compile(r"[\u4e00-\u9fff]")
_ENGLISH_WORD = re.compile(r"[A-Za-z]{3,}")

pytestmark = pytest.mark.committed


def script(llm: FakeOpenAI) -> None:
    """Not JSON (the reply is kept, nothing remembered); a reminder with no time; a failure (offline). The fourth
    message is over the user's rate: the model is not asked."""
    llm.queue_reply("团子这个名字真可爱！它多大了？")
    llm.queue_reply({"emotion": {"primary": "neutral", "category": "neutral", "confidence": 0.9, "indicators": []},
                     "response": "好的！", "memory_update": {"should_store": False, "entries": []},
                     "todos": [{"content": "买花", "due": "随便什么时候"}], "topic": None, "context_variables": []})
    for _ in range(4):
        llm.queue_error(500)


def answer_plainly(llm: FakeOpenAI) -> None:
    """The model answers each message that reaches it, and sets no reminder."""
    for _ in range(len(NOTICE_TURNS)):
        llm.queue_reply({"emotion": {"primary": "neutral", "category": "neutral", "confidence": 0.9,
                                     "indicators": []},
                         "response": "好的！", "memory_update": {"should_store": False, "entries": []},
                         "todos": [], "topic": None, "context_variables": []})


def assert_told_in_chinese(answers: list[str]) -> None:
    """The reminder the rules set and the flood notice, in Chinese; no English sentence and no setting's name."""
    assert REMINDER_NOTICE in answers[0] and "时间按本机器人默认的 Asia/Shanghai 计算" in answers[0]
    assert FLOOD_NOTICE in answers[3] and FLOOD_NOTICE not in answers[2]
    for answer in answers:
        assert "LLM_BASE_URL" not in answer and "MESSAGE_RATE_PER_USER" not in answer
        assert "remind you" not in answer and "faster than I can think" not in answer
        assert_no_setting(answer)


def service(uow_factory, llm: FakeOpenAI) -> ConversationService:
    model = ChatModel(base_url=llm.base_url, api_key="test", model="fake-chat", timeout_seconds=10)
    return ConversationService(uow_factory, CONFIG, chat_model=model,
                               message_limit=SharedLimit(MemoryStorage(), "messages", "3/minute"))


def assert_chinese(note: str) -> None:
    """A note the bot adds to a reply: Chinese words, no English ones."""
    assert _HAN.search(note) and not _ENGLISH_WORD.search(note.replace("JSON", "")), note


def assert_no_setting(text: str) -> None:
    assert not any(name in text for name in SETTING_NAMES), text


@pytest.fixture
def llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(models=("fake-chat",)) as server:
        yield server


def discord_answers(uow_factory, llm, turns, user_id: str) -> list[str]:
    """The user writes ``turns`` in their DM, in turn, through discord.py; what they got."""
    with FakeDiscord() as fake:
        async def scenario() -> None:
            async with Bot(fake, service(uow_factory, llm), MemoryCommands(uow_factory)) as bot:
                for text in turns:
                    await bot.receive(fake.incoming_message(text, user_id=user_id))

        asyncio.run(scenario())
        return [message["content"] for message in fake.messages_in(fake.dm_channel(user_id))]


def test_a_chinese_user_on_discord_reads_every_note_under_a_reply_in_chinese(uow_factory, llm):
    script(llm)
    answers = discord_answers(uow_factory, llm, CHINESE_TURNS, "300000000000000009")
    assert len(answers) == len(CHINESE_TURNS)
    notes = [line for answer in answers for line in answer.splitlines()[1:]]
    assert len(notes) >= len(CHINESE_TURNS)  # every reply here has something to tell
    for note in notes:
        assert note.startswith("*") and note.endswith("*")
        assert_chinese(note)
    for answer in answers:
        assert_no_setting(answer)
    assert "买花" in answers[1] and "离线模式" in answers[2] and "离线模式" in answers[3]


def telegram_answers(uow_factory, llm, monkeypatch, turns) -> list[dict]:
    """Bob writes ``turns`` in turn through python-telegram-bot (each answered before the next); what he got."""
    with FakeTelegram() as telegram:
        for name in Settings.model_fields:
            monkeypatch.delenv(name.upper(), raising=False)
        settings = Settings(_env_file=None, telegram_token=SecretStr(telegram.token),
                            telegram_api_base_url=telegram.base_url, default_timezone="Asia/Shanghai")

        async def scenario(_app) -> None:
            for sent, text in enumerate(turns, start=1):
                telegram.push_message(1002, BOB, text)
                await all_fetched(telegram)
                await until(lambda sent=sent: len(telegram.messages_to(1002)) >= sent, what="the reply")

        run_bot(settings, service(uow_factory, llm), MemoryCommands(uow_factory), scenario)
        return telegram.messages_to(1002)


def test_a_chinese_user_on_telegram_reads_every_note_under_a_reply_in_chinese(uow_factory, llm, monkeypatch):
    script(llm)
    answers = telegram_answers(uow_factory, llm, monkeypatch, CHINESE_TURNS)
    assert len(answers) == len(CHINESE_TURNS)
    for answer in answers:
        [italic] = [entity for entity in answer.get("entities", []) if entity["type"] == "italic"]
        note = answer["text"].encode("utf-16-le")[2 * italic["offset"]:2 * (italic["offset"] + italic["length"])]
        assert_chinese(note.decode("utf-16-le"))
        assert_no_setting(answer["text"])
    assert "买花" in answers[1]["text"] and "离线模式" in answers[2]["text"]


@pytest.mark.parametrize("code", list(WarningCode))
def test_every_warning_reaches_a_chinese_reader_in_chinese_on_both_platforms(code):
    params = {"count": 12, "what": "买花", "when": "明天", "problem": "invalid", "reason": "only a number"}
    english, _chinese = WARNING_TEXTS[code]
    warning = TurnWarning.of(code, **{name: params[name] for name in params if "{" + name + "}" in english})
    reply = Reply(text="好的", emotion=UNKNOWN, strategy=PLAIN_STRATEGY, warnings=(warning,), language=Language.ZH,
                  offline=code is WarningCode.OFFLINE or code in OFFLINE_REASONS)
    [discord_message] = discord_render.reply_messages(reply)
    assert_chinese(discord_message.splitlines()[1])
    note = telegram_render.reply_note(reply)
    assert note is not None
    assert_chinese(note)


def test_a_chinese_user_on_discord_reads_a_reminders_confirmation_and_the_flood_notice_in_chinese(uow_factory, llm):
    answer_plainly(llm)
    answers = discord_answers(uow_factory, llm, NOTICE_TURNS, "300000000000000010")
    assert len(answers) == len(NOTICE_TURNS)
    assert_told_in_chinese(answers)
    assert f"*{FLOOD_NOTICE}" in answers[3]  # the notice's own line, in italics
    assert len(llm.chat_requests()) == 3  # the fourth message was over the rate: the model was not asked


def test_a_chinese_user_on_telegram_reads_a_reminders_confirmation_and_the_flood_notice_in_chinese(
        uow_factory, llm, monkeypatch):
    answer_plainly(llm)
    answers = telegram_answers(uow_factory, llm, monkeypatch, NOTICE_TURNS)
    assert len(answers) == len(NOTICE_TURNS)
    assert_told_in_chinese([answer["text"] for answer in answers])
    [italic] = [entity for entity in answers[3]["entities"] if entity["type"] == "italic"]
    note = answers[3]["text"].encode("utf-16-le")[2 * italic["offset"]:2 * (italic["offset"] + italic["length"])]
    assert note.decode("utf-16-le").startswith(FLOOD_NOTICE)  # the note under the reply starts with the notice
    assert len(llm.chat_requests()) == 3


@pytest.mark.parametrize("code", list(NoticeCode))
def test_every_notice_reaches_a_chinese_reader_in_chinese_on_both_platforms(code):
    notice = Notice.of(code, **params_of(code))
    reply = Reply(text="好的", emotion=UNKNOWN, strategy=PLAIN_STRATEGY, notices=(notice,), language=Language.ZH)
    [discord_message] = discord_render.reply_messages(reply)
    note = telegram_render.reply_note(reply)
    console = render_reply(reply, "Mnemo")
    for shown in (discord_message.splitlines()[1], note, console.splitlines()[1]):
        assert shown is not None and notice_text(notice, chinese=True) in shown.replace("\\", "")
        assert "{" not in shown
        assert_no_setting(shown)
