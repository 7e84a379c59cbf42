"""Follow-ups end to end through the real client libraries against the fake platforms: python-telegram-bot
polling the fake Bot API, discord.py fed the fake gateway's payloads; the conversation, the commands and the
follow-up scan and delivery on real PostgreSQL.

A thread noted in Chinese (Telegram) and in English (Discord) is followed up once, after its time, outside quiet
hours, only once the user turned follow-ups on, and the user's answer closes it; a cancelled thread never is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import SecretStr
from sqlalchemy import select
from telegram.ext import Application

from bench.fakes.discord_api import MANAGE_CHANNELS, MEMBER_PERMISSIONS, FakeDiscord
from bench.fakes.telegram_api import FakeTelegram, chat_object, user_object
from bot.discord_bot import MnemoBot, use_api
from shared.commands.service import MemoryCommands
from shared.conversation.config import ConversationConfig
from shared.conversation.service import ConversationService
from shared.db.models import Chat, ConversationTurn
from shared.db.thread_models import OpenThread
from shared.delivery.platform_api import DiscordSender, TelegramSender
from shared.followups.delivery import FollowupRules, claim_due_followups, deliver_followup
from shared.followups.texts import OFFER
from shared.reminders.timeparse import zone_of
from shared.settings import Settings
from tests.fakes.uow import Clock
from tests.integration.test_discord_bot import settle
from tests.integration.test_telegram_bot import run_bot
from tests.waiting import until

BOB = user_object(1002, "Bob", language_code="zh-hans")
ALICE = "300000000000000001"
RULES = FollowupRules(lease=timedelta(seconds=30))
SHANGHAI = zone_of("Asia/Shanghai")

pytestmark = pytest.mark.committed
"""The bots handle updates on worker threads with units of work of their own: real commits."""


@pytest.fixture
def fake_discord() -> Iterator[FakeDiscord]:
    with FakeDiscord() as server:
        yield server


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime.now(UTC))


@pytest.fixture
def settings(telegram: FakeTelegram, monkeypatch: pytest.MonkeyPatch) -> Settings:
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    return Settings(_env_file=None, telegram_token=SecretStr(telegram.token), telegram_api_base_url=telegram.base_url,
                    default_timezone="Asia/Shanghai")


@pytest.fixture
def commands(uow_factory, clock: Clock) -> MemoryCommands:
    return MemoryCommands(uow_factory, default_timezone="Asia/Shanghai", clock=clock)


@pytest.fixture
def conversation(uow_factory, settings: Settings, clock: Clock) -> ConversationService:
    return ConversationService(uow_factory, ConversationConfig.from_settings(settings), chat_model=None, clock=clock)


def telegram_says(settings: Settings, service: ConversationService, commands: MemoryCommands,
                  telegram: FakeTelegram, *lines: str) -> list[str]:
    """Bob writes ``lines`` to the bot in turn (each answered before the next); what the bot sent back."""
    before = len(telegram.messages_to(1002))

    async def scenario(_application: Application) -> None:
        for count, line in enumerate(lines, 1):
            telegram.push_message(1002, BOB, line)
            await until(lambda n=count: len(telegram.messages_to(1002)) >= before + n)

    run_bot(settings, service, commands, scenario)
    return [message["text"] for message in telegram.messages_to(1002)[before:]]


def threads(uow_factory) -> list[OpenThread]:
    with uow_factory() as uow:
        return list(uow.session.scalars(select(OpenThread).order_by(OpenThread.id)))


def test_a_chinese_thread_on_telegram_is_followed_up_once_after_its_time_and_the_answer_closes_it(
        telegram, settings, conversation, commands, uow_factory, clock):
    said = telegram_says(settings, conversation, commands, telegram, "周五上午面试，有点紧张")
    assert OFFER[1] in said[0]  # offered once, in Chinese
    [thread] = threads(uow_factory)
    happens = thread.happens_at.astimezone(SHANGHAI)
    assert (thread.what, thread.status, happens.weekday(), happens.hour) == ("面试", "open", 4, 9)
    sender = {"telegram": TelegramSender(telegram.base_url, telegram.token)}
    after = thread.happens_at + timedelta(hours=4)  # Friday 13:00 in Shanghai
    assert claim_due_followups(uow_factory, after, RULES) == []  # no consent yet

    [turned_on] = telegram_says(settings, conversation, commands, telegram, "/followups on")
    assert turned_on.startswith("已开启回访") and "#" in turned_on and "面试" in turned_on
    assert claim_due_followups(uow_factory, thread.happens_at + timedelta(hours=1), RULES) == []  # too early
    [claim] = claim_due_followups(uow_factory, after, RULES)
    assert deliver_followup(uow_factory, sender, claim.thread_id, claim.attempt, after, rules=RULES).kind == "sent"
    assert telegram.messages_to(1002)[-1]["text"] == "你今天的面试怎么样了？"

    clock.now = after + timedelta(minutes=5)
    [answer] = telegram_says(settings, conversation, commands, telegram, "挺顺利的，谢谢关心！")
    [thread] = threads(uow_factory)
    assert (thread.status, thread.answered_at) == ("answered", clock.now)
    assert OFFER[1] not in answer  # offered only once
    with uow_factory() as uow:  # the follow-up is a turn of the conversation the answer continues
        turns = uow.session.scalars(select(ConversationTurn).where(ConversationTurn.user_id == thread.user_id)
                                    .order_by(ConversationTurn.id)).all()
    assert [(t.role, t.text) for t in turns][-3:-1] == [("assistant", "你今天的面试怎么样了？"),
                                                        ("user", "挺顺利的，谢谢关心！")]
    assert turns[-3].session_id == turns[-2].session_id
    assert claim_due_followups(uow_factory, after + timedelta(days=3), RULES) == []  # once
    [usage] = telegram_says(settings, conversation, commands, telegram, "/usage")
    assert "近 30 天回访：发出 1 次，你回复了 1 次。" in usage


def test_a_cancelled_thread_is_never_followed_up(telegram, settings, conversation, commands, uow_factory):
    telegram_says(settings, conversation, commands, telegram, "/followups on", "明天下午3点面试", "面试取消了")

    [thread] = threads(uow_factory)
    assert (thread.status, thread.closed_reason) == ("closed", "cancelled")
    for days in (1, 2, 7):
        assert claim_due_followups(uow_factory, thread.happens_at + timedelta(days=days), RULES) == []
    [listing] = telegram_says(settings, conversation, commands, telegram, "/followups list")
    assert "没有待回访的事" in listing


def test_a_corrected_time_replaces_the_thread(telegram, settings, conversation, commands, uow_factory):
    telegram_says(settings, conversation, commands, telegram, "周五上午面试", "不对，面试改到周六上午10点了")

    old, new = threads(uow_factory)
    assert (old.status, old.closed_reason, new.status) == ("closed", "corrected", "open")
    assert new.happens_at.astimezone(SHANGHAI).hour == 10


def discord_run(fake: FakeDiscord, conversation: ConversationService, commands: MemoryCommands, *steps) -> None:
    """Each step is ("say", text) in Alice's DM or ("command", name, options), run in turn through discord.py."""
    async def main() -> None:
        use_api(fake.base_url)
        client = MnemoBot(conversation, commands)
        await client.login(fake.token)
        try:
            for step in steps:
                if step[0] == "say":
                    client._connection.parse_message_create(fake.incoming_message(step[1], user_id=ALICE))
                else:
                    client._connection.parse_interaction_create(
                        fake.slash_command(step[1], step[2], user_id=ALICE, locale="en-US"))
                await settle()
        finally:
            await client.close()

    asyncio.run(main())


