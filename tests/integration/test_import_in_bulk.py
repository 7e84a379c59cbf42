"""Import in bulk on real PostgreSQL: a few statements per section, and still every reference resolved,
search tokens and audit filled, duplicates skipped, the reminder cap kept, and all in one transaction."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from sqlalchemy import select, text

from shared.commands.service import Caller, MemoryCommands
from shared.db.memory_models import Episode, Memory, MemoryEvent, OutboxJob
from shared.db.models import ConversationTurn
from shared.reminders.scheduling import MAX_PENDING_REMINDERS
from shared.reminders.service import claim_due_reminders
from shared.repositories.bulk_rows import insert_values
from shared.repositories.outbox import OutboxRepository
from shared.search.tokenizer import TOKENIZER_VERSION
from tests.integration.test_commands import START, Clock, count, fingerprint, user_of

CAROL = Caller("discord", "314159", display_name="carol", locale="en")
DAVE = Caller("telegram", "271828", display_name="Dave", locale="zh-CN")
MEMORIES, TURNS = 1_200, 300


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def commands(uow_factory, clock) -> MemoryCommands:
    return MemoryCommands(uow_factory, default_timezone="Europe/Lisbon", clock=clock, embeddings_wanted=True)


def at(minutes: int) -> str:
    return (START - timedelta(days=90) + timedelta(minutes=minutes)).isoformat()


def linked_file() -> dict:
    """Two episodes, 300 turns and 1,200 memories that refer to each other by ids far from 1..n: a chain
    of three versions, a memory replaced by the file's last one, every memory pointing at a turn."""
    episodes = [{"id": 70 + n, "summary": f"聊了第{n}次爬山", "started_at": at(n), "ended_at": at(n + 30),
                 "entities": ["黄山", n]} for n in (1, 2)]
    turns = [{"id": 500 + n, "role": ("user", "assistant")[n % 2], "text": f"turn {n}: 今天喝了大红袍",
              "created_at": at(n), "episode": None if n % 50 == 0 else 71 + n % 2} for n in range(TURNS)]
    memories = [{"id": 9000 + n, "type": "fact", "subject": "user", "predicate": f"tea_{n % 13}",
                 "content": f"第{n}次喝了大红袍 with cardamom", "created_at": at(n), "source_turn": 500 + n % TURNS}
                for n in range(MEMORIES)]
    memories[0]["superseded_by"], memories[1]["superseded_by"] = 9001, 9002
    memories[5]["superseded_by"] = 9000 + MEMORIES - 1
    memories[7].update(value=["oolong", {"grams": 3}], deleted_at=at(99))
    memories[8]["value"] = "just a string"
    return {"format": "mnemo-export", "version": 1, "episodes": episodes, "turns": turns, "memories": memories}


def test_a_bulk_import_resolves_every_reference_and_keeps_file_order_tokens_and_audit(commands, uow_factory):
    report = commands.import_data(CAROL, json.dumps(linked_file()).encode())

    assert report.imported == {"episodes": 2, "turns": TURNS, "memories": MEMORIES, "todos": 0, "threads": 0,
                               "profile": 0}
    carol = user_of(uow_factory, CAROL)
    with uow_factory() as uow:
        memories = uow.session.scalars(select(Memory).where(Memory.user_id == carol).order_by(Memory.id)).all()
        by_id = {m.id: m for m in memories}
        turns = {t.id: t for t in uow.session.scalars(select(ConversationTurn)
                                                      .where(ConversationTurn.user_id == carol))}
        episodes = {e.id: e for e in uow.session.scalars(select(Episode).where(Episode.user_id == carol))}
        events = uow.session.scalars(select(MemoryEvent).where(MemoryEvent.user_id == carol)).all()
        found = uow.session.scalar(text("SELECT count(*) FROM memories WHERE user_id = :u AND "
                                        "search_tsv @@ to_tsquery('simple', '大红袍 & cardamom')"), {"u": carol})
    assert [m.content for m in memories] == [f"第{n}次喝了大红袍 with cardamom" for n in range(MEMORIES)]
    first, second, third = memories[:3]
    assert (first.superseded_by, second.superseded_by, third.superseded_by) == (second.id, third.id, None)
    assert by_id[memories[5].superseded_by].content == memories[-1].content
    assert sum(m.superseded_by is not None for m in memories) == 3
    assert all(turns[m.source_turn_id].text == f"turn {n % TURNS}: 今天喝了大红袍" for n, m in enumerate(memories))
    assert {episodes[t.episode_id].summary for t in turns.values() if t.episode_id} == {
        "聊了第1次爬山", "聊了第2次爬山"}
    assert sum(t.episode_id is None for t in turns.values()) == TURNS // 50
    assert (memories[7].value, memories[7].deleted_at is not None, memories[8].value) == (
        ["oolong", {"grams": 3}], True, "just a string")
    assert count(uow_factory, "SELECT count(*) FROM memories WHERE user_id = :u AND value IS NULL",
                 u=carol) == MEMORIES - 2  # no value is SQL NULL, not JSON null
    assert found == MEMORIES
    assert {m.tokenizer_version for m in memories} == {TOKENIZER_VERSION}
    assert all(e.search_tokens and e.tokenizer_version == TOKENIZER_VERSION for e in episodes.values())
    assert sorted(e.memory_id for e in events) == [m.id for m in memories]
    assert {(e.action, e.actor, e.reason, e.before) for e in events} == {("add", "user", "imported", None)}
    after = {e.memory_id: e.after for e in events}
    assert after[first.id]["superseded_by"] == second.id
    assert after[first.id]["content"] == first.content
    assert after[memories[9].id]["importance"] == 1.0
    assert after[memories[9].id]["source"] == "imported"
    assert count(uow_factory, "SELECT count(DISTINCT dedup_key) FROM jobs_outbox WHERE task = 'embed_memory' "
                              "AND user_id = :u", u=carol) == MEMORIES


