"""Every task is idempotent: run twice, it changes nothing the second time (in-process, real PostgreSQL)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select, update

from shared.db.memory_models import Episode, Memory, MemoryEvent, OutboxJob, Todo
from shared.db.models import ConversationTurn
from shared.reminders import service as reminders
from shared.search.tokenizer import TOKENIZER_VERSION
from tests.builders import PER_TURN, conversation, conversation_config, message, worker_units_of_work
from worker import context as worker_context
from worker import tasks

CONFIG = conversation_config(personality="a friend", default_timezone="Asia/Shanghai", extraction=PER_TURN)


@pytest.fixture
def uow_factory(migrated_system_db, monkeypatch, telegram, tmp_path):
    """Units of work, and the environment a worker process would see for the same database."""
    monkeypatch.setattr(tasks, "_senders", None)
    with worker_units_of_work(migrated_system_db, monkeypatch, tmp_path, TELEGRAM_TOKEN=telegram.token,
                              TELEGRAM_API_BASE_URL=telegram.base_url) as units:
        yield units


def counts(uow_factory) -> tuple[int, ...]:
    with uow_factory() as uow:
        return tuple(uow.session.scalar(select(func.count()).select_from(model))
                     for model in (Memory, MemoryEvent, Episode, Todo))


def run_owed_jobs_twice(uow_factory) -> None:
    with uow_factory() as uow:
        owed = [(job.id, job.task, job.payload) for job in uow.session.scalars(select(OutboxJob))]
    for _ in range(2):
        for job_id, task, payload in owed:
            getattr(tasks, task).run(job_id=job_id, **payload)


def test_outbox_tasks_run_twice_change_nothing_the_second_time(uow_factory):
    service = conversation(uow_factory, CONFIG)
    asyncio.run(service.handle_message(message("我住在杭州。我喜欢喝乌龙茶", user="5", name=None, message_id="1")))
    with uow_factory() as uow:
        session_id = uow.session.scalars(select(Memory.session_id)).first()
        uow.sessions.close(session_id, datetime.now(UTC))
        uow.outbox.add("close_session", {"session_id": session_id}, dedup_key=f"close:{session_id}")
        uow.commit()
    before = counts(uow_factory)
    run_owed_jobs_twice(uow_factory)
    after_first = counts(uow_factory)
    run_owed_jobs_twice(uow_factory)
    assert counts(uow_factory) == after_first
    assert after_first[2] == before[2] + 1  # exactly one episode
    with uow_factory() as uow:
        assert set(uow.session.scalars(select(OutboxJob.status))) == {"done"}


def test_a_reminder_task_delivered_twice_pings_once(uow_factory, telegram):
    now = datetime.now(UTC)
    with uow_factory() as uow:
        user = uow.users.identify("telegram", "77", locale="en").user_id
        chat = uow.chats.get_or_create("telegram", "77", "private")
        uow.todos.add(Todo(user_id=user, chat_id=chat.id, content="stretch", due_at=now - timedelta(seconds=1),
                           remind_at=now - timedelta(seconds=1), timezone="UTC"))
        uow.commit()
    [claim] = reminders.claim_due_reminders(uow_factory, now)
    assert tasks.deliver_reminder.run(claim.todo_id, claim.attempt) == "sent"
    assert tasks.deliver_reminder.run(claim.todo_id, claim.attempt) == "skipped"
    assert len(telegram.sent) == 1
    assert telegram.sent[0]["text"].startswith("⏰ Reminder: stretch")


def test_maintenance_tasks_run_twice_change_nothing_the_second_time(uow_factory):
    with uow_factory() as uow:
        user = uow.users.identify("console", "m").user_id
        old = datetime.now(UTC) - timedelta(days=40)
        for content in ("likes green tea", "likes green tea a lot", "plays chess"):
            uow.memories.add(Memory(user_id=user, type="preference", content=content, source="inferred",
                                    confidence=0.6, importance=0.35, created_at=old, updated_at=old,
                                    last_accessed=old))
        uow.commit()
        uow.session.execute(update(Memory).values(tokenizer_version=1))  # as if made by an older release
        uow.commit()
    maintenance = (tasks.run_maintenance, tasks.run_decay, tasks.run_dedup, tasks.run_reviews, tasks.retokenize_search)
    for task in maintenance:
        task.run()
    first = counts(uow_factory)
    with uow_factory() as uow:
        assert set(uow.session.scalars(select(Memory.tokenizer_version))) == {TOKENIZER_VERSION}
    for task in maintenance:
        task.run()
    assert counts(uow_factory) == first
    assert tasks.retokenize_search.run() == 0


def test_turns_waiting_in_the_same_session_are_extracted_in_one_batch(uow_factory):
    service = conversation(uow_factory, CONFIG)
    for index, text in enumerate(("我住在杭州", "我喜欢喝乌龙茶", "我叫阿明")):
        asyncio.run(service.handle_message(message(text, user="8", name=None, message_id=str(index))))
    with uow_factory() as uow:
        jobs = [(job.id, job.payload) for job in uow.session.scalars(
            select(OutboxJob).where(OutboxJob.task == "extract_turn").order_by(OutboxJob.id))]
    last_id, last_payload = jobs[-1]
    tasks.extract_turn.run(job_id=last_id, **last_payload)
    with uow_factory() as uow:
        from shared.db.models import ConversationTurn

        waiting = uow.session.scalar(select(func.count()).select_from(ConversationTurn).where(
            ConversationTurn.role == "user", ConversationTurn.extracted.is_(False)))
    assert waiting == 0


def test_the_decay_task_deletes_rounds_only_past_conversation_retention_days(uow_factory, monkeypatch):
    now = datetime.now(UTC)
    with uow_factory() as uow:
        user = uow.users.identify("console", "r").user_id
        chat = uow.chats.get_or_create("console", "r", "private")
        for days in (400, 100, 10):
            line = uow.turns.add(ConversationTurn(user_id=user, chat_id=chat.id, role="user", text=f"{days} days ago",
                                                  created_at=now - timedelta(days=days)))
            uow.turns.add(ConversationTurn(user_id=user, chat_id=chat.id, role="assistant", text="ok",
                                           reply_to_turn_id=line.id, created_at=now - timedelta(days=days)))
        uow.commit()

    def lines_left() -> set[str]:
        with uow_factory() as uow:
            return set(uow.session.scalars(select(ConversationTurn.text).where(ConversationTurn.role == "user")))

    tasks.run_decay.run()  # CONVERSATION_RETENTION_DAYS unset: kept while the account lives
    assert lines_left() == {"400 days ago", "100 days ago", "10 days ago"}
    worker_context._context.engine.dispose()
    monkeypatch.setattr(worker_context, "_context", None)
    monkeypatch.setenv("CONVERSATION_RETENTION_DAYS", "90")
    tasks.run_decay.run()
    assert lines_left() == {"10 days ago"}
    with uow_factory() as uow:
        assert uow.session.scalar(select(func.count()).select_from(ConversationTurn)) == 2