def test_an_english_thread_on_discord_waits_out_quiet_hours_is_sent_once_by_dm_and_the_answer_closes_it(
        fake_discord, conversation, commands, uow_factory, clock):
    discord_run(fake_discord, conversation, commands, ("say", "my exam is tomorrow, wish me luck"))
    dm = fake_discord.dm_channel(ALICE)
    [reply] = fake_discord.messages_in(dm)
    assert OFFER[0] in reply["content"]
    [thread] = threads(uow_factory)
    assert (thread.what, thread.day_only, thread.language) == ("your exam", True, "en")

    discord_run(fake_discord, conversation, commands, ("command", "followups", {"action": "on"}))
    assert fake_discord.followups[-1]["content"].startswith("Follow-ups are on")
    day = thread.happens_at.astimezone(SHANGHAI)
    sender = {"discord": DiscordSender(fake_discord.base_url, fake_discord.token)}
    assert claim_due_followups(uow_factory, day.replace(hour=17, minute=59), RULES) == []  # a day: from 18:00
    late = day.replace(hour=22, minute=30)
    assert claim_due_followups(uow_factory, late, RULES) == []  # quiet hours: held until the morning
    morning = (day + timedelta(days=1)).replace(hour=9, minute=0)
    [claim] = claim_due_followups(uow_factory, morning, RULES)
    assert deliver_followup(uow_factory, sender, claim.thread_id, claim.attempt, morning, rules=RULES).kind == "sent"
    assert deliver_followup(uow_factory, sender, claim.thread_id, claim.attempt, morning, rules=RULES).kind == "skipped"
    assert [m["content"] for m in fake_discord.messages_in(dm)][1:] == ["How did your exam go yesterday?"]

    clock.now = morning + timedelta(minutes=3)
    discord_run(fake_discord, conversation, commands, ("say", "it went really well, thanks!"))
    [thread] = threads(uow_factory)
    assert thread.status == "answered"
    assert claim_due_followups(uow_factory, morning + timedelta(days=2), RULES) == []
    assert len(fake_discord.messages_in(dm)) == 3  # the reply, the follow-up, the reply to the answer


