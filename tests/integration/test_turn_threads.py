"""Open threads noted on the hot path (real PostgreSQL, a fake OpenAI-compatible server): the model's ``threads``
when it gives them, the offline rules' reading otherwise; a cancellation or a correction closes one; a paused user
has none noted; the offer of follow-ups comes once, in the user's language."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from bench.fakes.openai_server import FakeOpenAI
from shared.conversation.config import ConversationConfig
from shared.conversation.messages import IncomingMessage
from shared.conversation.service import ConversationService
from shared.db.thread_models import OpenThread
from shared.followups.texts import OFFER
from shared.llm.client import ChatModel
from shared.llm.turn_schema import TURN_JSON_SCHEMA
from tests.told import told

START = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)  # Thursday 20:00 in Shanghai
CONFIG = ConversationConfig(bot_name="Mnemo", personality="a warm friend", emotion_enabled=True, retrieval_limit=5,
                            memory_budget_tokens=700, history_turns=15, idle=timedelta(minutes=30),
                            default_timezone="Asia/Shanghai")


def turn(response: str, threads=(), entries=()) -> dict:
    return {"emotion": {"primary": "neutral", "category": "neutral", "confidence": 0.9, "indicators": []},
            "response": response,
            "memory_update": {"should_store": bool(entries), "entries": [
                {"type": "event", "subject": "user", "predicate": p, "content": c, "tier": "long"}
                for p, c in entries]},
            "todos": [], "topic": None, "context_variables": [],
            "threads": [{"what": w, "when": d, "cancelled": x} for w, d, x in threads]}


@pytest.fixture
def llm():
    with FakeOpenAI(models=("fake-chat",)) as server:
        yield server


@pytest.fixture
def service(uow_factory, llm):
    model = ChatModel(base_url=llm.base_url, api_key="test", model="fake-chat", timeout_seconds=10)
    return ConversationService(uow_factory, CONFIG, chat_model=model, clock=lambda: START)


def say(service, text: str, user: str = "u1"):
    message = IncomingMessage(platform="telegram", chat_id=user, user_id=user, text=text, sent_at=START,
                              is_private=True, display_name="Ann")
    return asyncio.run(service.handle_message(message))


def threads(uow_factory) -> list[OpenThread]:
    with uow_factory() as uow:
        return list(uow.session.scalars(select(OpenThread).order_by(OpenThread.id)))


def test_the_turn_schema_asks_for_threads_with_what_when_and_cancelled():
    thread = TURN_JSON_SCHEMA["properties"]["threads"]["items"]
    assert thread["required"] == ["what", "when", "cancelled"] and "threads" in TURN_JSON_SCHEMA["required"]


def test_the_models_thread_is_noted_with_its_words_time_and_the_memory_stored_with_it(service, llm, uow_factory):
    llm.queue_reply(turn("加油！", threads=[("周五的英文面试", "2026-11-27T10:00:00+08:00", False)],
                         entries=[("worry", "最担心英文自我介绍")]))

    reply = say(service, "周五上午十点英文面试，最担心自我介绍")

    [thread] = threads(uow_factory)
    assert (thread.what, thread.happens_at, thread.day_only, thread.language) == (
        "周五的英文面试", datetime(2026, 11, 27, 2, 0, tzinfo=UTC), False, "zh")
    assert thread.memory_id == reply.stored_memory_ids[0] and thread.source_turn_id is not None
    assert reply.notices and OFFER[1] in told(reply)


def test_when_the_model_notes_none_the_rules_do_and_a_thread_in_the_past_is_dropped(service, llm, uow_factory):
    llm.queue_reply(turn("Good luck!"))
    llm.queue_reply(turn("Oh no.", threads=[("your exam", "2026-11-20T09:00:00+08:00", False)]))

    say(service, "my exam is tomorrow")
    say(service, "I had an exam last week", user="u2")

    [thread] = threads(uow_factory)
    assert (thread.what, thread.day_only) == ("your exam", True)


def test_a_cancellation_from_the_model_or_the_rules_closes_the_thread_and_the_offer_comes_once(
        service, llm, uow_factory):
    llm.queue_reply(turn("Good luck!", threads=[("your interview", "2026-11-27T15:00:00+08:00", False)]))
    llm.queue_reply(turn("Ah, too bad.", threads=[("your interview", "", True)]))
    llm.queue_reply(turn("Fingers crossed.", threads=[("your dentist appointment", "2026-11-30T09:00:00+08:00",
                                                       False)]))
    llm.queue_reply(turn("OK."))

    first = say(service, "interview tomorrow at 3pm")
    say(service, "they called it off")
    third = say(service, "dentist on Monday")
    say(service, "never mind, the dentist appointment got cancelled")

    interview, dentist = threads(uow_factory)
    assert (interview.status, interview.closed_reason) == ("closed", "cancelled")
    assert (dentist.status, dentist.closed_reason) == ("closed", "cancelled")  # the rules read it
    assert OFFER[0] in (told(first) or "") and OFFER[0] not in (told(third) or "")


def test_nothing_is_noted_while_remembering_is_paused(service, llm, uow_factory):
    llm.queue_reply(turn("Good luck!", threads=[("your exam", "2026-11-27T09:00:00+08:00", False)]))
    with uow_factory() as uow:
        identity = uow.users.identify("telegram", "u1")
        uow.users.set_paused(identity.user_id, START)
        uow.commit()

    say(service, "my exam is tomorrow")

    assert threads(uow_factory) == []
