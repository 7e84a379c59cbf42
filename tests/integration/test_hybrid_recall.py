"""The hybrid path end to end on the hot path: memories embedded through the product's job by an
embeddings endpoint (the fake OpenAI server), the message embedded by the same endpoint, pgvector's
neighbours fused with BM25 and packed into the one LLM call's prompt. A memory that shares no search
word with the message reaches the prompt only through its vector."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from bench.fakes.openai_server import FakeOpenAI
from shared.conversation.config import ConversationConfig
from shared.conversation.messages import IncomingMessage
from shared.conversation.service import ConversationService
from shared.db.memory_models import Memory
from shared.lifecycle.embedding import embed_memories
from shared.llm.client import ChatModel
from shared.recall.embeddings import OpenAIEmbedder
from shared.repositories.vectors import VectorIndex

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
CONFIG = ConversationConfig(bot_name="Mnemo", personality="a warm friend", emotion_enabled=False, retrieval_limit=5,
                            memory_budget_tokens=700, history_turns=15, idle=timedelta(minutes=30),
                            default_timezone="UTC")
PHOTOGRAPHY = "The user loves photography and shoots film on weekends"
ANSWER = {"emotion": {"primary": "neutral", "category": "neutral", "confidence": 0.9, "indicators": []},
          "response": "Sure!", "memory_update": {"should_store": False, "entries": []}, "todos": [], "topic": None,
          "context_variables": []}


@pytest.fixture
def llm():
    with FakeOpenAI(models=("fake-chat", "fake-embed")) as server:
        yield server


def ask(llm, uow_factory, text: str, *, embedder=None, vectors=None):
    """One message through the conversation service; returns the reply and the whole prompt's text."""
    model = ChatModel(base_url=llm.base_url, api_key="test", model="fake-chat", timeout_seconds=10)
    service = ConversationService(uow_factory, CONFIG, chat_model=model, embedder=embedder, vectors=vectors,
                                  clock=lambda: NOW)
    llm.queue_reply(ANSWER)
    message = IncomingMessage(platform="console", chat_id="c1", user_id="u1", text=text, sent_at=NOW)
    try:
        reply = asyncio.run(service.handle_message(message))
    finally:
        model.close()
    return reply, "\n".join(message["content"] for message in llm.chat_requests()[-1]["messages"])


@pytest.mark.pgvector
def test_a_memory_found_only_by_its_vector_reaches_the_prompt_of_the_one_llm_call(uow_factory, llm):
    vectors = VectorIndex()
    embedder = OpenAIEmbedder(llm.base_url, "test", "fake-embed", 384, timeout_seconds=5)
    with uow_factory() as uow:
        enabled = vectors.enabled(uow)
        user_id = uow.users.identify("console", "u1").user_id
        ids = [uow.memories.add(Memory(user_id=user_id, type="preference", content=content, source="user_stated",
                                       confidence=0.9, created_at=NOW - timedelta(days=days),
                                       updated_at=NOW - timedelta(days=days))).id
               for days, content in ((30, PHOTOGRAPHY), (20, "Weekend plans: a bike ride to the old mill"))]
        uow.commit()
    question = "Should I print my photographs?"  # 'photograph' is not the stem of 'photography'
    if not enabled:  # without pgvector the same settings answer from the words alone
        reply, prompt = ask(llm, uow_factory, question, embedder=embedder, vectors=vectors)
        assert PHOTOGRAPHY not in prompt
        assert not reply.offline
        return
    assert embed_memories(uow_factory, embedder, vectors, user_id, ids) == 2

    lexical, lexical_prompt = ask(llm, uow_factory, question)
    hybrid, hybrid_prompt = ask(llm, uow_factory, question, embedder=embedder, vectors=vectors)

    assert PHOTOGRAPHY not in lexical_prompt
    assert ids[0] not in [used.id for used in lexical.memories_used]
    assert PHOTOGRAPHY in hybrid_prompt
    assert ids[0] in [used.id for used in hybrid.memories_used]
    assert len(llm.chat_requests()) == 2
    assert llm.embedding_requests()[-1]["input"] in (question, [question])


@pytest.mark.pgvector
def test_a_round_found_only_by_its_vector_reaches_the_prompt(uow_factory, llm):
    from shared.db.models import ConversationTurn
    from shared.lifecycle.embedding import embed_rounds
    from shared.recall.round_keys import key_round

    vectors = VectorIndex()
    embedder = OpenAIEmbedder(llm.base_url, "test", "fake-embed", 384, timeout_seconds=5)
    said = "Honestly I love photography and shoot film on weekends"
    with uow_factory() as uow:
        enabled = vectors.enabled(uow)
        user_id = uow.users.identify("console", "u1").user_id
        chat_id = uow.chats.get_or_create("console", "c1", "private", None).id
        line = uow.turns.add(ConversationTurn(user_id=user_id, chat_id=chat_id, role="user", text=said,
                                              created_at=NOW - timedelta(days=40)))
        uow.turns.add(ConversationTurn(user_id=user_id, chat_id=chat_id, role="assistant", text="How lovely.",
                                       reply_to_turn_id=line.id, created_at=NOW - timedelta(days=40)))
        key_round(uow, user_id, line.id, said, "How lovely.")
        uow.commit()
    question = "Should I print my photographs?"
    if not enabled:
        _, prompt = ask(llm, uow_factory, question, embedder=embedder, vectors=vectors)
        assert "shoot film on weekends" not in prompt
        return
    assert embed_rounds(uow_factory, embedder, vectors, user_id, [line.id]) == 1
    assert embed_rounds(uow_factory, embedder, vectors, user_id, [line.id]) == 0  # embedded once
    _, lexical_prompt = ask(llm, uow_factory, question)
    _, hybrid_prompt = ask(llm, uow_factory, question, embedder=embedder, vectors=vectors)
    assert "shoot film on weekends" not in lexical_prompt
    assert "you: Honestly I love photography and shoot film on weekends / me: How lovely." in hybrid_prompt
