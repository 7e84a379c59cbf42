"""Every query of a user's data is the repository's, scoped by the user; the outbox relay keeps a job
owed through a broker outage but lets a bug through. Real PostgreSQL."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from shared.db.memory_models import Episode, OutboxJob, Todo
from shared.db.models import ConversationTurn
from shared.lifecycle.outbox import dispatch_jobs, sweep_jobs
from worker.celery_app import app, configure
from worker.tasks import send_task

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def people(uow) -> tuple[int, int, int]:
    """(Alice, Bob, a group chat they share)."""
    alice = uow.users.identify("telegram", "1001", locale="zh-CN").user_id
    bob = uow.users.identify("telegram", "2002", locale="en").user_id
    chat = uow.chats.get_or_create("telegram", "-500", "group", "Friends").id
    return alice, bob, chat


def owed_job(uow_factory) -> int:
    with uow_factory() as uow:
        alice, _, _ = people(uow)
        job_id = uow.outbox.add("extract_turn", {"turn_id": 1}, dedup_key="extract:1", user_id=alice)
        uow.commit()
    return job_id


def job_row(uow_factory, job_id: int) -> OutboxJob:
    with uow_factory() as uow:
        return uow.session.get(OutboxJob, job_id)


@pytest.fixture
def unreachable_broker() -> Iterator[None]:
    """The Celery app pointed at a database broker on a port where nothing listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    previous = app.conf.broker_url
    configure(f"sqla+postgresql+psycopg://mnemo@127.0.0.1:{port}/mnemo")
    yield
    if previous:
        configure(previous)
    else:
        app.close()


def test_a_broker_outage_leaves_the_job_owed_and_the_sweep_sends_it_later(uow_factory, unreachable_broker):
    job_id = owed_job(uow_factory)
    assert dispatch_jobs(uow_factory, send_task, [job_id], NOW) == 0
    assert (job_row(uow_factory, job_id).status, job_row(uow_factory, job_id).attempts) == ("pending", 0)
    sent: list[tuple[str, dict]] = []
    later = datetime.now(UTC) + timedelta(minutes=5)
    assert sweep_jobs(uow_factory, lambda task, payload: sent.append((task, payload)), later) == 1
    assert sent == [("extract_turn", {"job_id": job_id, "turn_id": 1})]
    assert job_row(uow_factory, job_id).status == "sent"


def test_an_unexpected_send_error_propagates_and_marks_nothing_sent(uow_factory):
    job_id = owed_job(uow_factory)

    def broken_send(task: str, payload: dict) -> None:
        raise TypeError("a bug in the sender, not an outage")

    with pytest.raises(TypeError, match="a bug in the sender"):
        dispatch_jobs(uow_factory, broken_send, [job_id], NOW)
    assert (job_row(uow_factory, job_id).status, job_row(uow_factory, job_id).attempts) == ("pending", 0)


def test_a_duplicate_message_finds_its_reply_only_among_its_own_users_turns(uow_factory):
    with uow_factory() as uow:
        alice, bob, chat = people(uow)
        session = uow.sessions.start(alice, chat, NOW)
        asked = uow.turns.add(ConversationTurn(user_id=alice, chat_id=chat, session_id=session.id, role="user",
                                               platform_message_id="7", text="我住哪"))
        uow.turns.add(ConversationTurn(user_id=alice, chat_id=chat, session_id=session.id, role="assistant",
                                       text="你住在杭州"))
        uow.commit()
        assert uow.turns.reply_in_session(alice, session.id, asked.id).text == "你住在杭州"
        assert uow.turns.reply_in_session(bob, session.id, asked.id) is None


def test_the_memories_a_prompt_showed_are_recorded_on_the_owners_turn_only(uow_factory):
    with uow_factory() as uow:
        alice, bob, chat = people(uow)
        session = uow.sessions.start(alice, chat, NOW)
        for number in range(5):
            turn = uow.turns.add(ConversationTurn(user_id=alice, chat_id=chat, session_id=session.id, role="user",
                                                  text=f"line {number}"))
        uow.turns.show_memories(bob, turn.id, (41,))
        uow.turns.show_memories(alice, turn.id, (42, 43))
        uow.commit()
        turns, in_all = uow.turns.recent_counted(alice, session.id, 3)
        assert [t.text for t in turns] == ["line 2", "line 3", "line 4"]
        assert in_all == 5
        assert turns[-1].memory_ids == [42, 43]
        assert turns[0].memory_ids is None
        assert uow.turns.recent_counted(bob, session.id, 3) == ([], 0)
        assert uow.turns.recent_counted(alice, session.id, 0, before_turn_id=turn.id) == ([], 4)


