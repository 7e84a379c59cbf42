"""The daily decay on real PostgreSQL, with the clock in the test's hands."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from shared.db.memory_models import Episode, Memory
from shared.db.models import ConversationTurn
from shared.lifecycle import decay
from shared.lifecycle.decay import run_decay
from tests.builders import audit_actions, stored_memory
from tests.conftest import audit_of

NOW = datetime(2026, 11, 22, 3, 0, tzinfo=UTC)
DAY = timedelta(days=1)


def person(uow, platform_id: str = "1001") -> int:
    return uow.users.identify("telegram", platform_id).user_id


def remember(uow, user_id: int, content: str, *, age: timedelta = 30 * DAY, idle: timedelta | None = None,
             **fields) -> int:
    created = NOW - age
    fields.setdefault("source", "user_stated")
    memory = uow.memories.add(Memory(user_id=user_id, type=fields.pop("type", "fact"), content=content,
                                     created_at=created, updated_at=created,
                                     last_accessed=None if idle is None else NOW - idle, **fields))
    return memory.id


memory, actions = stored_memory, audit_actions


def test_an_idle_fact_loses_five_percent_once_a_day_and_a_second_run_the_same_day_changes_nothing(uow_factory):
    with uow_factory() as uow:
        alice = person(uow)
        fact = remember(uow, alice, "I live in Berlin", idle=8 * DAY)
        uow.commit()
    assert run_decay(uow_factory, NOW, eviction_threshold=None).memories_decayed == 1
    assert run_decay(uow_factory, NOW + timedelta(hours=20), eviction_threshold=None).memories_decayed == 0
    assert memory(uow_factory, fact).importance == pytest.approx(0.95)
    run_decay(uow_factory, NOW + DAY, eviction_threshold=None)
    assert memory(uow_factory, fact).importance == pytest.approx(0.95 ** 2)
    with uow_factory() as uow:
        events = audit_of(uow, alice, fact)
    assert [(e.action, e.actor) for e in events] == [("decay", "rule"), ("decay", "rule")]
    assert (events[0].before["importance"], events[0].after["importance"]) == pytest.approx((1.0, 0.95))


def test_a_memory_used_in_the_last_seven_days_does_not_decay(uow_factory):
    with uow_factory() as uow:
        alice = person(uow)
        used = remember(uow, alice, "I like oolong tea", idle=6 * DAY)
        new = remember(uow, alice, "I started running", age=2 * DAY)
        uow.commit()
    assert run_decay(uow_factory, NOW, eviction_threshold=None).memories_decayed == 0
    assert memory(uow_factory, used).importance == memory(uow_factory, new).importance == 1.0


def test_core_and_system_memories_never_decay_and_are_never_deleted(uow_factory):
    with uow_factory() as uow:
        alice = person(uow)
        core = remember(uow, alice, "My name is Alice", tier="core", importance=0.1, idle=400 * DAY)
        system = remember(uow, alice, "Speak Chinese", tier="system", importance=0.1, idle=400 * DAY,
                          expires_at=NOW - DAY)
        uow.commit()
    report = run_decay(uow_factory, NOW, eviction_threshold=1)
    assert (report.memories_decayed, report.memories_binned, report.memories_expired,
            report.memories_evicted) == (0, 0, 0, 0)
    assert memory(uow_factory, core).importance == memory(uow_factory, system).importance == 0.1


def test_a_stated_memory_faded_under_0_3_is_kept_however_long_it_goes_unused(uow_factory):
    with uow_factory() as uow:
        alice = person(uow)
        faded = remember(uow, alice, "My sister is called Anna", importance=0.29, idle=400 * DAY)
        uow.commit()
    report = run_decay(uow_factory, NOW, eviction_threshold=None)
    assert (report.memories_binned, report.memories_purged) == (0, 0)
    assert memory(uow_factory, faded).deleted_at is None
    assert actions(uow_factory, alice, faded) == [("decay", "rule")]


def test_an_inferred_memory_unused_for_90_days_goes_to_the_bin_and_is_purged_30_days_later_with_its_history(
        uow_factory):
    with uow_factory() as uow:
        alice = person(uow)
        new = remember(uow, alice, "Seems to live in Berlin", source="inferred", importance=0.29, idle=91 * DAY)
        old = remember(uow, alice, "Seems to live in Shanghai", source="inferred", idle=120 * DAY,
                       superseded_by=new)
        recent = remember(uow, alice, "Seems to like tea", source="inferred", idle=89 * DAY)
        uow.commit()
    assert run_decay(uow_factory, NOW, eviction_threshold=None).memories_binned == 1
    assert memory(uow_factory, new).deleted_at == NOW
    assert memory(uow_factory, old) is not None
    assert memory(uow_factory, recent).deleted_at is None
    assert run_decay(uow_factory, NOW + 29 * DAY, eviction_threshold=None).memories_purged == 0
    assert run_decay(uow_factory, NOW + 30 * DAY, eviction_threshold=None).memories_purged == 1
    assert memory(uow_factory, new) is None
    assert memory(uow_factory, old) is None
    assert actions(uow_factory, alice, new)[:2] == [("decay", "rule"), ("bin", "rule")]
    assert actions(uow_factory, alice, new)[-1] == ("purge", "rule")
    with uow_factory() as uow:
        tombstone = audit_of(uow, alice, old)[-1]
    assert tombstone.action == "purge"
    assert tombstone.before["content"] == "Seems to live in Shanghai"


def test_a_memory_between_0_3_and_0_5_is_left_for_the_decay_review(uow_factory):
    with uow_factory() as uow:
        alice = person(uow)
        fading = remember(uow, alice, "I watched a film", importance=0.4, idle=30 * DAY)
        uow.commit()
    assert run_decay(uow_factory, NOW, eviction_threshold=None).memories_binned == 0
    assert memory(uow_factory, fading).importance == pytest.approx(0.38)


def test_transient_memories_expire_24_hours_after_they_were_made(uow_factory):
    with uow_factory() as uow:
        alice = person(uow)
        stale = remember(uow, alice, "I am tired today", tier="transient", age=timedelta(hours=25))
        fresh = remember(uow, alice, "I am hungry", tier="transient", age=timedelta(hours=23))
        dated = remember(uow, alice, "Exam this week", tier="short", age=2 * DAY, expires_at=NOW - timedelta(minutes=1))
        uow.commit()
    assert run_decay(uow_factory, NOW, eviction_threshold=None).memories_expired == 2
    assert memory(uow_factory, stale) is None
    assert memory(uow_factory, dated) is None
    assert memory(uow_factory, fresh) is not None
    assert actions(uow_factory, alice, stale) == [("expire", "rule")]


def test_episodes_fade_after_seven_days_and_go_after_fourteen_while_their_turns_stay(uow_factory):
    with uow_factory() as uow:
        alice = person(uow)
        chat = uow.chats.get_or_create("telegram", "1001", "private")
        ids = {}
        for name, age in (("recent", 3 * DAY), ("fading", 8 * DAY), ("old", 15 * DAY)):
            ended = NOW - age
            ids[name] = uow.episodes.add(Episode(user_id=alice, chat_id=chat.id, summary=f"talked ({name})",
                                                 started_at=ended - timedelta(hours=1), ended_at=ended)).id
        turn = uow.turns.add(ConversationTurn(user_id=alice, chat_id=chat.id, role="user", text="hi",
                                              episode_id=ids["old"], created_at=NOW - 15 * DAY))
        uow.commit()
    for _ in range(2):
        run_decay(uow_factory, NOW, eviction_threshold=None)
    with uow_factory() as uow:
        importance = {e.summary: e.importance for e in uow.session.scalars(select(Episode))}
        kept_turn = uow.session.get(ConversationTurn, turn.id)
    assert importance == {"talked (recent)": 1.0, "talked (fading)": pytest.approx(0.8)}
    assert kept_turn is not None
    assert kept_turn.episode_id is None


def a_round(uow, user_id: int, chat_id: int, line: str, age: timedelta) -> tuple[int, int]:
    """A user's line said ``age`` ago and the bot's reply a few seconds later: (line id, reply id)."""
    said = uow.turns.add(ConversationTurn(user_id=user_id, chat_id=chat_id, role="user", text=line,
                                          created_at=NOW - age))
    reply = uow.turns.add(ConversationTurn(user_id=user_id, chat_id=chat_id, role="assistant", text=f"re: {line}",
                                           reply_to_turn_id=said.id, created_at=NOW - age + timedelta(seconds=3)))
    return said.id, reply.id


def turns_left(uow_factory) -> set[int]:
    with uow_factory() as uow:
        return set(uow.session.scalars(select(ConversationTurn.id)))


def test_without_a_retention_setting_rounds_are_kept_while_the_account_lives(uow_factory):
    with uow_factory() as uow:
        alice = person(uow)
        chat = uow.chats.get_or_create("telegram", "1001", "private")
        ancient = a_round(uow, alice, chat.id, "I grew up by the sea", 400 * DAY)
        uow.commit()
    assert run_decay(uow_factory, NOW, eviction_threshold=None).turns_deleted == 0
    assert turns_left(uow_factory) == set(ancient)


def test_a_retention_of_90_days_deletes_both_sides_of_older_rounds_and_keeps_newer_ones_and_the_memories(uow_factory):
    with uow_factory() as uow:
        alice = person(uow)
        chat = uow.chats.get_or_create("telegram", "1001", "private")
        old = a_round(uow, alice, chat.id, "I live in Berlin", 100 * DAY)
        # the cutoff falls between the line and its reply: the reply goes with its round
        a_round(uow, alice, chat.id, "I like tea", 90 * DAY + timedelta(seconds=1))
        recent = a_round(uow, alice, chat.id, "hi", 10 * DAY)
        fact = remember(uow, alice, "I live in Berlin", tier="core", source_turn_id=old[0])
        uow.commit()
    assert run_decay(uow_factory, NOW, eviction_threshold=None, conversation_retention_days=90).turns_deleted == 3
    assert turns_left(uow_factory) == set(recent)
    assert memory(uow_factory, fact).source_turn_id is None
    assert run_decay(uow_factory, NOW, eviction_threshold=None, conversation_retention_days=90).turns_deleted == 0


def test_nothing_is_evicted_when_no_threshold_is_set(uow_factory):
    with uow_factory() as uow:
        alice = person(uow)
        for n in range(5):
            remember(uow, alice, f"fact number {n}", age=DAY)
        uow.commit()
    assert run_decay(uow_factory, NOW, eviction_threshold=None).memories_evicted == 0
    with uow_factory() as uow:
        assert uow.memories.count_active(alice) == 5


def test_eviction_keeps_n_memories_dropping_the_lowest_confidence_then_the_oldest_access_never_core(uow_factory):
    with uow_factory() as uow:
        alice, bob = person(uow), person(uow, "2002")
        core = remember(uow, alice, "My name is Alice", tier="core", confidence=0.1, age=DAY)
        unsure = remember(uow, alice, "Maybe likes jazz", confidence=0.3, age=DAY, idle=timedelta(hours=1))
        stale = remember(uow, alice, "Likes tea", confidence=0.9, age=DAY, idle=20 * DAY)
        kept = {remember(uow, alice, "Likes cats", confidence=0.9, age=DAY, idle=2 * DAY),
                remember(uow, alice, "Lives in Berlin", confidence=0.9, age=DAY, idle=DAY)}
        bobs = {remember(uow, bob, f"Bob fact {n}", confidence=0.1, age=DAY) for n in range(3)}
        uow.commit()
    assert run_decay(uow_factory, NOW, eviction_threshold=3).memories_evicted == 2
    assert run_decay(uow_factory, NOW, eviction_threshold=3).memories_evicted == 0
    with uow_factory() as uow:
        left = {m.id for m in uow.session.scalars(select(Memory))}
    assert left == {core, *kept, *bobs}
    assert actions(uow_factory, alice, unsure) == [("delete", "rule")]
    assert stale not in left


def test_more_rows_than_one_batch_are_all_handled(uow_factory, monkeypatch):
    monkeypatch.setattr(decay, "BATCH_SIZE", 3)
    monkeypatch.setattr(decay, "ID_BATCH_SIZE", 2)
    with uow_factory() as uow:
        alice = person(uow)
        chat = uow.chats.get_or_create("telegram", "1001", "private")
        ids = [remember(uow, alice, f"fact {n}", idle=10 * DAY) for n in range(10)]
        for n in range(5):
            uow.turns.add(ConversationTurn(user_id=alice, chat_id=chat.id, role="user", text=f"turn {n}",
                                           created_at=NOW - 40 * DAY))
        uow.commit()
    report = run_decay(uow_factory, NOW, eviction_threshold=None, conversation_retention_days=30)
    assert (report.memories_decayed, report.turns_deleted) == (10, 5)
    assert run_decay(uow_factory, NOW, eviction_threshold=None).memories_decayed == 0
    assert all(memory(uow_factory, i).importance == pytest.approx(0.95) for i in ids)


def test_decay_events_older_than_30_days_are_pruned_and_the_rest_of_the_audit_stays(uow_factory):
    with uow_factory() as uow:
        alice = person(uow)
        fact = remember(uow, alice, "I live in Berlin", idle=8 * DAY)
        for age, action in ((45 * DAY, "decay"), (31 * DAY, "decay"), (29 * DAY, "decay"), (60 * DAY, "update")):
            event = uow.events.record(alice, fact, action, "rule", reason="test")
            event.created_at = NOW - age
        uow.commit()
    report = run_decay(uow_factory, NOW, eviction_threshold=None)
    assert report.decay_events_pruned == 2
    with uow_factory() as uow:
        events = audit_of(uow, alice, fact)
    assert sorted((NOW - e.created_at).days for e in events if e.reason == "test") == [29, 60]
    assert [e.action for e in events if e.reason != "test"] == ["decay"]  # today's run


def test_expired_sign_in_links_confirmations_and_panel_sessions_are_deleted(uow_factory):
    with uow_factory() as uow:
        alice = person(uow)
        uow.tokens.issue("old-link-token-000000000000000000000", alice, "panel", {}, now=NOW - DAY,
                         expires_at=NOW - DAY + timedelta(minutes=10))
        uow.tokens.issue("live-confirm-token-00000000000000000", alice, "confirm", {}, now=NOW,
                         expires_at=NOW + timedelta(minutes=5))
        uow.web_sessions.start("old-session-secret-0000000000000000000", alice, "csrf", now=NOW - 2 * DAY,
                               expires_at=NOW - DAY)
        uow.web_sessions.start("live-session-secret-000000000000000000", alice, "csrf", now=NOW,
                               expires_at=NOW + DAY)
        uow.commit()
    assert run_decay(uow_factory, NOW, eviction_threshold=None).expired_sign_ins_deleted == 2
    with uow_factory() as uow:
        assert uow.tokens.valid("live-confirm-token-00000000000000000", "confirm", NOW) is not None
        assert uow.web_sessions.find("live-session-secret-000000000000000000", NOW) is not None
        assert uow.web_sessions.find("old-session-secret-0000000000000000000", NOW - 2 * DAY) is None
