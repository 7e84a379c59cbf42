"""/memories, /remember, /forget and /pause (shared/commands/service.py and memories.py) on the fake unit of
work: pages, one user's memories out of another's reach, and forgetting only after a single-use confirmation."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared.commands import texts
from shared.commands.service import Caller, MemoryCommands
from shared.db.memory_models import Memory, MemoryEvent, OutboxJob, Todo
from shared.errors import ConfirmationInvalid, InvalidCommand, NotFound
from tests.fakes.uow import Clock, FakeDatabase
from tests.unit.conftest import START

ALICE = Caller("telegram", "1001", display_name="Alice", locale="zh-CN")
BOB = Caller("telegram", "2002", display_name="Bob", locale="en")


@pytest.fixture
def commands(database: FakeDatabase, clock: Clock) -> MemoryCommands:
    return MemoryCommands(database.unit_of_work, default_timezone="Asia/Shanghai", clock=clock, embeddings_wanted=True)


def memories_of(commands: MemoryCommands, caller: Caller) -> list[str]:
    return [item.content for item in commands.list_memories(caller, page_size=50).items]


def rows_of(database: FakeDatabase, user_id: int) -> dict[str, list[dict]]:
    """Every committed row of one user, table by table."""
    mine = {table: [row for row in rows if row.get("user_id", row.get("id")) == user_id]
            for table, rows in database.dump().items()}
    return {table: rows for table, rows in mine.items() if rows}


def test_memories_are_listed_newest_first_in_pages_with_a_type_filter_and_a_search(commands):
    for number in range(23):
        commands.remember(ALICE, f"fact number {number}")
    commands.remember(ALICE, "preference: Oolong tea")
    first = commands.list_memories(ALICE, page_size=10)
    assert (first.page, first.pages, first.total) == (1, 3, 24)
    assert (first.items[0].content, first.items[0].type, first.items[0].source) == ("Oolong tea", "preference",
                                                                                   "user_stated")
    last = commands.list_memories(ALICE, page=3, page_size=10)
    assert [item.content for item in last.items][-1] == "fact number 0"
    assert len(last.items) == 4
    assert commands.list_memories(ALICE, page=99, page_size=10).page == 3
    assert [item.content for item in commands.list_memories(ALICE, type_="偏好").items] == ["Oolong tea"]
    assert commands.list_memories(ALICE, search="NUMBER 2").total == 4  # 2, 20, 21, 22
    assert commands.list_memories(ALICE, search="100%").total == 0  # a wildcard is a plain character


def test_another_users_memories_are_never_listed_explained_or_offered_for_forgetting(commands):
    secret = commands.remember(ALICE, "我的银行密码提示是小猫")
    commands.remember(BOB, "likes jazz")
    assert memories_of(commands, BOB) == ["likes jazz"]
    with pytest.raises(NotFound):
        commands.why(BOB, secret.id)
    with pytest.raises(NotFound):
        commands.request_forget(BOB, f"#{secret.id}")
    with pytest.raises(InvalidCommand, match="forget_no_match"):
        commands.request_forget(BOB, "小猫")


def test_remember_stores_a_confirmed_stated_memory_with_its_audit_and_owes_one_embedding(commands, database):
    item = commands.remember(ALICE, "规则：不要在晚上十点后提醒我")
    assert (item.type, item.content, item.source, item.confidence) == ("rule", "不要在晚上十点后提醒我", "user_stated",
                                                                       1.0)
    assert commands.remember(ALICE, "  规则：不要在晚上十点后提醒我 ").id == item.id
    [memory] = database.rows(Memory)
    assert (memory.tier, memory.verified, memory.importance, memory.deleted_at) == ("long", True, 1.0, None)
    [event] = database.rows(MemoryEvent)
    assert (event.memory_id, event.action, event.actor, event.after["content"]) == (item.id, "add", "user",
                                                                                    "不要在晚上十点后提醒我")
    [job] = database.rows(OutboxJob)
    assert (job.task, job.payload, job.status, job.user_id) == ("embed_memory", {"memory_id": item.id,
                                                                 "user_id": memory.user_id}, "pending", memory.user_id)


def test_forget_one_asks_first_then_deletes_it_and_leaves_only_a_tombstone_in_the_audit(commands, database):
    commands.remember(ALICE, "lives in Shanghai")
    gone = commands.remember(ALICE, "喜欢乌龙茶")
    confirmation = commands.request_forget(ALICE, f"#{gone.id}")
    assert (confirmation.count, confirmation.preview, confirmation.everything) == (1, ("喜欢乌龙茶",), False)
    assert confirmation.expires_at == START + timedelta(minutes=5)
    assert len(memories_of(commands, ALICE)) == 2  # nothing happens before the confirmation
    assert commands.confirm(ALICE, confirmation.token) == 1
    assert memories_of(commands, ALICE) == ["lives in Shanghai"]
    audit = [(e.action, e.before, e.after, e.reason) for e in database.rows(MemoryEvent) if e.memory_id == gone.id]
    assert audit == [("add", None, None, "forgotten by the user"), ("forget", None, None, "forgotten by the user")]
    assert not any("乌龙" in repr((e.before, e.after, e.reason)) for e in database.rows(MemoryEvent))


def test_forgetting_a_value_also_forgets_the_older_values_it_replaced(commands, database):
    commands.is_paused(ALICE)  # creates Alice
    with database.unit_of_work() as uow:
        me = uow.users.identity("telegram", "1001")
        older, old, current = (uow.memories.add(Memory(user_id=me.user_id, type="fact", content=f"我住在{city}",
                                                       source="stated", created_at=START, updated_at=START))
                               for city in ("广州", "北京", "上海"))
        older.superseded_by, old.superseded_by = old.id, current.id
        uow.commit()
    assert memories_of(commands, ALICE) == ["我住在上海"]
    assert commands.confirm(ALICE, commands.request_forget(ALICE, str(current.id)).token) == 1
    assert database.rows(Memory) == []


def test_forget_by_search_deletes_only_the_callers_matching_memories(commands):
    for words in ("喜欢乌龙茶", "喜欢绿茶", "住在上海"):
        commands.remember(ALICE, words)
    commands.remember(BOB, "喜欢红茶")
    confirmation = commands.request_forget(ALICE, "茶")
    assert confirmation.count == 2
    assert set(confirmation.preview) == {"喜欢乌龙茶", "喜欢绿茶"}
    assert commands.confirm(ALICE, confirmation.token) == 2
    assert memories_of(commands, ALICE) == ["住在上海"]
    assert memories_of(commands, BOB) == ["喜欢红茶"]


def test_forget_all_deletes_memories_and_owed_jobs_but_keeps_reminders_and_other_users(commands, database):
    for caller in (ALICE, BOB):
        commands.remember(caller, "喜欢乌龙茶")
        commands.remember(caller, "住在上海")
        commands.add_reminder(caller, "明天早上9点 开会")
    bob = database.rows(Todo)[-1].user_id
    bobs_rows = rows_of(database, bob)
    confirmation = commands.request_forget(ALICE, "all")
    assert confirmation.everything
    assert confirmation.count == 2
    assert commands.confirm(ALICE, confirmation.token) == 2
    assert memories_of(commands, ALICE) == []
    assert len(commands.list_reminders(ALICE)) == 1
    assert [job.user_id for job in database.rows(OutboxJob)] == [bob, bob]
    alice_audit = [(e.action, e.before, e.after, e.reason) for e in database.rows(MemoryEvent) if e.user_id != bob]
    assert {(a, b, c) for a, b, c, _ in alice_audit} == {("add", None, None), ("forget", None, None)}
    assert rows_of(database, bob) == bobs_rows


def test_a_confirmation_is_single_use_the_owners_only_and_expires(commands, clock):
    for word in ("one", "two", "three"):
        commands.remember(ALICE, word)
    used = commands.request_forget(ALICE, "one")
    for not_yours in (commands.confirm, commands.cancel):
        with pytest.raises(ConfirmationInvalid):
            not_yours(BOB, used.token)
    commands.confirm(ALICE, used.token)
    with pytest.raises(ConfirmationInvalid):
        commands.confirm(ALICE, used.token)
    cancelled = commands.request_forget(ALICE, "two")
    commands.cancel(ALICE, cancelled.token)
    with pytest.raises(ConfirmationInvalid):
        commands.confirm(ALICE, cancelled.token)
    late = commands.request_forget(ALICE, "three")
    clock.now += timedelta(minutes=5, seconds=1)
    with pytest.raises(ConfirmationInvalid):
        commands.confirm(ALICE, late.token)
    assert sorted(memories_of(commands, ALICE)) == ["three", "two"]


def test_pausing_twice_keeps_the_first_pause_time_and_resume_clears_it(commands, database, clock):
    commands.pause(ALICE)
    clock.now += timedelta(hours=1)
    commands.pause(ALICE)
    assert commands.is_paused(ALICE)
    assert not commands.is_paused(BOB)
    with database.unit_of_work() as uow:
        assert uow.users.get(uow.users.identity("telegram", "1001").user_id).paused_at == START
    commands.resume(ALICE)
    assert not commands.is_paused(ALICE)


@pytest.mark.parametrize("target", ["all reminders", "everything and reminders", "全部 提醒", "全部和提醒"])
def test_forget_all_reminders_says_how_many_reminders_go_and_deletes_them_with_everything_else(
        commands, database, target):
    for caller in (ALICE, BOB):
        commands.remember(caller, "喜欢乌龙茶")
        commands.add_reminder(caller, "明天早上9点 开会")
        commands.add_reminder(caller, "后天下午3点 看牙")
    bobs_todos = [(t.user_id, t.content) for t in database.rows(Todo)][2:]
    confirmation = commands.request_forget(ALICE, target)
    assert confirmation.everything
    assert (confirmation.count, confirmation.reminders) == (1, 2)
    assert commands.confirm(ALICE, confirmation.token) == 1
    assert memories_of(commands, ALICE) == []
    assert commands.list_reminders(ALICE) == ()
    assert [(t.user_id, t.content) for t in database.rows(Todo)] == bobs_todos


def test_forget_all_alone_keeps_the_reminders_and_says_how_to_clear_them_too(commands):
    commands.add_reminder(BOB, "tomorrow 9am call mom")
    confirmation = commands.request_forget(BOB, "all")
    assert confirmation.reminders is None
    assert "/forget all reminders" in texts.confirmation_text(confirmation, "en", START)
    commands.confirm(BOB, confirmation.token)
    assert len(commands.list_reminders(BOB)) == 1
