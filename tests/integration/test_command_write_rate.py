"""Commands that write what is remembered are limited per user as chat is, on Redis and on PostgreSQL, shared
by replicas: past the rate the command is refused in the user's language with how long to wait; reading is
not limited, and another user is not held up."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from sqlalchemy import pool

from shared.commands.service import Caller, MemoryCommands
from shared.commands.texts import error_text
from shared.db.engine import make_engine
from shared.errors import InvalidCommand
from shared.limits import SharedLimit, shared_storage

REDIS_URL = "redis://127.0.0.1:6379/6"  # a Redis database no other test uses
DANA = Caller("telegram", "7701", display_name="Dana", locale="en")
WEI = Caller("telegram", "7702", display_name="伟", locale="zh-CN")


@pytest.fixture(params=["redis", "postgresql"])
def two_replicas(request, uow_factory, migrated_system_db) -> Iterator[tuple[MemoryCommands, MemoryCommands]]:
    """Two command services counting in one shared store, as two bot processes would."""
    engines = [make_engine(migrated_system_db, poolclass=pool.NullPool) for _ in range(2)]
    if request.param == "redis":
        redis.Redis.from_url(REDIS_URL).flushdb()
    url = REDIS_URL if request.param == "redis" else None
    yield tuple(MemoryCommands(uow_factory, write_limit=SharedLimit(shared_storage(url, engine), "command-writes",
                                                                    "4/minute")) for engine in engines)
    for engine in engines:
        engine.dispose()


def test_a_burst_of_remember_is_refused_past_the_rate_across_replicas(two_replicas):
    first, second = two_replicas
    for number in range(4):
        (first if number % 2 else second).remember(DANA, f"My locker number is {number + 10}")
    with pytest.raises(InvalidCommand) as refused:
        first.remember(DANA, "My bike is green")
    assert refused.value.key == "too_many_writes"
    assert 1 <= refused.value.params["seconds"] <= 60
    assert "try again in" in error_text(refused.value, "en")
    assert first.list_memories(DANA).total == 4  # reading is not limited, and nothing was half-written
    second.remember(WEI, "我的自行车是绿色的")  # another user is not held up


def test_reminders_and_imports_count_against_the_same_rate(two_replicas):
    first, second = two_replicas
    first.remember(WEI, "我喜欢绿茶")
    exported = first.export_data(WEI).data  # reading is not counted
    for number in range(2):
        second.add_reminder(WEI, f"明天早上{number + 7}点提醒我喝水")
    first.import_data(WEI, exported)
    with pytest.raises(InvalidCommand) as refused:
        second.add_reminder(WEI, "明天中午提醒我吃药")
    assert refused.value.key == "too_many_writes"
    assert "秒后再试" in error_text(refused.value, "zh")
    with pytest.raises(InvalidCommand):
        first.import_data(WEI, exported)