def test_summary_reads_locks_and_links_only_the_session_owners_turns(uow_factory):
    with uow_factory() as uow:
        alice, bob, chat = people(uow)
        session = uow.sessions.start(alice, chat, NOW)
        ids = [uow.turns.add(ConversationTurn(user_id=alice, chat_id=chat, session_id=session.id, role="user",
                                              text=f"消息 {i}")).id for i in range(3)]
        episode = uow.episodes.add(Episode(user_id=alice, chat_id=chat, session_id=session.id, summary="聊了消息",
                                           started_at=NOW, ended_at=NOW))
        assert uow.sessions.to_summarise(session.id).user_id == alice
        assert uow.turns.unsummarised(bob, session.id) == []
        assert uow.turns.lock_unsummarised(bob, ids) == []
        uow.turns.link_to_episode(bob, ids, episode.id)
        assert [turn.id for turn in uow.turns.unsummarised(alice, session.id, limit=2)] == ids[:2]
        assert uow.turns.lock_unsummarised(alice, ids) == ids
        uow.turns.link_to_episode(alice, ids, episode.id)
        assert uow.turns.unsummarised(alice, session.id) == []


def test_changes_after_a_reminder_send_need_its_owner_and_its_claim(uow_factory):
    with uow_factory() as uow:
        alice, bob, chat = people(uow)
        todo = uow.todos.add(Todo(user_id=alice, chat_id=chat, content="喝水", due_at=NOW, remind_at=NOW,
                                  timezone="Asia/Shanghai"))
        uow.commit()
        [claim] = uow.todos.claim_due(NOW, lease=timedelta(minutes=1))
        uow.commit()
        assert uow.todos.lock_for_delivery(todo.id).user_id == alice
        assert not uow.todos.mark_sent(bob, todo.id, claim.attempts, NOW)
        assert not uow.todos.mark_sent(alice, todo.id, claim.attempts - 1, NOW)
        assert not uow.todos.note_failure(bob, todo.id, claim.attempts, "429", NOW)
        assert not uow.todos.cancel_refused(bob, todo.id, claim.attempts, "blocked", NOW)
        hold = NOW + timedelta(minutes=10)
        assert uow.todos.note_failure(alice, todo.id, claim.attempts, "429 Too Many Requests", NOW,
                                      hold_until=hold)
        assert uow.todos.note_failure(alice, todo.id, claim.attempts, "429", NOW, hold_until=NOW)
        uow.forget_loaded()
        row = uow.todos.get(alice, todo.id)
        assert (row.status, row.claimed_until, row.last_error) == ("pending", hold, "429")
        assert uow.todos.cancel_refused(alice, todo.id, claim.attempts, "blocked", NOW)
        uow.forget_loaded()
        assert (row.status, row.last_error) == ("cancelled", "refused: blocked")


def test_sent_reminders_and_identities_on_a_platform_are_the_users_own(uow_factory):
    with uow_factory() as uow:
        alice, bob, chat = people(uow)
        todo = uow.todos.add(Todo(user_id=alice, chat_id=chat, content="喝水", due_at=NOW, remind_at=NOW,
                                  timezone="UTC", status="sent", sent_at=NOW))
        uow.commit()
        until = NOW + timedelta(minutes=1)
        assert [t.id for t in uow.todos.sent_on_platform(alice, "telegram", NOW - timedelta(minutes=1), until)] == [
            todo.id]
        assert uow.todos.sent_on_platform(bob, "telegram", NOW - timedelta(minutes=1), until) == []
        assert uow.todos.sent_on_platform(alice, "discord", NOW - timedelta(minutes=1), until) == []
        assert uow.users.identity_on(alice, "telegram").locale == "zh-CN"
        assert uow.users.identity_on(alice, "discord") is None
