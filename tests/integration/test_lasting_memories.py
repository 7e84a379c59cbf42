"""A year of lifecycle on real PostgreSQL, in seconds: the daily maintenance run as of each simulated day
(shared/lifecycle/maintenance.py). What the user stated or asked to remember is still recalled a year later;
a passing like goes to the recycle bin after 90 unused days, can be restored, and is purged 30 days later."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from shared.commands.service import Caller, MemoryCommands
from shared.db.memory_models import Memory
from shared.errors import NotFound
from shared.lifecycle.maintenance import last_report, run_maintenance
from shared.memory.writes import StatedMemory, store_stated_memories
from shared.recall.retrieval import recall_for_turn
from tests.builders import Clock
from tests.conftest import audit_of

START = datetime(2026, 1, 3, 2, 0, tzinfo=UTC)
DAY = timedelta(days=1)
ALICE = Caller("telegram", "1001", display_name="Alice", locale="en")


@pytest.fixture
def clock() -> Clock:
    return Clock(START)


@pytest.fixture
def commands(uow_factory, clock) -> MemoryCommands:
    return MemoryCommands(uow_factory, default_timezone="UTC", clock=clock)


def state(uow_factory, *entries: StatedMemory) -> dict[str, int]:
    with uow_factory() as uow:
        user_id = uow.users.identify(ALICE.platform, ALICE.platform_user_id).user_id
        writes = store_stated_memories(uow, user_id, entries, now=START, source_turn_id=None, session_id=None,
                                       bot_lines=())
        uow.commit()
    return {write.memory.predicate: write.memory.id for write in writes}


def live_through(uow_factory, clock: Clock, days) -> None:
    """The beat's daily run at 03:00 of each of ``days`` (counted from START), as of that moment. What a rule
    forgets depends on how long a memory went unused, not on how many runs saw it, so a test may skip days."""
    for day in days:
        clock.now = START.replace(hour=3, minute=0) + day * DAY
        run_maintenance(uow_factory, clock.now, chat_model=None)


def weekly(first: int, last: int) -> range:
    return range(first, last + 1, 7)


def load(uow_factory, memory_id: int) -> Memory | None:
    with uow_factory() as uow:
        return uow.session.get(Memory, memory_id)


def recalled(uow_factory, question: str, now: datetime) -> list[str]:
    with uow_factory() as uow:
        user_id = uow.users.identify(ALICE.platform, ALICE.platform_user_id).user_id
        return [item.memory.content for item in recall_for_turn(uow, user_id, question, now=now, limit=5).memories]


def test_a_stated_fact_and_a_remembered_one_are_still_recalled_after_365_days_of_disuse(
        uow_factory, commands, clock):
    ids = state(uow_factory, StatedMemory("fact", "user", "commute", "I cycle to work along the river every day"),
                StatedMemory("person", "user", "sister_name", "My sister is called Anna"))
    commands.remember(ALICE, "My locker code at the gym is 4312")
    live_through(uow_factory, clock, [*weekly(1, 358), 365])  # weekly: each run fades them 5 %, to under 0.1
    commute, sister = load(uow_factory, ids["commute"]), load(uow_factory, ids["sister_name"])
    assert commute.importance < 0.3  # faded far under the old deletion line, kept
    assert commute.deleted_at is None
    assert sister.importance == 3.0  # family never fades
    assert "I cycle to work along the river every day" in recalled(uow_factory, "how do I get to work?", clock.now)
    assert "My sister is called Anna" in recalled(uow_factory, "what's my sister called?", clock.now)
    assert "My locker code at the gym is 4312" in recalled(uow_factory, "what is my locker code?", clock.now)
    assert commands.forgotten_memories(ALICE).total == 0


def test_a_passing_like_goes_to_the_bin_after_90_idle_days_and_is_purged_30_days_later(
        uow_factory, commands, clock):
    ids = state(uow_factory, StatedMemory("preference", "user", "likes_band", "I like the band Low"))
    live_through(uow_factory, clock, [*weekly(1, 85), 89])
    assert load(uow_factory, ids["likes_band"]).deleted_at is None
    live_through(uow_factory, clock, [90])
    assert load(uow_factory, ids["likes_band"]).deleted_at == clock.now
    binned = commands.forgotten_memories(ALICE)
    assert [item.content for item in binned.items] == ["I like the band Low"]
    assert "I like the band Low" not in recalled(uow_factory, "which band do I like?", clock.now)
    live_through(uow_factory, clock, [91, 119])
    assert load(uow_factory, ids["likes_band"]) is not None
    live_through(uow_factory, clock, [120])
    assert load(uow_factory, ids["likes_band"]) is None
    _, report = last_report(uow_factory)
    assert report["changes"]["purged"] == 1


def test_restore_brings_a_binned_memory_back_with_its_history(uow_factory, commands, clock):
    first = state(uow_factory, StatedMemory("preference", "user", "likes_tea", "I like green tea"))["likes_tea"]
    second = state(uow_factory, StatedMemory("preference", "user", "likes_tea", "I like oolong tea"))["likes_tea"]
    live_through(uow_factory, clock, [*weekly(1, 85), 95])
    assert load(uow_factory, second).deleted_at is not None
    restored = commands.restore(ALICE, second)
    assert restored.content == "I like oolong tea"
    assert load(uow_factory, second).deleted_at is None
    assert load(uow_factory, first).superseded_by == second
    assert "I like oolong tea" in recalled(uow_factory, "what tea do I like?", clock.now)
    with uow_factory() as uow:
        actions = [(e.action, e.actor) for e in audit_of(uow, load(uow_factory, second).user_id, second)]
    assert actions[0] == ("add", "llm")
    assert actions[-2:] == [("bin", "rule"), ("restore", "user")]
    with pytest.raises(NotFound):
        commands.restore(ALICE, second)  # no longer in the bin
    live_through(uow_factory, clock, [120, 150])  # restored: its idle clock starts again
    assert load(uow_factory, second).deleted_at is None


def test_the_bin_is_in_the_export_until_purged_and_each_run_is_kept_for_the_doctor(uow_factory, commands, clock):
    ids = state(uow_factory, StatedMemory("preference", "user", "likes_song", "I liked that song on the radio"))
    live_through(uow_factory, clock, [30, 60, 90])
    exported = json.loads(commands.export_data(ALICE).data)
    [entry] = [m for m in exported["memories"] if m["content"] == "I liked that song on the radio"]
    assert entry["deleted_at"] is not None
    _, report = last_report(uow_factory)
    assert report["as_of"] == clock.now.isoformat()
    assert report["changes"]["binned"] == 1
    assert load(uow_factory, ids["likes_song"]).base_importance == 0.6


def test_an_export_keeps_the_importance_each_memory_was_given_and_an_import_brings_it_back(uow_factory, commands):
    state(uow_factory, StatedMemory("preference", "user", "likes_band", "I like the band Low"),
          StatedMemory("fact", "user", "job", "I work as a nurse"))
    exported = commands.export_data(ALICE).data
    given = {m["content"]: m["base_importance"] for m in json.loads(exported)["memories"]}
    assert given == {"I like the band Low": 0.6, "I work as a nurse": 2.0}
    bob = Caller("telegram", "2002", display_name="Bob", locale="en")
    commands.import_data(bob, exported)
    with uow_factory() as uow:
        bob_id = uow.users.identify(bob.platform, bob.platform_user_id).user_id
        rows, _ = uow.memories.page(bob_id, limit=10)
    assert {m.content: m.base_importance for m in rows} == given
