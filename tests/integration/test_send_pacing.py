"""Reminder fan-out at Telegram's pace, shared by two workers (two senders over two storage clients of one
store): one message a second in a chat, 30 a second overall, every message sent, none refused. The bots'
own replies take their slots from the same budget: a Telegram replica through python-telegram-bot's rate
limiter, a Discord shard through discord.py's HTTP session."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest
import redis
from sqlalchemy import Engine, pool

from bench.fakes.telegram_api import FakeTelegram
from shared.db.engine import make_engine
from shared.delivery.pacing import Pace, PacedSender
from shared.delivery.platform_api import TelegramSender
from shared.limits import shared_storage
from shared.reminders.service import ReminderTarget

REDIS_URL = "redis://127.0.0.1:6379/1"  # a Redis database no other test uses


@pytest.fixture
def telegram() -> Iterator[FakeTelegram]:
    with FakeTelegram() as server:
        yield server


@pytest.fixture(params=["redis", "postgresql"])
def two_workers(request: pytest.FixtureRequest, telegram: FakeTelegram, migrated_system_db: str) -> Iterator[list]:
    engines: list[Engine] = [make_engine(migrated_system_db, poolclass=pool.NullPool) for _ in range(2)]
    if request.param == "redis":
        redis.Redis.from_url(REDIS_URL).flushdb()
    url = REDIS_URL if request.param == "redis" else None
    senders = [PacedSender(TelegramSender(telegram.base_url, telegram.token), "telegram", shared_storage(url, engine))
               for engine in engines]
    yield senders
    for sender, engine in zip(senders, engines, strict=True):
        sender.close()
        engine.dispose()


def target(chat: int) -> ReminderTarget:
    return ReminderTarget(platform="telegram", platform_chat_id=str(chat), platform_user_id=str(chat),
                          chat_kind="private")


def fan_out(senders: list[PacedSender], chats: list[int]) -> None:
    """Each worker sends half of the reminders, at the same time."""
    def work(index: int) -> None:
        for number, chat in enumerate(chats[index::2]):
            senders[index].send(target(chat), f"reminder {index}-{number}", idempotency_key=f"{index}-{number}")

    threads = [threading.Thread(target=work, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)


def spread_over_four_seconds(arrivals: list[float]) -> bool:
    """Four messages to one chat at one a second take four windows: their slots are at least 3 s apart from
    first to last. They are counted where the fake receives them, and on a loaded machine one can arrive
    up to about a second after its slot, so this allows a second of that (unpaced, they arrive within
    a few tenths of a second)."""
    return arrivals[-1] - arrivals[0] >= 2.0


def test_one_chat_gets_at_most_one_message_a_second_from_all_workers(two_workers, telegram) -> None:
    fan_out(two_workers, [4242] * 4)

    times = sorted(call.at for call in telegram.calls_to("sendMessage"))
    assert len(times) == 4 and len(telegram.messages_to(4242)) == 4
    assert spread_over_four_seconds(times), times


def test_a_burst_to_many_chats_keeps_to_the_workers_third_of_thirty_a_second(two_workers, telegram) -> None:
    fan_out(two_workers, list(range(1000, 1040)))

    times = sorted(call.at for call in telegram.calls_to("sendMessage"))
    assert len(times) == 40
    assert times[10] - times[0] >= 0.5, times  # the 11th waited for the next second's budget (arrivals lag)


def test_a_burst_of_reminders_leaves_the_bots_replies_room_in_the_overall_budget(telegram, redis_storage) -> None:
    from telegram.ext import ExtBot

    from bot.telegram_bot import FloodControl

    workers = threading.Thread(target=fan_out, args=(
        [PacedSender(TelegramSender(telegram.base_url, telegram.token), "telegram", redis_storage)] * 2,
        list(range(1000, 1060))))
    workers.start()

    async def replies() -> list[float]:
        took = []
        bot = ExtBot(telegram.token, base_url=telegram.base_url,
                     rate_limiter=FloodControl(pace=Pace("telegram", redis_storage)))
        async with bot:
            while len(telegram.calls_to("sendMessage")) < 10:  # the reminders have the window
                await asyncio.sleep(0.01)
            for number in range(12):
                began = time.monotonic()
                await bot.send_message(5000 + number, f"reply {number}")
                took.append(time.monotonic() - began)
        return took

    took = asyncio.run(replies())
    workers.join(timeout=60)
    assert len(telegram.calls_to("sendMessage")) == 72
    assert max(took) < 0.5, took  # none waited for a window: the reminders take at most a third of one


@pytest.fixture
def redis_storage():
    redis.Redis.from_url(REDIS_URL).flushdb()
    return shared_storage(REDIS_URL, None)


def test_a_bot_replicas_replies_and_a_workers_reminders_share_one_chats_pace(telegram, redis_storage) -> None:
    from telegram.ext import ExtBot

    from bot.telegram_bot import FloodControl

    async def replies() -> None:
        bot = ExtBot(telegram.token, base_url=telegram.base_url,
                     rate_limiter=FloodControl(pace=Pace("telegram", redis_storage)))
        async with bot:
            for number in range(2):
                await bot.send_message(4242, f"reply {number}")

    replica = threading.Thread(target=asyncio.run, args=(replies(),))
    replica.start()
    fan_out([PacedSender(TelegramSender(telegram.base_url, telegram.token), "telegram", redis_storage)] * 2,
            [4242, 4242])
    replica.join(timeout=60)

    times = sorted(call.at for call in telegram.calls_to("sendMessage"))
    assert len(times) == 4 and {m["text"] for m in telegram.messages_to(4242)} >= {"reply 0", "reply 1"}
    assert spread_over_four_seconds(times), times


def test_a_discord_shards_messages_wait_for_a_channel_another_process_filled(redis_storage) -> None:
    import discord

    from bench.fakes.discord_api import FakeDiscord
    from bot.discord_bot import counting_api_errors, use_api

    other_process = Pace("discord", redis_storage)

    async def post(fake: FakeDiscord) -> float:
        client = discord.Client(intents=discord.Intents.none(),
                                http_trace=counting_api_errors(Pace("discord", redis_storage)))
        async with client:
            await client.login(fake.token)
            for _ in range(5):  # 5 messages per 5 seconds in a channel: the other process spends them now
                assert other_process.per_chat.hit("777") is None  # (the window opens at its first message)
            began = time.monotonic()
            await client.get_partial_messageable(777).send("hello")
            await client.get_partial_messageable(778).send("hello")  # another channel: only the overall budget
            return began

    base = discord.http.Route.BASE
    with FakeDiscord() as fake:
        use_api(fake.base_url)
        try:
            began = asyncio.run(post(fake))
        finally:
            discord.http.Route.BASE = base
        [first], [second] = fake.messages_in("777"), fake.messages_in("778")
        posted = {request.params["channel_id"]: request.at for request in fake.requests
                  if request.path.endswith("/messages")}
    assert first["content"] == second["content"] == "hello"
    assert posted["777"] - began >= 0.9  # it waited for the channel's next window


def test_a_message_is_sent_without_waiting_when_the_budget_cannot_be_counted() -> None:
    from limits.storage import MemoryStorage

    class Unreachable(MemoryStorage):
        def incr(self, *_args, **_kwargs) -> int:
            raise ConnectionError("the counts are away")

    pace = Pace("telegram", Unreachable())
    assert pace.take("4242", sleep=lambda _seconds: pytest.fail("it waited")) == 0.0
    assert asyncio.run(pace.wait("4242")) == 0.0
