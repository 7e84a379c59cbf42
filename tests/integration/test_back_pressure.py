"""Back-pressure on real PostgreSQL: when the model slows down, turns queue with a bound, the waiting user
hears "busy, one moment", the one past the bound gets an offline answer at once, and nothing is lost."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import select

from bench.fakes.openai_server import FakeOpenAI
from shared.conversation.messages import IncomingMessage
from shared.conversation.notice_texts import Notice, NoticeCode, notice_text
from shared.conversation.pressure import PressureConfig
from shared.conversation.service import ConversationService
from shared.db.memory_models import Memory, OutboxJob
from shared.db.models import ConversationTurn
from tests import builders
from tests.builders import chat_model, conversation, conversation_config
from tests.waiting import until

CONFIG = conversation_config()
pytestmark = pytest.mark.committed
"""Turns run concurrently, each with units of work of its own on worker threads: they cannot share the one
connection of a test that is rolled back."""
SLOW_MODEL_SECONDS = 3.0  # long enough for every other turn to reach the gate while the first holds the slot
REPLY = {"response": "Hello from the model.", "emotion": None, "memory_update": None, "todos": [], "topic": None,
         "context_variables": []}


def service_with(uow_factory, llm: FakeOpenAI, pressure: PressureConfig) -> ConversationService:
    return conversation(uow_factory, replace(CONFIG, pressure=pressure), chat_model(llm, timeout_seconds=30))


def message(user: str, text: str = "hello, how are you?") -> IncomingMessage:
    return builders.message(text, user=user, chat=f"chat-{user}", name=user, message_id=f"{user}-1")


def busy_count() -> float:
    return REGISTRY.get_sample_value("mnemo_messages_total", {"platform": "telegram", "outcome": "busy"}) or 0.0


async def three_users_at_once(service: ConversationService, llm: FakeOpenAI) -> tuple[list, list[str]]:
    told: list[str] = []
    llm.queue_reply(REPLY, delay=SLOW_MODEL_SECONDS)
    first = asyncio.create_task(service.handle_message(message("u1")))
    await until(llm.chat_requests, what="u1's model call")  # u1 holds the only slot, its model call under way

    async def tell(user: str) -> None:
        told.append(user)

    second = asyncio.create_task(service.handle_message(message("u2"), on_busy=lambda: tell("u2")))
    await until(lambda: service.gate.waiting, what="u2 to wait at the gate")
    third = await service.handle_message(message("u3", "我今天好累"), on_busy=lambda: tell("u3"))
    return [await first, await second, third], told


def test_a_slow_model_queues_turns_with_a_bound_and_nobody_is_left_in_silence(uow_factory, llm):
    service = service_with(uow_factory, llm, PressureConfig(slots=1, queue_limit=1, busy_after=0.0,
                                                            give_up_after=60.0))
    llm.set_responder(lambda _request: REPLY)
    before = busy_count()

    (first, second, third), told = asyncio.run(three_users_at_once(service, llm))

    assert (first.text, first.offline) == ("Hello from the model.", False)
    assert (second.text, second.offline) == ("Hello from the model.", False)
    assert told == ["u2"]
    assert (third.offline, third.busy, third.notices) == (True, True, (Notice(NoticeCode.BUSY),))
    assert third.language.chinese  # the busy notice is shown in Chinese
    assert third.text.strip()
    assert len(llm.chat_requests()) == 2
    assert busy_count() - before == 1
    assert (service.gate.running, service.gate.waiting) == (0, 0)
    with uow_factory() as uow:  # every message and every answer recorded; the worker still reads u3's message
        turns = uow.session.scalars(select(ConversationTurn).order_by(ConversationTurn.id)).all()
        assert sorted(t.text for t in turns if t.role == "user") == ["hello, how are you?"] * 2 + ["我今天好累"]
        assert sum(t.role == "assistant" for t in turns) == 3
        assert not any(t.extracted for t in turns if t.role == "user")  # each waits for its sitting to be read


def test_a_turn_that_waits_too_long_for_the_model_is_answered_offline(uow_factory, llm):
    service = service_with(uow_factory, llm, PressureConfig(slots=1, queue_limit=8, busy_after=0.0,
                                                            give_up_after=0.2))
    llm.set_responder(lambda _request: REPLY)

    async def two() -> list:
        llm.queue_reply(REPLY, delay=SLOW_MODEL_SECONDS)
        first = asyncio.create_task(service.handle_message(message("u1")))
        await until(llm.chat_requests, what="the first turn's model call")
        return [await service.handle_message(message("u2")), await first]

    late, first = asyncio.run(two())

    assert (late.offline, late.busy, late.notices) == (True, True, (Notice(NoticeCode.BUSY),))
    assert not first.offline
    assert len(llm.chat_requests()) == 1


def test_a_user_flooding_past_the_message_rate_gets_quick_answers_and_takes_nothing_from_others(
        uow_factory, llm, migrated_system_db):
    from limits.storage import MemoryStorage

    from shared.limits import SharedLimit

    service = conversation(uow_factory, CONFIG, chat_model(llm, timeout_seconds=30),
                           message_limit=SharedLimit(MemoryStorage(), "messages", "3/minute"))
    llm.set_responder(lambda _request: REPLY)

    def say(user: str, number: int, text: str = "hello again"):
        incoming = replace(message(user, text), message_id=f"{user}-{number}")
        return asyncio.run(service.handle_message(incoming))

    flood = [say("flooder", number) for number in range(5)]
    other = say("neighbour", 0)

    assert [reply.offline for reply in flood] == [False, False, False, True, True]
    assert flood[3].limited
    [told] = flood[3].notices
    assert told.code is NoticeCode.FLOODED and 0 < dict(told.params)["seconds"] <= 60
    assert notice_text(told, chinese=False).startswith("You're sending messages faster than I can think")
    assert (other.text, other.offline) == ("Hello from the model.", False)
    assert len(llm.chat_requests()) == 4
    with uow_factory() as uow:  # every message of the flood is kept, and answered
        turns = uow.session.scalars(select(ConversationTurn)).all()
        assert sum(t.role == "user" for t in turns) == 6
        assert sum(t.role == "assistant" for t in turns) == 6


def test_two_messages_of_one_user_answered_at_once_each_get_their_own_reply_whichever_lands_first(uow_factory, llm):
    service = service_with(uow_factory, llm, PressureConfig(slots=4, queue_limit=8, busy_after=5.0,
                                                            give_up_after=60.0))
    slow = {**REPLY, "response": "An answer to the first message."}
    quick = {**REPLY, "response": "An answer to the second message."}

    async def both() -> list:
        llm.queue_reply(slow, delay=1.0)
        llm.queue_reply(quick)
        first = asyncio.create_task(service.handle_message(message("u1", "first message")))
        await until(llm.chat_requests, what="the first turn's model call")
        second = await service.handle_message(replace(message("u1", "second message"), message_id="u1-2"))
        return [await first, second]

    first, second = asyncio.run(both())

    assert (first.text, first.duplicate) == ("An answer to the first message.", False)
    assert (second.text, second.duplicate) == ("An answer to the second message.", False)
    with uow_factory() as uow:  # the second answer was stored first, and each says which message it answers
        turns = {t.id: t for t in uow.session.scalars(select(ConversationTurn))}
        answers = sorted((t for t in turns.values() if t.role == "assistant"), key=lambda t: t.id)
        assert [turns[a.reply_to_turn_id].text for a in answers] == ["second message", "first message"]


def test_a_conversation_forgotten_while_its_reply_is_written_gets_the_reply_and_keeps_nothing_of_it(uow_factory, llm):
    from shared.commands.memories import forget_everything

    service = service_with(uow_factory, llm, PressureConfig(slots=4, queue_limit=8, busy_after=5.0,
                                                            give_up_after=60.0))
    remembering = {**REPLY, "response": "Green tea it is.", "memory_update": {"should_store": True, "entries": [
        {"type": "preference", "subject": "user", "predicate": "likes", "content": "likes green tea",
         "tier": "long"}]}}

    async def forget_meanwhile():
        llm.queue_reply(remembering, delay=1.0)
        answering = asyncio.create_task(service.handle_message(message("u1", "I like green tea")))
        await until(llm.chat_requests, what="the first turn's model call")
        with uow_factory() as uow:  # "/forget all", pressed while the model writes
            user_id = uow.session.scalars(select(ConversationTurn.user_id)).one()
            forget_everything(uow, user_id, datetime.now(UTC))
            uow.commit()
        return await answering

    reply = asyncio.run(forget_meanwhile())

    assert (reply.text, reply.offline) == ("Green tea it is.", False)
    with uow_factory() as uow:
        assert uow.session.scalars(select(ConversationTurn)).all() == []
        assert [job.task for job in uow.session.scalars(select(OutboxJob))] == []
        assert uow.session.scalars(select(Memory)).all() == []
