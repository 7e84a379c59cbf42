"""200 due reminders, two real workers, one killed half-way: every reminder reaches Discord exactly once.

Beat's scan task (every second here) claims due reminders (leased, SKIP LOCKED) and queues one delivery
task per claim; the workers send through the Discord REST API (a fake on loopback) with a nonce, and a
429 with retry_after is honoured. The killed worker's claims expire and are claimed again by later scans.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
import redis
from sqlalchemy import func, select

from bench.fakes.discord_api import FakeDiscord
from shared.db.memory_models import Todo
from tests.e2e.test_beat import beat, log_of, stop_beat, wait_until_beating
from tests.e2e.test_worker import Worker
from tests.waiting import wait_for

REDIS_URL = "redis://127.0.0.1:6379/13"
REMINDERS = 200
GROUP_CHANNELS = 20
"""The group reminders are spread over channels: one channel takes 5 messages per 5 seconds (Discord's pace,
kept across workers), and 100 in one channel would spend 100 s on the pace alone."""


def discord_worker(database_url: str, discord: FakeDiscord, data_dir, name: str) -> Worker:
    """A worker that talks to the fake Discord, with a short reminder lease."""
    return Worker(database_url, REDIS_URL, None, data_dir, name,
                  extra_env={"DISCORD_TOKEN": discord.token, "DISCORD_API_BASE_URL": discord.base_url,
                             "REMINDER_LEASE_SECONDS": "5"})


@pytest.fixture
def discord():
    with FakeDiscord() as fake:
        yield fake


@pytest.fixture
def database(migrated_system_db):
    redis.Redis.from_url(REDIS_URL).flushdb()
    return migrated_system_db


def due_reminders(uow_factory, count: int) -> None:
    now = datetime.now(UTC) - timedelta(seconds=1)
    with uow_factory() as uow:
        for index in range(count):
            user = uow.users.identify("discord", str(5_000_000_000 + index), locale="en").user_id
            private = index % 2 == 0
            group = str(777_000_000_000 + index % GROUP_CHANNELS)
            chat = uow.chats.get_or_create("discord", str(5_000_000_000 + index) if private else group,
                                           "private" if private else "group")
            uow.todos.add(Todo(user_id=user, chat_id=chat.id, content=f"reminder {index}", due_at=now,
                               remind_at=now, timezone="UTC"))
        uow.commit()


def sent_count(uow_factory) -> int:
    with uow_factory() as uow:
        return uow.session.scalar(select(func.count()).select_from(Todo).where(Todo.status == "sent"))


def test_two_workers_one_killed_deliver_every_reminder_exactly_once(database, discord, tmp_path):
    from shared.db.engine import make_engine, session_factory
    from shared.repositories.uow import UnitOfWork

    engine = make_engine(database)
    sessions = session_factory(engine)
    uow_factory = lambda: UnitOfWork(sessions)  # noqa: E731
    due_reminders(uow_factory, REMINDERS)
    discord.fail_next(429, retry_after=0.5, path_contains="/messages")
    first = discord_worker(database, discord, tmp_path, "first")
    second = discord_worker(database, discord, tmp_path, "second")
    scheduler = beat(database, tmp_path / "beat", REDIS_URL, {"REMINDER_SCAN_SECONDS": "1"})
    try:
        wait_until_beating(scheduler, tmp_path / "beat")
        wait_for(lambda: len(discord.messages) >= 20, 60, "the first deliveries")
        first.kill()
        wait_for(lambda: sent_count(uow_factory) == REMINDERS, 120,
                 lambda: f"every reminder to be sent ({sent_count(uow_factory)} are):\n{log_of(tmp_path / 'beat')}")
    finally:
        stop_beat(scheduler)
        first.stop()
        second.stop()
        engine.dispose()
    contents = Counter(message["content"].split("Reminder: ", 1)[1].split(" (")[0] for message in discord.messages)
    assert len(contents) == REMINDERS and set(contents.values()) == {1}
    assert sent_count(uow_factory) == REMINDERS
    posts = [request for request in discord.requests if request.path.endswith("/messages")]
    assert len(posts) > REMINDERS  # the 429 was answered, waited out and sent again
