"""Daily token quotas on real PostgreSQL with the fake OpenAI server: past the allowance a user is told so in
their language and answered offline, no turn is lost, and their background work runs the next UTC day."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from bench.fakes.openai_server import FakeOpenAI
from shared.conversation.service import ConversationService
from shared.db.memory_models import Memory, OutboxJob
from shared.db.models import ConversationTurn
from shared.lifecycle.dedup import run_dedup
from shared.lifecycle.extraction import extract_turns
from shared.lifecycle.outbox import sweep_jobs
from shared.lifecycle.reviews import run_reviews
from shared.usage.policy import QuotaPolicy
from shared.usage.quota import put_off_if_over
from tests.builders import Clock, conversation, message
from tests.integration.test_usage_recording import CONFIG, TURN
from tests.told import told

TODAY = datetime(2026, 11, 22, 20, 0, tzinfo=UTC)
TOMORROW = datetime(2026, 11, 23, 0, 0, tzinfo=UTC)
QUOTA = QuotaPolicy(per_user=50)
"""Smaller than one turn: the first message spends the day's allowance."""


@pytest.fixture
def llm():
    with FakeOpenAI() as server:
        server.set_responder(lambda _request: TURN)
        yield server


@pytest.fixture
def clock():
    return Clock(TODAY)


def service_with(uow_factory, llm, clock, quota=QUOTA, dispatched=None) -> ConversationService:
    return conversation(uow_factory, replace(CONFIG, quota=quota), llm, clock=clock,
                        dispatch=None if dispatched is None else dispatched.extend)


def say(service, clock, text: str, message_id: str, *, user="u1", chat="c1", private=True):
    incoming = message(text, user=user, chat=chat, sent=clock(), is_private=private, message_id=message_id)
    return asyncio.run(service.handle_message(incoming))


def user_turns(uow_factory, platform_user_id: str = "u1") -> list[tuple[str, str]]:
    with uow_factory() as uow:
        user_id = uow.users.identify("telegram", platform_user_id).user_id
        rows = uow.session.scalars(select(ConversationTurn).where(ConversationTurn.user_id == user_id)
                                   .order_by(ConversationTurn.id))
        return [(turn.role, turn.text) for turn in rows]


def owed(uow_factory, task: str) -> list[OutboxJob]:
    with uow_factory() as uow:
        return list(uow.session.scalars(select(OutboxJob).where(OutboxJob.task == task).order_by(OutboxJob.id)))


def test_past_the_allowance_the_user_is_told_in_english_answered_offline_and_nothing_is_lost(uow_factory, llm, clock):
    dispatched: list[int] = []
    service = service_with(uow_factory, llm, clock, dispatched=dispatched)
    first = say(service, clock, "I like oolong tea", "1")
    assert not first.offline
    assert first.notices == ()
    assert len(llm.chat_requests()) == 1
    sent_before = list(dispatched)
    second = say(service, clock, "My sister Anna lives in Berlin", "2")
    assert second.offline
    assert second.text
    assert "today's allowance" in told(second)
    assert "00:00 UTC" in told(second)
    assert len(llm.chat_requests()) == 1  # the model was not asked
    assert [role for role, _ in user_turns(uow_factory)] == ["user", "assistant", "user", "assistant"]
    assert dispatched == sent_before  # the second turn's work is owed, not sent
    later = owed(uow_factory, "extract_turn")[-1]
    assert (later.status, later.available_at) == ("pending", TOMORROW)


def test_a_chinese_speaker_is_told_in_chinese(uow_factory, llm, clock):
    service = service_with(uow_factory, llm, clock)
    say(service, clock, "我喜欢乌龙茶", "1")
    reply = say(service, clock, "我妹妹住在柏林", "2")
    assert reply.offline
    assert "额度" in told(reply)
    assert "UTC 00:00" in told(reply)