def test_a_new_entry_that_points_at_a_memory_already_held_links_to_it_and_a_second_import_adds_nothing(
        commands, uow_factory):
    first = {"format": "mnemo-export", "version": 1, "memories": [
        {"id": 3, "type": "fact", "content": "lives in Coimbra", "created_at": at(3)},
        {"id": 4, "type": "preference", "content": "drinks galão", "created_at": at(4)}]}
    commands.import_data(DAVE, json.dumps(first).encode())
    second = {"format": "mnemo-export", "version": 1, "memories": [
        *first["memories"],
        {"id": 40, "type": "fact", "content": "lived in Faro", "created_at": at(1), "superseded_by": 3},
        {"id": 41, "type": "fact", "content": "lived in Braga", "created_at": at(2), "superseded_by": 40}]}
    data = json.dumps(second).encode()

    report = commands.import_data(DAVE, data)

    assert (report.imported["memories"], report.duplicates) == (2, 2)
    with uow_factory() as uow:
        rows = {m.content: m for m in uow.session.scalars(select(Memory))}
    assert rows["lived in Faro"].superseded_by == rows["lives in Coimbra"].id
    assert rows["lived in Braga"].superseded_by == rows["lived in Faro"].id
    assert rows["lives in Coimbra"].superseded_by is None
    before = fingerprint(uow_factory)
    again = commands.import_data(DAVE, data)
    assert set(again.imported.values()) == {0}
    assert again.duplicates == 4
    assert fingerprint(uow_factory) == before


def test_a_bulk_import_keeps_the_reminder_cap_counting_what_the_user_already_has(commands, uow_factory, clock):
    held = [{"content": f"held {n}", "due_at": (START + timedelta(days=2, hours=n)).isoformat(),
             "timezone": "Europe/Lisbon"} for n in range(37)]
    commands.import_data(CAROL, json.dumps({"format": "mnemo-export", "version": 1, "todos": held}).encode())
    long_past = [{"content": f"from 2021 {n}", "due_at": "2021-02-03T04:05:00-03:00", "timezone": "America/Recife"}
                 for n in range(9)]
    just_due = [{"content": "stretch", "due_at": (START - timedelta(minutes=25)).isoformat(), "timezone": "UTC"}]
    ahead = [{"content": f"ahead {n}", "due_at": (START + timedelta(days=5, minutes=n)).isoformat(),
              "timezone": "UTC"} for n in range(75)]
    done = [{"content": f"done {n}", "due_at": "2025-01-01T00:00:00Z", "timezone": "UTC", "status": "done"}
            for n in range(4)]
    room = MAX_PENDING_REMINDERS - len(held)

    report = commands.import_data(CAROL, json.dumps({"format": "mnemo-export", "version": 1,
                                                     "todos": long_past + just_due + ahead + done}).encode())

    assert report.missed == 9
    assert report.imported["todos"] == 9 + room + 4
    assert sum("the most I keep" in reason for reason in report.refused) == len(just_due) + len(ahead) - room
    assert len(commands.list_reminders(CAROL)) == MAX_PENDING_REMINDERS
    [claim] = claim_due_reminders(uow_factory, clock())  # nothing from 2021 is sent now
    assert count(uow_factory, "SELECT count(*) FROM todos WHERE id = :i AND content = 'stretch'", i=claim.todo_id) == 1


def test_an_import_that_fails_at_its_last_step_leaves_nothing_behind(commands, uow_factory, monkeypatch):
    commands.remember(CAROL, "likes rooibos")
    before = fingerprint(uow_factory)

    def broken(*_args, **_kwargs):
        raise RuntimeError("the outbox is gone")

    monkeypatch.setattr(OutboxRepository, "add_each", broken)
    with pytest.raises(RuntimeError):
        commands.import_data(CAROL, json.dumps(linked_file()).encode())
    assert fingerprint(uow_factory) == before


def test_bulk_values_get_ids_in_order_server_defaults_and_sql_null_for_what_they_leave_out(uow_factory):
    with uow_factory() as uow:
        user = uow.accounts.new_user()
        rows = insert_values(uow.session, OutboxJob, [
            {"task": "embed_memory", "payload": {"n": 1}, "user_id": user.id},
            {"task": "summarize", "payload": [1, [2, 3]], "user_id": user.id, "attempts": 4},
            {"task": "dedup", "payload": {"n": 3}, "user_id": None, "dedup_key": "k"}])
        stored = uow.session.execute(text("SELECT id, task, payload, attempts, status, dedup_key IS NULL, "
                                          "user_id IS NULL FROM jobs_outbox ORDER BY id")).all()
    assert [row.id for row in rows] == [row.id for row in stored]
    assert rows[0].id < rows[1].id < rows[2].id
    assert [tuple(row)[1:] for row in stored] == [("embed_memory", {"n": 1}, 0, "pending", True, False),
                                                  ("summarize", [1, [2, 3]], 4, "pending", True, False),
                                                  ("dedup", {"n": 3}, 0, "pending", False, True)]
    assert [row.status for row in rows] == ["pending"] * 3
