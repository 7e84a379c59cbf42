"""Reminder fan-out at Telegram's pace, shared by two workers (two senders over two storage clients of one
store): one message a second in a chat, 30 a second overall, every message sent, none refused."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator

import pytest
import redis
from sqlalchemy import Engine, pool

from bench.fakes.telegram_api import FakeTelegram
from shared.db.engine import make_engine
from shared.delivery.pacing import PacedSender
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


def test_one_chat_gets_at_most_one_message_a_second_from_all_workers(two_workers, telegram) -> None:
    fan_out(two_workers, [4242] * 4)

    times = sorted(call.at for call in telegram.calls_to("sendMessage"))
    assert len(times) == 4 and len(telegram.messages_to(4242)) == 4
    assert all(later - earlier >= 0.9 for earlier, later in itertools.pairwise(times)), times


def test_a_burst_to_many_chats_keeps_to_thirty_a_second_overall(two_workers, telegram) -> None:
    fan_out(two_workers, list(range(1000, 1040)))

    times = sorted(call.at for call in telegram.calls_to("sendMessage"))
    assert len(times) == 40
    assert times[30] - times[0] >= 0.9, times  # the 31st waited for the next second's budget
