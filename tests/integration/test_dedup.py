"""Dedup on real PostgreSQL: near-duplicates merged per user and type, with their history kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from bench.fakes.openai_server import FakeOpenAI
from shared.db.memory_models import Memory
from shared.lifecycle import dedup
from shared.lifecycle.dedup import run_dedup
from shared.llm.client import ChatModel
from tests.conftest import audit_of

NOW = datetime(2026, 11, 22, 3, 40, tzinfo=UTC)
DAY = timedelta(days=1)


def remember(uow_factory, content: str, *, user: str = "1001", **fields) -> int:
    fields.setdefault("source", "user_stated")
    fields.setdefault("confidence", 0.9)
    fields.setdefault("created_at", NOW - 10 * DAY)
    with uow_factory() as uow:
        user_id = uow.users.identify("telegram", user).user_id
        memory = uow.memories.add(Memory(user_id=user_id, type=fields.pop("type", "preference"), content=content,
                                         **fields))
        uow.commit()
    return memory.id


def state(uow_factory) -> dict[int, Memory]:
    with uow_factory() as uow:
        return {m.id: m for m in uow.session.scalars(select(Memory))}


def test_near_duplicates_are_merged_into_the_survivor_which_keeps_their_history(uow_factory):
    first = remember(uow_factory, "I like green tea", access_count=2, created_at=NOW - 20 * DAY)
    used = remember(uow_factory, "I really like green tea!", access_count=5, last_accessed=NOW - DAY)
    chinese = remember(uow_factory, "我喜欢喝乌龙茶", access_count=1)
    again = remember(uow_factory, "我很喜欢喝乌龙茶。", importance=1.5, access_count=3)
    report = run_dedup(uow_factory, NOW)
    assert (report.merged, report.clusters) == (2, 2)
    rows = state(uow_factory)
    assert rows[first].superseded_by == used
    assert rows[used].superseded_by is None
    assert rows[chinese].superseded_by == again
    survivor = rows[used]
    assert (survivor.access_count, survivor.importance, survivor.last_accessed) == (7, pytest.approx(1.3), NOW - DAY)
    assert rows[again].importance == pytest.approx(1.8)
    with uow_factory() as uow:
        user_id = survivor.user_id
        dup_events = audit_of(uow, user_id, first)
        survivor_events = audit_of(uow, user_id, used)
    assert [(e.action, e.actor, e.reason) for e in dup_events] == [("supersede", "rule", f"duplicate of {used}")]
    assert dup_events[0].after["superseded_by"] == used
    assert [(e.action, e.before["access_count"], e.after["access_count"]) for e in survivor_events] == [
        ("update", 5, 7)]


def test_memories_of_different_users_are_never_merged(uow_factory):
    remember(uow_factory, "I like green tea", user="1001")
    remember(uow_factory, "I like green tea", user="2002")
    assert run_dedup(uow_factory, NOW).merged == 0


def test_memories_of_different_types_are_never_merged(uow_factory):
    remember(uow_factory, "Goes hiking every weekend", type="pattern")
    remember(uow_factory, "Goes hiking every weekend", type="preference")
    assert run_dedup(uow_factory, NOW).merged == 0


def test_unrelated_memories_negations_and_other_numbers_are_left_alone(uow_factory):
    for content in ("I like green tea", "I don't like green tea", "My sister Anna lives in Berlin",
                    "明天下午三点开会", "明天下午五点开会", "User likes oolong tea", "User dislikes oolong tea"):
        remember(uow_factory, content)
    before = {m.id: (m.superseded_by, m.importance) for m in state(uow_factory).values()}
    assert run_dedup(uow_factory, NOW).merged == 0
    assert {m.id: (m.superseded_by, m.importance) for m in state(uow_factory).values()} == before


def test_a_second_run_changes_nothing(uow_factory):
    for content in ("I like green tea", "I like green tea.", "i like GREEN tea"):
        remember(uow_factory, content)
    assert run_dedup(uow_factory, NOW).merged == 2
    with uow_factory() as uow:
        events_after_first = len(uow.session.scalars(select(Memory.id)).all()), uow.session.execute(
            select(Memory.importance, Memory.access_count).where(Memory.superseded_by.is_(None))).all()
    second = run_dedup(uow_factory, NOW)
    assert (second.merged, second.clusters) == (0, 0)
    with uow_factory() as uow:
        assert (len(uow.session.scalars(select(Memory.id)).all()), uow.session.execute(
            select(Memory.importance, Memory.access_count).where(Memory.superseded_by.is_(None))).all()
                ) == events_after_first


def test_a_duplicate_of_a_core_memory_joins_the_core_memory(uow_factory):
    core = remember(uow_factory, "My name is Alice", tier="core", confidence=0.6)
    copy = remember(uow_factory, "My name is Alice!", confidence=0.95)
    run_dedup(uow_factory, NOW)
    rows = state(uow_factory)
    assert rows[copy].superseded_by == core
    assert rows[core].tier == "core"


def test_with_a_model_a_looser_cluster_is_confirmed_in_one_call_and_clear_ones_need_none(uow_factory):
    clear = [remember(uow_factory, "I like green tea"), remember(uow_factory, "I like green tea!")]
    loose = [remember(uow_factory, "User likes oolong tea"),
             remember(uow_factory, "User likes oolong tea in winter evenings")]
    with FakeOpenAI(models=("fake-chat",)) as llm:
        llm.queue_reply({"groups": [loose], "reason": "same preference"})
        model = ChatModel(base_url=llm.base_url, api_key="test", model="fake-chat", timeout_seconds=10)
        report = run_dedup(uow_factory, NOW, chat_model=model)
        prompt = llm.chat_requests()[0]["messages"][1]["content"]
    assert (report.llm_calls, report.merged) == (1, 2)
    assert "oolong" in prompt
    assert "green" not in prompt
    rows = state(uow_factory)
    assert sum(rows[i].superseded_by is not None for i in clear) == 1
    merged = next(i for i in loose if rows[i].superseded_by is not None)
    with uow_factory() as uow:
        assert [(e.action, e.actor) for e in audit_of(uow, rows[merged].user_id, merged)] == [
            ("supersede", "llm")]


def test_an_unsure_cluster_the_model_rejects_is_left_alone(uow_factory):
    loose = [remember(uow_factory, "User likes oolong tea"),
             remember(uow_factory, "User likes oolong tea in winter evenings")]
    with FakeOpenAI(models=("fake-chat",)) as llm:
        llm.queue_reply({"groups": [], "reason": "winter is a detail worth keeping"})
        model = ChatModel(base_url=llm.base_url, api_key="test", model="fake-chat", timeout_seconds=10)
        assert run_dedup(uow_factory, NOW, chat_model=model).merged == 0
    assert all(state(uow_factory)[i].superseded_by is None for i in loose)


def test_many_users_are_read_in_bounded_batches_and_all_deduplicated(uow_factory, monkeypatch):
    monkeypatch.setattr(dedup, "BATCH_ROWS", 5)
    monkeypatch.setattr(dedup, "USER_PAGE", 2)
    for n in range(5):
        for content in ("I like green tea", "I like green tea!", f"I work at company {n}"):
            remember(uow_factory, content, user=str(3000 + n))
    report = run_dedup(uow_factory, NOW)
    assert (report.merged, report.memories_scanned) == (5, 15)


def test_a_user_with_more_memories_than_a_batch_is_read_in_windows_that_keep_each_type_whole(uow_factory,
                                                                                         monkeypatch):
    monkeypatch.setattr(dedup, "BATCH_ROWS", 4)
    for type_ in ("event", "fact", "preference"):
        for content in ("Went hiking with Anna", "Went hiking with Anna!", "Bought a new bike"):
            remember(uow_factory, content, type=type_)
    report = run_dedup(uow_factory, NOW)
    assert (report.merged, report.memories_scanned) == (3, 9)


def test_when_the_model_is_unreachable_only_clear_duplicates_are_merged(uow_factory):
    remember(uow_factory, "I like green tea")
    remember(uow_factory, "I like green tea!")
    loose = [remember(uow_factory, "User likes oolong tea"),
             remember(uow_factory, "User likes oolong tea in winter evenings")]
    with FakeOpenAI(models=("fake-chat",)) as llm:
        llm.queue_error(401)
        model = ChatModel(base_url=llm.base_url, api_key="test", model="fake-chat", timeout_seconds=10)
        report = run_dedup(uow_factory, NOW, chat_model=model)
    assert (report.llm_unavailable, report.merged) == (True, 1)
    assert all(state(uow_factory)[i].superseded_by is None for i in loose)


def test_a_cluster_the_model_declined_is_not_asked_again_until_one_of_its_memories_changes(uow_factory):
    loose = [remember(uow_factory, "User likes oolong tea", updated_at=NOW - DAY),
             remember(uow_factory, "User likes oolong tea in winter evenings", updated_at=NOW - DAY)]
    with FakeOpenAI(models=("fake-chat",)) as llm:
        model = ChatModel(base_url=llm.base_url, api_key="test", model="fake-chat", timeout_seconds=10)
        llm.queue_reply({"groups": [], "reason": "winter is a detail worth keeping"})
        assert run_dedup(uow_factory, NOW, chat_model=model).llm_calls == 1
        again = run_dedup(uow_factory, NOW + DAY, chat_model=model)
        assert (again.llm_calls, again.already_judged, again.merged) == (0, 1, 0)

        with uow_factory() as uow:  # the user edits one of them: the cluster is news again
            memory = uow.session.get(Memory, loose[1])
            memory.content, memory.updated_at = "User likes oolong tea on winter evenings", NOW + 2 * DAY
            uow.commit()
        llm.queue_reply({"groups": [loose], "reason": "same preference"})
        changed = run_dedup(uow_factory, NOW + 3 * DAY, chat_model=model)
    assert (changed.llm_calls, changed.merged) == (1, 1)
    assert len(llm.chat_requests()) == 2