def test_their_extraction_waits_for_the_next_day_and_then_runs(uow_factory, llm, clock):
    service = service_with(uow_factory, llm, clock)
    say(service, clock, "I like oolong tea", "1")
    say(service, clock, "My sister Anna lives in Berlin", "2")
    job = owed(uow_factory, "extract_turn")[-1]
    sent: list[tuple[str, dict]] = []
    send = lambda task, payload: sent.append((task, payload))  # noqa: E731
    clock.now = TODAY + timedelta(hours=3, minutes=30)  # 23:30, still today
    assert sweep_jobs(uow_factory, send, clock.now, timedelta(minutes=2)) == 0
    clock.now = TOMORROW + timedelta(minutes=3)
    assert sweep_jobs(uow_factory, send, clock.now, timedelta(minutes=2)) == 1
    [(task, payload)] = sent
    assert (task, payload["job_id"]) == ("extract_turn", job.id)
    assert not put_off_if_over(uow_factory, QUOTA, job.id, clock.now)  # a new day, a new allowance
    llm.queue_reply({"operations": [{"op": "ADD", "type": "person", "subject": "Anna", "predicate": "lives_in",
                                     "content": "The user's sister Anna lives in Berlin", "tier": "long"}]})
    report = extract_turns(uow_factory, service.chat_model, [payload["turn_id"]], [], clock.now)
    assert report.llm_calls == 1
    assert report.added
    with uow_factory() as uow:
        user_id = uow.users.identify("telegram", "u1").user_id
        assert uow.usage.tokens_on(user_id, TOMORROW.date()) > 0
        assert "Berlin" in " ".join(m.content for m in uow.session.scalars(select(Memory)))


def test_a_job_of_a_user_who_spent_the_allowance_meanwhile_is_put_off_to_the_next_day(uow_factory, llm, clock):
    service = service_with(uow_factory, llm, clock, quota=QuotaPolicy())  # no quota while they chat
    say(service, clock, "I like oolong tea", "1")
    job = owed(uow_factory, "extract_turn")[-1]
    assert put_off_if_over(uow_factory, QUOTA, job.id, clock.now)
    again = owed(uow_factory, "extract_turn")[-1]
    assert (again.status, again.available_at) == ("pending", TOMORROW)
    assert not put_off_if_over(uow_factory, QuotaPolicy(), job.id, clock.now)


def test_an_operator_can_lift_the_quota_of_one_user(uow_factory, llm, clock):
    service = service_with(uow_factory, llm, clock)
    say(service, clock, "I like oolong tea", "1")
    with uow_factory() as uow:
        assert uow.users.set_quota_lifted(uow.users.identify("telegram", "u1").user_id, clock.now)
        uow.commit()
    reply = say(service, clock, "My sister Anna lives in Berlin", "2")
    assert not reply.offline
    assert reply.notices == ()
    assert len(llm.chat_requests()) == 2


def test_a_group_past_its_allowance_is_told_so_even_for_a_member_who_has_not_spoken(uow_factory, llm, clock):
    service = service_with(uow_factory, llm, clock, quota=QuotaPolicy(per_chat=50))
    say(service, clock, "I like oolong tea", "1", user="u1", chat="group", private=False)
    reply = say(service, clock, "and I like coffee", "2", user="u2", chat="group", private=False)
    assert reply.offline
    assert "This group" in told(reply)
    private = say(service, clock, "hello there", "3", user="u2", chat="u2")
    assert not private.offline  # the group's allowance is the group's


def test_reviews_and_dedup_of_a_user_over_quota_wait_for_a_later_run(uow_factory, llm, clock):
    service = service_with(uow_factory, llm, clock)
    say(service, clock, "I like oolong tea", "1")  # the day's allowance is spent
    with uow_factory() as uow:
        user_id = uow.users.identify("telegram", "u1").user_id
        for content in ("User likes oolong tea", "User likes oolong tea in winter evenings"):
            uow.memories.add(Memory(user_id=user_id, type="preference", content=content, source="user_stated",
                                    confidence=0.9, created_at=TODAY - timedelta(days=3)))
        uow.memories.add(Memory(user_id=user_id, type="fact", content="Born in Hangzhou", source="user_stated",
                                importance=2.6, created_at=TODAY - timedelta(days=40)))
        uow.commit()
    asked = len(llm.chat_requests())
    assert run_reviews(uow_factory, service.chat_model, clock.now, quota=QUOTA).deferred == 1
    dedup = run_dedup(uow_factory, clock.now, chat_model=service.chat_model, quota=QUOTA)
    assert (dedup.llm_calls, dedup.merged) == (0, 0)
    assert len(llm.chat_requests()) == asked
    llm.queue_reply({"decision": "keep", "reason": "not yet"})
    assert run_reviews(uow_factory, service.chat_model, TOMORROW, quota=QUOTA).kept == 1
