"""Extraction per sitting (issue 30): the knowledge monitor reads a sitting's waiting turns in one call, when
enough wait or when the sitting closes, with each memory drawn from its own turn (real PostgreSQL, the real
ChatModel against a fake OpenAI server)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from shared.conversation.config import ConversationConfig
from shared.conversation.extraction_timing import ExtractionTiming
from shared.conversation.messages import IncomingMessage
from shared.conversation.service import ConversationService
from shared.db.memory_models import Memory, OutboxJob
from shared.db.models import ConversationTurn
from shared.lifecycle.extraction import extract_sitting
from tests.integration.test_knowledge_monitor import add, conversation, operations

START = datetime(2026, 1, 3, 10, 0, tzinfo=UTC)


def session_of(uow_factory, turn_id: int) -> int:
    with uow_factory() as uow:
        return uow.session.get(ConversationTurn, turn_id).session_id


def test_a_closed_sittings_waiting_turns_are_read_in_one_call_each_memory_from_its_own_turn(uow_factory, llm, model):
    user_id, turn_ids = conversation(uow_factory, [("My sister Lena is visiting", "How fun!"),
                                                   ("I just adopted a kitten", "Congratulations!"),
                                                   ("I work as a nurse in Leeds", "That sounds demanding.")])
    llm.queue_reply(operations(add("The user's sister is called Lena", predicate="sister_name", type_="person"),
                               add("The user adopted a kitten", predicate="pet"),
                               add("The user works as a nurse", predicate="job")))
    report = extract_sitting(uow_factory, model, session_of(uow_factory, turn_ids[0]), START + timedelta(hours=1))
    assert len(llm.chat_requests()) == 1
    assert report.llm_calls == 1
    with uow_factory() as uow:
        sources = {m.predicate: m.source_turn_id for m in uow.session.scalars(
            select(Memory).where(Memory.user_id == user_id))}
        assert all(uow.session.get(ConversationTurn, turn_id).extracted for turn_id in turn_ids)
    assert sources == {"sister_name": turn_ids[0], "pet": turn_ids[1], "job": turn_ids[2]}
    assert extract_sitting(uow_factory, model, session_of(uow_factory, turn_ids[0]), START).llm_calls == 0


def test_the_monitor_of_a_sitting_sees_the_memories_every_one_of_its_turns_showed(uow_factory, llm, model):
    user_id, turn_ids = conversation(uow_factory, [("I moved last month", "Where to?"),
                                                   ("Berlin, not Paris any more", "Nice!")])
    with uow_factory() as uow:
        home = uow.memories.add(Memory(user_id=user_id, type="fact", subject="user", predicate="lives_in",
                                       content="The user lives in Paris", source="user_stated", confidence=0.9,
                                       created_at=START - timedelta(days=9), updated_at=START - timedelta(days=9)))
        uow.session.get(ConversationTurn, turn_ids[0]).memory_ids = [home.id]  # only the first turn showed it
        uow.commit()
    llm.queue_reply(operations({"op": "UPDATE", "id": "m1", "content": "The user lives in Berlin"}))
    extract_sitting(uow_factory, model, session_of(uow_factory, turn_ids[0]), START + timedelta(hours=1))
    assert "The user lives in Paris" in llm.chat_requests()[0]["messages"][-1]["content"]
    with uow_factory() as uow:
        current = uow.session.scalars(select(Memory).where(Memory.user_id == user_id,
                                                           Memory.superseded_by.is_(None))).all()
    assert [m.content for m in current] == ["The user lives in Berlin"]


def owed_extractions(uow_factory) -> list[int]:
    with uow_factory() as uow:
        return [job.payload["turn_id"] for job in uow.session.scalars(
            select(OutboxJob).where(OutboxJob.task == "extract_turn").order_by(OutboxJob.id))]


def test_a_turn_owes_the_monitor_a_call_only_once_enough_of_its_sitting_waits(uow_factory):
    config = ConversationConfig(bot_name="Mnemo", personality="a friend", emotion_enabled=True, retrieval_limit=5,
                                memory_budget_tokens=700, history_turns=15, idle=timedelta(minutes=30),
                                default_timezone="UTC", extraction=ExtractionTiming(batch_turns=3))
    service = ConversationService(uow_factory, config, chat_model=None)
    now = datetime.now(UTC)
    for index, text in enumerate(("I live in Leeds", "I have a cat", "I like tea", "I play chess")):
        asyncio.run(service.handle_message(IncomingMessage(platform="telegram", chat_id="4", user_id="4", text=text,
                                                           sent_at=now + timedelta(seconds=index),
                                                           message_id=str(index))))
    with uow_factory() as uow:
        third = uow.turns.by_platform_message(uow.chats.get_or_create("telegram", "4", "private").id, "user", "2")
    assert owed_extractions(uow_factory) == [third.id]  # the fourth waits for more, or for the sitting's close
