"""The background work records what its model requests cost, for the user they were for, in the work's own
transaction: the knowledge monitor, episodes, reviews, dedup and memory embeddings (real PostgreSQL, the
fake OpenAI server)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from bench.fakes.openai_server import FakeOpenAI
from shared.db.models import ConversationTurn
from shared.lifecycle.dedup import run_dedup
from shared.lifecycle.embedding import embed_memories
from shared.lifecycle.episodes import summarise_session
from shared.lifecycle.extraction import extract_turns
from shared.lifecycle.reviews import run_reviews
from shared.llm.client import ChatModel
from shared.recall.embeddings import OpenAIEmbedder
from shared.repositories.vectors import VectorIndex
from tests import builders

NOW = datetime(2026, 11, 22, 3, 0, tzinfo=UTC)
MONTH_START = date(2026, 11, 1)


@pytest.fixture
def llm():
    with FakeOpenAI(personality="openai") as server:
        yield server


@pytest.fixture
def model(llm):
    return ChatModel(base_url=llm.base_url, api_key="test", model="fake-chat", timeout_seconds=10)


def conversation(uow_factory, *lines: str, user: str = "u1", closed: bool = False) -> tuple[int, int, int, list[int]]:
    """A session of user lines and bot replies; (user id, chat id, session id, user turn ids)."""
    with uow_factory() as uow:
        user_id = uow.users.identify("telegram", user).user_id
        chat_id = uow.chats.get_or_create("telegram", f"chat-{user}", "private").id
        session = uow.sessions.start(user_id, chat_id, NOW - timedelta(hours=1))
        turn_ids = []
        for minute, said in enumerate(lines):
            turn = uow.turns.add(ConversationTurn(user_id=user_id, chat_id=chat_id, session_id=session.id, role="user",
                                                  text=said, created_at=NOW - timedelta(minutes=59 - minute)))
            turn_ids.append(turn.id)
        if closed:
            uow.sessions.close(session.id, NOW - timedelta(minutes=5))
        uow.commit()
    return user_id, chat_id, session.id, turn_ids


def remember(uow_factory, content: str, *, user: str = "u1", **fields) -> tuple[int, int]:
    fields.setdefault("created_at", NOW - timedelta(days=40))
    return builders.remember(uow_factory, user, content, type_=fields.pop("type", "preference"), confidence=0.9,
                             **fields)


def spent(uow_factory, user_id: int) -> list[tuple[str, int | None, bool]]:
    """(kind, chat id, estimated) of the user's recorded requests, oldest first."""
    with uow_factory() as uow:
        return [(c.kind, c.chat_id, c.estimated) for c in reversed(uow.usage.recent_calls(user_id, 50))]


def kinds(uow_factory, user_id: int) -> dict[str, int]:
    with uow_factory() as uow:
        return {kind: totals.calls for kind, totals in uow.usage.by_kind(MONTH_START, user_id=user_id)}


def test_the_knowledge_monitor_records_its_call_with_the_chat_of_the_turns(uow_factory, llm, model):
    user_id, chat_id, _session, turn_ids = conversation(uow_factory, "I live in Berlin now")
    llm.queue_reply({"operations": [{"op": "SKIP"}]})
    report = extract_turns(uow_factory, model, turn_ids, [], NOW)
    assert report.llm_calls == 1
    assert report.extracted_turn_ids == turn_ids
    assert spent(uow_factory, user_id) == [("extraction", chat_id, False)]


def test_a_batch_another_run_extracted_first_still_records_the_call_it_paid_for(uow_factory, llm, model):
    user_id, _chat, _session, turn_ids = conversation(uow_factory, "I live in Berlin now")

    def answer_after_another_run(_request):
        extract_turns(uow_factory, None, turn_ids, [], NOW)  # the other worker, offline, wins the race
        return {"operations": [{"op": "SKIP"}]}

    llm.set_responder(answer_after_another_run)
    assert extract_turns(uow_factory, model, turn_ids, [], NOW).extracted_turn_ids == []
    assert kinds(uow_factory, user_id) == {"extraction": 1}


def test_an_episode_summary_records_its_call(uow_factory, llm, model):
    user_id, chat_id, session_id, _turns = conversation(uow_factory, "We talked about tea", "and Berlin",
                                                         closed=True)
    llm.queue_reply({"summary": "talked about tea and Berlin", "entities": ["tea"], "importance": 1.0})
    assert summarise_session(uow_factory, model, session_id, NOW) is not None
    assert spent(uow_factory, user_id) == [("episode", chat_id, False)]


def test_a_review_records_every_round_with_its_decision(uow_factory, llm, model):
    user_id, _memory = remember(uow_factory, "My name is Alice and I was born in Hangzhou", importance=2.6)
    llm.queue_reply({"action": "search", "query": "Hangzhou"})
    llm.queue_reply({"decision": "core", "reason": "identity"})
    assert run_reviews(uow_factory, model, NOW).promoted == 1
    assert spent(uow_factory, user_id) == [("review", None, False), ("review", None, False)]


def test_dedup_records_the_confirmation_of_an_unsure_cluster_for_its_user(uow_factory, llm, model):
    user_id, first = remember(uow_factory, "User likes oolong tea")
    _same, second = remember(uow_factory, "User likes oolong tea in winter evenings")
    llm.queue_reply({"groups": [[first, second]], "reason": "the same preference"})
    assert run_dedup(uow_factory, NOW, chat_model=model).llm_calls == 1
    assert spent(uow_factory, user_id) == [("dedup", None, False)]


@pytest.mark.pgvector
def test_embedding_a_memory_records_the_request_with_the_vector(uow_factory, llm, request):
    user_id, memory_id = remember(uow_factory, "I like oolong tea")
    embedder = OpenAIEmbedder(llm.base_url, "test", "fake-embed", dimensions=384)
    stored = embed_memories(uow_factory, embedder, VectorIndex(), user_id, [memory_id], now=NOW)
    with_vectors = request.node.callspec.params["migrated_url"] == "embedded"
    assert stored == int(with_vectors)
    assert spent(uow_factory, user_id) == ([("embedding", None, False)] if with_vectors else [])
