"""The reminder senders against fake Telegram and Discord APIs on loopback."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from bench.fakes.discord_api import FakeDiscord
from bench.fakes.loopback import refusing_port
from bench.fakes.telegram_api import FakeTelegram
from shared.delivery.platform_api import (
    ConsoleSender,
    DiscordSender,
    TelegramSender,
    discord_nonce,
    senders_from_settings,
)
from shared.reminders.service import ChatMoved, DeliveryRefused, ReminderTarget, RetryLater, SenderMisconfigured
from shared.settings import Settings
from tests.waiting import wait_for

KEY = "mnemo-todo-7"
TG_PRIVATE = ReminderTarget("telegram", "1001", "1001", "private")
TG_GROUP = ReminderTarget("telegram", "-100500", "1001", "group")
DC_USER = "300000000000000001"
DC_PRIVATE = ReminderTarget("discord", "400000000000000001", DC_USER, "private")
DC_GUILD = ReminderTarget("discord", "500000000000000001", DC_USER, "group")


def telegram_sender(server: FakeTelegram, token: str | None = None, timeout: float = 5.0) -> TelegramSender:
    return TelegramSender(server.base_url, token or server.token, timeout=timeout)


def discord_sender(server: FakeDiscord, token: str | None = None, timeout: float = 5.0) -> DiscordSender:
    return DiscordSender(server.base_url, token or server.token, timeout=timeout)


def test_telegram_sends_the_reminder_to_the_private_chat(telegram: FakeTelegram) -> None:
    telegram_sender(telegram).send(TG_PRIVATE, "⏰ Reminder: drink water (09:00)", idempotency_key=KEY)

    assert telegram.sent == [{"chat_id": 1001, "text": "⏰ Reminder: drink water (09:00)", "message_id": 1}]
    assert [call.method for call in telegram.calls] == ["sendMessage"]


def test_telegram_sends_a_group_reminder_to_the_group_with_nothing_but_its_text(telegram: FakeTelegram) -> None:
    telegram_sender(telegram).send(TG_GROUP, "⏰ 提醒：开会（15:00）", idempotency_key=KEY)

    [call] = telegram.calls
    assert call.params == {"chat_id": -100500, "text": "⏰ 提醒：开会（15:00）"}


def test_discord_creates_the_dm_channel_once_and_reuses_it(discord: FakeDiscord) -> None:
    sender = discord_sender(discord)

    sender.send(DC_PRIVATE, "⏰ Reminder: one", idempotency_key="mnemo-todo-1")
    sender.send(DC_PRIVATE, "⏰ Reminder: two", idempotency_key="mnemo-todo-2")

    dm = discord.dm_channel_of(DC_USER)
    assert [r.path for r in discord.requests] == ["/users/@me/channels", f"/channels/{dm}/messages",
                                                  f"/channels/{dm}/messages"]
    assert [m["content"] for m in discord.messages_in(dm)] == ["⏰ Reminder: one", "⏰ Reminder: two"]
    assert discord.requests[1].headers["authorization"] == "Bot discord-token"
    assert discord.requests[1].json["allowed_mentions"] == {"parse": []}


def test_discord_mentions_only_the_user_in_a_guild_channel(discord: FakeDiscord) -> None:
    discord_sender(discord).send(DC_GUILD, "⏰ Reminder: @everyone standup (10:00)", idempotency_key=KEY)

    [message] = discord.messages_in(DC_GUILD.platform_chat_id)
    assert message["content"] == f"<@{DC_USER}> ⏰ Reminder: @everyone standup (10:00)"
    assert message["allowed_mentions"] == {"parse": [], "users": [DC_USER]}
    assert message["nonce"] == KEY and discord.requests[0].json["enforce_nonce"] is True


def test_a_retried_discord_send_with_the_same_idempotency_key_posts_once(discord: FakeDiscord) -> None:
    sender = discord_sender(discord)

    for _ in range(3):
        sender.send(DC_GUILD, "⏰ Reminder: once", idempotency_key=KEY)
    sender.send(DC_GUILD, "⏰ Reminder: another", idempotency_key="mnemo-todo-8")

    assert [m["content"].split("Reminder: ")[1] for m in discord.messages] == ["once", "another"]
    assert len(discord.requests) == 4


def test_a_discord_send_whose_answer_was_lost_is_posted_once_when_retried(discord: FakeDiscord) -> None:
    sender = discord_sender(discord, timeout=0.3)
    discord.stall_next(0.6, process=True)  # the platform takes the message, the answer comes too late

    with pytest.raises(RetryLater):
        sender.send(DC_GUILD, "⏰ Reminder: slow", idempotency_key=KEY)
    wait_for(lambda: discord.messages, 10, "the stalled request to be processed late")
    sender.send(DC_GUILD, "⏰ Reminder: slow", idempotency_key=KEY)

    assert len(discord.messages) == 1


def test_long_idempotency_keys_become_nonces_within_discords_limit() -> None:
    nonce = discord_nonce("mnemo-todo-" + "9" * 40)
    assert len(nonce) == 25 and nonce == discord_nonce("mnemo-todo-" + "9" * 40)
    assert discord_nonce(KEY) == KEY


def test_a_telegram_429_asks_to_retry_after_the_servers_seconds(telegram: FakeTelegram) -> None:
    telegram.fail_next(429, retry_after=7)

    with pytest.raises(RetryLater) as caught:
        telegram_sender(telegram).send(TG_PRIVATE, "hi", idempotency_key=KEY)

    assert caught.value.seconds == 7 and "Too Many Requests" in caught.value.reason
    assert telegram.sent == []


def test_a_discord_429_asks_to_retry_after_the_seconds_in_its_body(discord: FakeDiscord) -> None:
    discord.fail_next(429, retry_after=0.25)

    with pytest.raises(RetryLater) as caught:
        discord_sender(discord).send(DC_GUILD, "hi", idempotency_key=KEY)

    assert caught.value.seconds == 0.25 and "rate limited" in caught.value.reason
    assert discord.messages == []


def test_a_discord_error_with_only_a_retry_after_header_waits_that_long(discord: FakeDiscord) -> None:
    discord.fail_next(503, retry_after=4)

    with pytest.raises(RetryLater) as caught:
        discord_sender(discord).send(DC_GUILD, "hi", idempotency_key=KEY)

    assert caught.value.seconds == 4


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_errors_ask_to_retry_on_both_platforms(telegram: FakeTelegram, discord: FakeDiscord,
                                                      status: int) -> None:
    telegram.fail_next(status)
    discord.fail_next(status)

    with pytest.raises(RetryLater):
        telegram_sender(telegram).send(TG_PRIVATE, "hi", idempotency_key=KEY)
    with pytest.raises(RetryLater):
        discord_sender(discord).send(DC_GUILD, "hi", idempotency_key=KEY)


def test_a_request_that_never_gets_an_answer_asks_to_retry(telegram: FakeTelegram) -> None:
    telegram.stall_next(5.0)

    with pytest.raises(RetryLater) as caught:
        telegram_sender(telegram, timeout=0.3).send(TG_PRIVATE, "hi", idempotency_key=KEY)

    assert "Timeout" in caught.value.reason and telegram.sent == [] and telegram.calls == []


def test_an_unreachable_api_asks_to_retry() -> None:
    with refusing_port() as port, pytest.raises(RetryLater):
        TelegramSender(f"http://127.0.0.1:{port}/bot", "1:x", timeout=1).send(TG_PRIVATE, "hi", idempotency_key=KEY)


@pytest.mark.parametrize(("status", "description"), [(403, "Forbidden: bot was blocked by the user"),
                                                     (400, "Bad Request: chat not found")])
def test_telegram_refuses_blocked_and_unknown_chats(telegram: FakeTelegram, status: int, description: str) -> None:
    telegram.fail_next(status, description=description)

    with pytest.raises(DeliveryRefused) as caught:
        telegram_sender(telegram).send(TG_PRIVATE, "hi", idempotency_key=KEY)

    assert not isinstance(caught.value, SenderMisconfigured) and description in caught.value.reason


@pytest.mark.parametrize("status", [403, 404])
def test_discord_refuses_channels_it_cannot_post_in(discord: FakeDiscord, status: int) -> None:
    discord.fail_next(status)

    with pytest.raises(DeliveryRefused) as caught:
        discord_sender(discord).send(DC_GUILD, "hi", idempotency_key=KEY)

    assert not isinstance(caught.value, SenderMisconfigured)


def test_a_discord_id_that_is_not_a_snowflake_is_refused_without_a_request(discord: FakeDiscord) -> None:
    target = ReminderTarget("discord", "../../users/@me", DC_USER, "group")

    with pytest.raises(DeliveryRefused):
        discord_sender(discord).send(target, "hi", idempotency_key=KEY)

    assert discord.requests == []


def test_a_telegram_group_that_became_a_supergroup_names_its_new_id(telegram: FakeTelegram) -> None:
    telegram.migrate_chat(-100500, -1001234567890)

    with pytest.raises(ChatMoved) as moved:
        telegram_sender(telegram).send(TG_GROUP, "⏰ 提醒：开会（15:00）", idempotency_key=KEY)

    assert moved.value.new_platform_chat_id == "-1001234567890" and "supergroup" in moved.value.reason
    assert telegram.sent == []


def test_a_rejected_token_is_a_misconfiguration_not_the_recipients_fault(telegram: FakeTelegram,
                                                                         discord: FakeDiscord) -> None:
    with pytest.raises(SenderMisconfigured) as telegram_error:
        telegram_sender(telegram, token="999:WRONG").send(TG_PRIVATE, "hi", idempotency_key=KEY)
    with pytest.raises(SenderMisconfigured) as discord_error:
        discord_sender(discord, token="wrong").send(DC_PRIVATE, "hi", idempotency_key=KEY)

    assert "401" in telegram_error.value.reason and "Unauthorized" in discord_error.value.reason
    assert telegram.sent == [] and discord.messages == []


def test_senders_are_built_for_configured_platforms_only(telegram: FakeTelegram, discord: FakeDiscord,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    settings = Settings(_env_file=None, telegram_token=SecretStr(telegram.token),
                        telegram_api_base_url=telegram.base_url, discord_token=None)

    senders = senders_from_settings(settings)
    senders["telegram"].send(TG_PRIVATE, "configured", idempotency_key=KEY)

    assert set(senders) == {"telegram", "console"} and telegram.sent[0]["text"] == "configured"
    both = Settings(_env_file=None, telegram_token=SecretStr("1:x"), discord_token=SecretStr(discord.token),
                    discord_api_base_url=discord.base_url)
    assert set(senders_from_settings(both)) == {"telegram", "discord", "console"}


def test_console_reminders_are_written_out() -> None:
    lines: list[str] = []

    ConsoleSender(lines.append).send(ReminderTarget("console", "console", "me", "private"), "⏰ Reminder: tea",
                                     idempotency_key=KEY)

    assert lines == ["[console console] ⏰ Reminder: tea"]
