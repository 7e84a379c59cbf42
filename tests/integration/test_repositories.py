"""Repositories on real PostgreSQL (with and without pgvector): round trips, tokens, user scoping."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from shared.db.memory_models import Episode, Memory, Todo
from shared.db.models import ConversationTurn
from shared.search.tokenizer import TOKENIZER_VERSION
from tests.conftest import audit_of

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def _people(uow):
    alice = uow.users.identify("telegram", "1001", display_name="Alice", locale="zh-CN")
    bob = uow.users.identify("discord", "2002", display_name="Bob")
    chat = uow.chats.get_or_create("telegram", "-500", "group", "Friends")
    return alice.user_id, bob.user_id, chat.id


def _memory(user_id: int, content: str, type_: str = "fact", **fields) -> Memory:
    return Memory(user_id=user_id, type=type_, content=content, source="user_stated", confidence=0.9, **fields)


def test_identify_returns_the_same_user_every_time_and_updates_the_display_name_and_the_users_zone(uow_factory):
    with uow_factory() as uow:
        first = uow.users.identify("telegram", "42", display_name="阿明")
        again = uow.users.identify("telegram", "42", display_name="Ming", timezone="Asia/Shanghai")
        other = uow.users.identify("discord", "42")
        uow.commit()
    assert first.user_id == again.user_id != other.user_id
    with uow_factory() as uow:
        identity = uow.users.identity("telegram", "42")
        assert identity.display_name == "Ming"
        assert (uow.users.get(identity.user_id).timezone, uow.users.get(other.user_id).timezone) == (
            "Asia/Shanghai", None)


@pytest.mark.parametrize("content, query, expected_tokens", [
    ("我喜欢喝乌龙茶，不喜欢咖啡", ["乌龙茶"], "喜欢 喝 乌龙茶 喜欢 咖啡"),
    ("My sister Anna lives in Berlin", ["berlin"], "sister anna live berlin"),
    ("我在 Google 做 SRE，养了一只猫", ["猫", "googl"], "googl sre 养 猫"),
])
def test_memories_round_trip_chinese_english_and_mixed_text(uow_factory, content, query, expected_tokens):
    with uow_factory() as uow:
        alice, _, _ = _people(uow)
        saved = uow.memories.add(_memory(alice, content, value={"note": content}))
        uow.commit()
    with uow_factory() as uow:
        loaded = uow.memories.get(alice, saved.id)
        found = uow.memories.text_candidates(alice, query)
    assert (loaded.content, loaded.value) == (content, {"note": content})
    assert loaded.tokenizer_version == TOKENIZER_VERSION
    assert set(expected_tokens.split()) - {"喝", "养"} <= set(loaded.search_tokens.split())
    assert [memory.id for memory, _rank in found] == [saved.id]


def test_search_tokens_follow_every_change_of_the_text(uow_factory):
    with uow_factory() as uow:
        alice, _, _ = _people(uow)
        memory = uow.memories.add(_memory(alice, "I live in Shanghai", subject="user", predicate="lives_in"))
        uow.commit()
    with uow_factory() as uow:
        memory = uow.memories.get(alice, memory.id)
        memory.content = "I live in Berlin now"
        uow.commit()
    with uow_factory() as uow:
        assert [m.id for m, _ in uow.memories.text_candidates(alice, ["berlin"])] == [memory.id]
        assert uow.memories.text_candidates(alice, ["shanghai"]) == []


def test_text_is_cleaned_of_nul_bytes_before_it_is_stored(uow_factory):
    with uow_factory() as uow:
        alice, _, _ = _people(uow)
        memory = uow.memories.add(_memory(alice, "tea\x00 time"))
        uow.commit()
    with uow_factory() as uow:
        assert uow.memories.get(alice, memory.id).content == "tea time"


def test_one_users_queries_never_return_another_users_memories(uow_factory):
    with uow_factory() as uow:
        alice, bob, _ = _people(uow)
        secret = uow.memories.add(_memory(alice, "Alice's secret: the password hint is 乌龙茶"))
        uow.memories.add(_memory(bob, "Bob likes 乌龙茶 too"))
        uow.commit()
    with uow_factory() as uow:
        assert uow.memories.get(bob, secret.id) is None
        assert all(m.user_id == bob for m, _ in uow.memories.text_candidates(bob, ["乌龙茶", "password"]))
        assert all(m.user_id == bob for m, _ in uow.memories.ranked_candidates(
            bob, [("乌龙茶", 1.0), ("password", 1.0)], contains=["乌龙茶", "secret"]))
        rows, total = uow.memories.page(bob)
        assert total == 1
        assert rows[0].user_id == bob
        uow.memories.touch(bob, [secret.id], NOW)
        assert uow.memories.purge(bob, [secret.id]) == []
        uow.commit()
    with uow_factory() as uow:
        kept = uow.memories.get(alice, secret.id)
        assert kept is not None
        assert kept.access_count == 0


def test_memory_pages_filter_by_type_and_search_and_count_the_total(uow_factory):
    with uow_factory() as uow:
        alice, _, _ = _people(uow)
        for i in range(12):
            uow.memories.add(_memory(alice, f"fact number {i}"))
        uow.memories.add(_memory(alice, "likes 100% dark chocolate", type_="preference"))
        uow.commit()
        first, total = uow.memories.page(alice, limit=5)
        assert total == 13
        assert len(first) == 5
        prefs, total = uow.memories.page(alice, type_="preference")
        assert total == 1
        assert prefs[0].type == "preference"
        _found, total = uow.memories.page(alice, search="100%")
        assert total == 1


def test_superseded_and_deleted_memories_are_not_active(uow_factory):
    with uow_factory() as uow:
        alice, _, _ = _people(uow)
        old = uow.memories.add(_memory(alice, "lives in Shanghai", subject="user", predicate="lives_in"))
        new = uow.memories.add(_memory(alice, "lives in Berlin", subject="user", predicate="lives_in"))
        old.superseded_by = new.id
        uow.events.record(alice, old.id, "supersede", "llm", before={"content": old.content}, after={"by": new.id})
        uow.commit()
        assert [m.id for m in uow.memories.active_by_key(alice, "fact", "user", "lives_in")] == [new.id]
        assert uow.memories.get(alice, old.id) is None
        assert uow.memories.get(alice, old.id, include_inactive=True) is not None
        assert [e.action for e in audit_of(uow, alice, old.id)] == ["supersede"]
        assert sorted(uow.memories.purge(alice)) == sorted([old.id, new.id])
        uow.commit()
        assert uow.memories.count_active(alice) == 0


def test_sessions_turns_and_duplicate_platform_messages(uow_factory):
    with uow_factory() as uow:
        alice, _, chat = _people(uow)
        session = uow.sessions.start(alice, chat, NOW)
        assert uow.sessions.start(alice, chat, NOW).id == session.id
        for i in range(20):
            uow.turns.add(ConversationTurn(user_id=alice, chat_id=chat, session_id=session.id, role="user",
                                           platform_message_id=str(i), text=f"消息 {i}"))
        uow.commit()
        recent = uow.turns.recent(alice, session.id, 15)
        assert [t.text for t in recent] == [f"消息 {i}" for i in range(5, 20)]
        assert uow.turns.by_platform_message(chat, "user", "7").text == "消息 7"
        assert uow.sessions.close_idle(NOW, NOW) == []  # active until NOW: not idle before it
        assert uow.sessions.close(session.id, NOW)
        assert not uow.sessions.close(session.id, NOW)
        assert uow.sessions.close_idle(NOW + timedelta(minutes=31), NOW) == []  # closed already
        assert uow.sessions.open_for(alice, chat) is None


def test_episodes_are_searchable_and_scoped(uow_factory):
    with uow_factory() as uow:
        alice, bob, chat = _people(uow)
        episode = uow.episodes.add(Episode(user_id=alice, chat_id=chat, summary="[2026-01-03 18:00] 聊了面试和游戏",
                                           started_at=NOW, ended_at=NOW, entities=["面试"]))
        uow.commit()
        assert [e.id for e, _ in uow.episodes.text_candidates(alice, ["面试"])] == [episode.id]
        assert uow.episodes.text_candidates(bob, ["面试"]) == []
        assert uow.episodes.get(bob, episode.id) is None


@pytest.mark.committed
def test_due_reminders_are_claimed_by_exactly_one_of_two_concurrent_claimers(uow_factory):
    with uow_factory() as uow:
        alice, _, chat = _people(uow)
        for i in range(10):
            uow.todos.add(Todo(user_id=alice, chat_id=chat, content=f"drink water {i}", due_at=NOW,
                               remind_at=NOW - timedelta(minutes=1), timezone="UTC"))
        uow.todos.add(Todo(user_id=alice, chat_id=chat, content="later", due_at=NOW + timedelta(days=1),
                           remind_at=NOW + timedelta(days=1), timezone="UTC"))
        uow.commit()
    with uow_factory() as first, uow_factory() as second:
        claimed_first = first.todos.claim_due(NOW, limit=6)
        claimed_second = second.todos.claim_due(NOW, limit=6)
        first.commit()
        second.commit()
    ids_first, ids_second = {t.id for t in claimed_first}, {t.id for t in claimed_second}
    assert len(ids_first) == 6
    assert len(ids_second) == 4
    assert not ids_first & ids_second
    with uow_factory() as uow:
        assert uow.todos.claim_due(NOW) == []
        first_claim = min(claimed_first, key=lambda todo: todo.id)
        sent = (first_claim.user_id, first_claim.id, first_claim.attempts, NOW)
        assert uow.todos.mark_sent(*sent)
        assert not uow.todos.mark_sent(*sent)
        assert uow.todos.claim_due(NOW + timedelta(minutes=10)) != []


def test_profiles_are_saved_and_replaced(uow_factory):
    with uow_factory() as uow:
        alice, _, _ = _people(uow)
        uow.profiles.save(alice, "喜欢茶", {"current_focus": "面试"}, NOW)
        uow.profiles.save(alice, "Likes tea; preparing for an interview", {"open_threads": ["面试"]}, NOW)
        uow.commit()
    with uow_factory() as uow:
        profile = uow.profiles.get(alice)
        assert profile.core_summary.startswith("Likes tea")
        assert profile.scratchpad == {"open_threads": ["面试"]}


def test_the_outbox_deduplicates_by_key_and_marks_jobs_done_once(uow_factory):
    with uow_factory() as uow:
        alice, _, _ = _people(uow)
        job = uow.outbox.add("extract_turn", {"turn_id": 1}, dedup_key="extract:1", user_id=alice,
                             available_at=NOW)
        assert uow.outbox.add("extract_turn", {"turn_id": 1}, dedup_key="extract:1") is None
        uow.commit()
        assert [j.id for j in uow.outbox.owed(NOW + timedelta(days=1))] == [job]
        uow.outbox.mark_sent(job, NOW)
        assert uow.outbox.mark_done(job, NOW)
        assert not uow.outbox.mark_done(job, NOW)
        uow.commit()
        assert uow.outbox.owed(NOW + timedelta(days=1)) == []