GROUP = chat_object(-1001234567890, "学习小组")
CAROL = user_object(1003, "Carol", language_code="zh-hans")


def telegram_group_says(settings: Settings, service: ConversationService, commands: MemoryCommands,
                        telegram: FakeTelegram, *said: tuple[dict, str]) -> list[tuple[str, str]]:
    """Each (user, line) is written in the group in turn, each answered before the next; what the bot sent, as
    ("group", text) or ("private", text) (a refusal goes to the sender's private chat)."""
    async def scenario(_application: Application) -> None:
        for count, (user, line) in enumerate(said, 1):
            mention = [{"type": "mention", "offset": 0, "length": 15}] if line.startswith("@") else None
            telegram.push_message(GROUP, user, line, entities=mention)
            await until(lambda n=count: len(telegram.sent) >= sent_before + n)

    sent_before = len(telegram.sent)
    run_bot(settings, service, commands, scenario)
    return [("group" if message["chat_id"] == GROUP["id"] else "private", message["text"])
            for message in telegram.sent[sent_before:]]


def group_chat_settings(uow_factory) -> dict:
    with uow_factory() as uow:
        return uow.session.scalars(select(Chat.settings).where(Chat.platform_chat_id == str(GROUP["id"]))).one()


def test_a_telegram_group_takes_follow_ups_only_once_an_admin_turns_them_on(
        telegram, settings, conversation, commands, uow_factory):
    telegram_says(settings, conversation, commands, telegram, "/followups on")  # Bob's own consent
    telegram.set_member_status(GROUP["id"], CAROL, "administrator")
    [_noted, refused, status] = telegram_group_says(
        settings, conversation, commands, telegram, (BOB, "@mnemo_test_bot 周五上午面试，有点紧张"),
        (BOB, "/followups@mnemo_test_bot group on"), (BOB, "/followups@mnemo_test_bot group"))
    assert refused == ("private", "只有本群管理员可以开启或关闭本群的回访。")  # the group is not told
    assert status[0] == "group" and status[1].startswith("本群没有开启回访")
    assert group_chat_settings(uow_factory) == {}
    [thread] = threads(uow_factory)
    after = thread.happens_at + timedelta(hours=4)
    assert claim_due_followups(uow_factory, after, RULES) == []  # noted in a group that did not take them

    [(where, turned_on)] = telegram_group_says(settings, conversation, commands, telegram,
                                               (CAROL, "/followups@mnemo_test_bot group on"))
    assert where == "group" and turned_on.startswith("本群已开启回访")
    assert group_chat_settings(uow_factory) == {"followups": True}
    assert [call.params["user_id"] for call in telegram.calls_to("getChatMember")][-1] in (1003, "1003")
    [claim] = claim_due_followups(uow_factory, after + timedelta(days=1), RULES)  # looked at again a day later
    sender = {"telegram": TelegramSender(telegram.base_url, telegram.token)}
    delivered = deliver_followup(uow_factory, sender, claim.thread_id, claim.attempt, after + timedelta(days=1),
                                 rules=RULES)
    assert delivered.kind == "sent"
    assert "面试" in telegram.messages_to(GROUP["id"])[-1]["text"]  # asked in the group it was said in

    [(_, off)] = telegram_group_says(settings, conversation, commands, telegram,
                                     (CAROL, "/followups@mnemo_test_bot group off"))
    assert off.startswith("本群没有开启回访")
    assert group_chat_settings(uow_factory) == {"followups": False}


def test_the_group_switch_in_a_private_chat_says_where_it_belongs(telegram, settings, conversation, commands):
    [answer] = telegram_says(settings, conversation, commands, telegram, "/followups group on")
    assert answer == "/followups group 是群的开关：请在群里发送（由群管理员开启或关闭）。"


def test_a_discord_channel_takes_follow_ups_from_a_member_who_may_manage_it(
        fake_discord, conversation, commands, uow_factory):
    guild, channel = "900000000000000001", "900000000000000002"

    async def main() -> None:
        use_api(fake_discord.base_url)
        client = MnemoBot(conversation, commands)
        await client.login(fake_discord.token)
        try:
            for permissions in (MEMBER_PERMISSIONS, MEMBER_PERMISSIONS | MANAGE_CHANNELS):
                client._connection.parse_interaction_create(fake_discord.slash_command(
                    "followups", {"action": "group on"}, user_id=ALICE, guild_id=guild, channel_id=channel,
                    locale="en-US", permissions=permissions))
                await settle()
        finally:
            await client.close()

    asyncio.run(main())
    refused, turned_on = (answer["content"] for answer in fake_discord.followups[-2:])
    assert refused == "Only this group's admins can turn its follow-ups on or off."
    assert turned_on.startswith("Follow-ups are on in this group")
    with uow_factory() as uow:
        chat = uow.session.scalars(select(Chat).where(Chat.platform_chat_id == channel)).one()
    assert (chat.platform, chat.kind, chat.settings) == ("discord", "group", {"followups": True})
