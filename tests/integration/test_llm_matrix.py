"""The compatibility matrix: the hot path, the knowledge monitor, an episode summary and a review,
through the real ``openai`` SDK, against every server personality the fake reproduces.

Each personality is a documented behaviour of a real server or model (tests/fakes/llm_personalities.py).
Whatever it does, the user is answered in words, in their language, and never shown raw JSON;
memories are stored where the personality's answer allows it. One database (the system PostgreSQL):
nothing here depends on pgvector.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select, text

from bench.databases import create_database, drop_database
from bench.fakes.llm_personalities import PERSONALITIES
from bench.fakes.openai_server import FakeOpenAI
from shared.conversation.config import ConversationConfig
from shared.conversation.messages import IncomingMessage
from shared.conversation.prompt import app_note
from shared.conversation.service import ConversationService
from shared.db.engine import make_engine, session_factory
from shared.db.memory_models import Episode, Memory
from shared.db.models import ConversationTurn
from shared.lifecycle.episodes import summarise_session
from shared.lifecycle.extraction import extract_turns
from shared.lifecycle.reviews import run_reviews
from shared.llm.client import ChatModel
from shared.repositories.uow import UnitOfWork
from tests.conftest import APP_TABLES

NOW = datetime(2026, 11, 22, 2, 0, tzinfo=UTC)
CONFIG = ConversationConfig(bot_name="Mnemo", personality="a warm friend", emotion_enabled=True, retrieval_limit=5,
                            memory_budget_tokens=700, history_turns=15, idle=timedelta(minutes=30),
                            default_timezone="Asia/Shanghai")
CJK = re.compile(r"[\u4e00-\u9fff]")
STORES_FROM_THE_TURN = {"openai", "deepseek", "qwen-thinking", "qwen", "llama.cpp", "llama-cpp-python", "ollama",
                        "vllm", "reasoning-tags", "prose", "fenced"}
"""Personalities whose turn answer is a whole, valid object (the rambler is cut, one answers {}, one stops early)."""
FIELD_NAMES = ("memory_update", "should_store", "context_variables", '"response"', '"emotion"')


def ideal_answer(request: dict[str, Any]) -> dict[str, Any]:
    """What a capable model would answer to each of Mnemo's requests, in the user's language."""
    system = request["messages"][0]["content"]
    last = request["messages"][-1]["content"]
    last = last[:len(last) - len(app_note(last))]  # the user's words, without what the app added
    if system.startswith("You are the memory keeper"):
        return {"operations": [{"op": "ADD", "type": "preference", "subject": "user", "predicate": "likes_tea",
                                "content": "I love jasmine tea", "tier": "long"}]}
    if system.startswith("You summarise"):
        return {"summary": "talked about tea", "entities": ["tea"], "importance": 1.2}
    if system.startswith("You review"):
        return {"decision": "core", "reason": "lasting"}
    chinese = bool(CJK.search(last))
    return {"response": "茉莉花茶很香！" if chinese else "Jasmine tea is lovely!",
            "emotion": {"primary": "happy", "category": "positive", "confidence": 0.9, "indicators": []},
            "memory_update": {"should_store": True, "entries": [
                {"type": "preference", "subject": "user", "predicate": "likes_tea",
                 "content": "我喜欢茉莉花茶" if chinese else "I love jasmine tea", "tier": "long"}]},
            "todos": [], "topic": "tea", "context_variables": []}


@pytest.fixture(scope="module")
def matrix_engine(system_pg_admin_url: str, migrated_system_template: str) -> Iterator[Any]:
    url = create_database(system_pg_admin_url, template=migrated_system_template)
    engine = make_engine(url)
    yield engine
    engine.dispose()
    drop_database(system_pg_admin_url, url)


@pytest.fixture
def uows(matrix_engine) -> Iterator[Any]:
    factory = session_factory(matrix_engine)
    yield lambda: UnitOfWork(factory)
    with matrix_engine.begin() as connection:
        connection.execute(text(f"TRUNCATE {', '.join(APP_TABLES)} RESTART IDENTITY CASCADE"))


@pytest.fixture(params=sorted(PERSONALITIES))
def server(request: pytest.FixtureRequest) -> Iterator[FakeOpenAI]:
    with FakeOpenAI(personality=request.param) as llm:
        llm.set_responder(ideal_answer)
        yield llm


def say(service: ConversationService, words: str, number: int) -> Any:
    message = IncomingMessage(platform="telegram", chat_id="c1", user_id="u1", text=words, sent_at=NOW,
                              is_private=True, display_name="Lin", message_id=str(number))
    return asyncio.run(service.handle_message(message))


def assert_words_for_a_person(reply_text: str, chinese: bool) -> None:
    assert reply_text.strip()
    assert not reply_text.lstrip().startswith(("{", "[", "`", "<"))
    assert not any(name in reply_text for name in FIELD_NAMES)
    assert bool(CJK.search(reply_text)) is chinese


def test_the_hot_path_answers_in_words_in_the_users_language(server: FakeOpenAI, uows) -> None:
    model = ChatModel(server.base_url, "k", "fake-chat", 10)
    service = ConversationService(uows, CONFIG, chat_model=model, clock=lambda: NOW)
    personality = server.personality.name

    replies = [say(service, "我很喜欢喝茉莉花茶。", 1), say(service, "I really love jasmine tea.", 2),
               say(service, "Tell me something nice.", 3)]

    for reply, chinese in zip(replies, (True, False, False), strict=True):
        assert_words_for_a_person(reply.text, chinese)
    stored = [memory_id for reply in replies for memory_id in reply.stored_memory_ids]
    if personality in STORES_FROM_THE_TURN:
        assert stored
        assert not any(reply.offline for reply in replies)
    if personality == "rambler":
        assert all(reply.text.startswith(("茉莉花茶很香", "Jasmine tea is lovely")) for reply in replies)
    if stored:  # what was remembered reached the model, in an app note, as each server received it
        last = server.chat_requests()[-1]["messages"]
        notes = [app_note(message["content"]) for message in last if message["role"] == "user"]
        assert app_note(last[-1]["content"]).startswith("<app_note>")
        assert "Current time" in notes[-1]
        assert any("jasmine tea" in note or "茉莉花茶" in note for note in notes)
    assert all(r.get("max_tokens") for r in server.chat_requests())


def test_background_jobs_store_and_write_only_words(server: FakeOpenAI, uows) -> None:
    model = ChatModel(server.base_url, "k", "fake-chat", 10)
    user_id, session_id, turn_id = _one_exchange(uows)

    report = extract_turns(uows, model, [turn_id], [], NOW)
    episode = summarise_session(uows, model, session_id, NOW + timedelta(hours=1))
    with uows() as uow:
        uow.memories.add(Memory(user_id=user_id, type="fact", subject="user", predicate="name",
                                content="My name is Lin", source="user_stated", confidence=0.9, importance=2.6,
                                created_at=NOW, updated_at=NOW))
        uow.commit()
    reviews = run_reviews(uows, model, NOW + timedelta(hours=2))

    assert report.extracted_turn_ids == [turn_id]
    with uows() as uow:
        contents = [m.content for m in uow.session.scalars(select(Memory).where(Memory.user_id == user_id))]
        summaries = [e.summary for e in uow.session.scalars(select(Episode))]
    assert "I love jasmine tea" in contents  # by the model, or by the rules when its JSON was unusable
    assert episode is not None
    assert summaries
    assert all("{" not in s and "summary" not in s for s in summaries)
    if server.personality.name not in ("empty-object", "rambler", "stops-mid-json"):  # their answers never close
        assert "talked about tea" in summaries[0]
        assert reviews.promoted == 1
    assert all(r.get("max_tokens") for r in server.chat_requests())
    assert all(json.dumps(r).count('"stream": true') == 1 for r in server.chat_requests())


def _one_exchange(uows) -> tuple[int, int, int]:
    with uows() as uow:
        user_id = uow.users.identify("telegram", "u1").user_id
        chat_id = uow.chats.get_or_create("telegram", "c1", "private").id
        session_id = uow.sessions.start(user_id, chat_id, NOW).id
        turn = uow.turns.add(ConversationTurn(user_id=user_id, chat_id=chat_id, session_id=session_id, role="user",
                                              text="I love jasmine tea", created_at=NOW))
        uow.turns.add(ConversationTurn(user_id=user_id, chat_id=chat_id, session_id=session_id, role="assistant",
                                       text="Jasmine tea is lovely!", created_at=NOW + timedelta(seconds=5)))
        uow.commit()
        return user_id, session_id, turn.id
