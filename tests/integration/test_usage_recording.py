"""Every model and embedding request is recorded, as the server reported it: the client and the embedder
through the real ``openai`` SDK against the fake OpenAI server (OpenAI's cached tokens, DeepSeek's cache
fields, plain counts, no usage at all), and the hot path on real PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import UTC, date, datetime

import pytest

from bench.fakes.openai_server import FakeOpenAI
from shared.conversation.service import ConversationService
from shared.db.usage_models import MAX_MODEL_CHARS, UsageTotals
from shared.llm.metering import CallUsage, metered, reported_usage
from shared.recall.embeddings import OpenAIEmbedder
from shared.repositories.usage import CALLS_PER_STATEMENT
from tests.builders import PER_TURN, chat_model, conversation, conversation_config, message, model_turn

NOW = datetime(2026, 11, 22, 2, 0, tzinfo=UTC)
SYSTEM = "You are the memory keeper. Answer with one JSON object. " + "Keep only what the user said. " * 20
QUESTION = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "I like oolong tea. JSON please."}]
TURN = model_turn("Oolong it is.")
CONFIG = conversation_config(extraction=PER_TURN)
model_of = chat_model


def two_json_answers(personality: str, *, streaming: bool = True):
    """The meter after the same question twice (the second finds its prefix in the server's cache)."""
    with FakeOpenAI(personality=personality) as server:
        server.set_responder(lambda _request: {"operations": [{"op": "SKIP"}]})
        model = model_of(server)
        model.endpoint.streaming = streaming
        with metered("extraction") as meter:
            model.complete_json(QUESTION)
            model.complete_json(QUESTION)
        return meter.calls


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "whole"])
def test_openai_reports_the_cached_part_of_a_repeated_prompt(streaming):
    first, second = two_json_answers("openai", streaming=streaming)
    assert (first.kind, first.model, first.estimated) == ("extraction", "fake-chat", False)
    assert first.prompt_tokens > 0
    assert first.completion_tokens > 0
    assert first.latency_ms >= 0
    assert first.cached_tokens == 0
    assert 0 < second.cached_tokens <= second.prompt_tokens == first.prompt_tokens


def test_deepseeks_cache_hit_tokens_count_as_cached():
    first, second = two_json_answers("deepseek-cache")
    assert first.cached_tokens == 0
    assert 0 < second.cached_tokens <= second.prompt_tokens
    assert not second.estimated


def test_a_server_reporting_plain_counts_has_nothing_cached():
    first, second = two_json_answers("llama.cpp")
    assert (first.cached_tokens, second.cached_tokens) == (0, 0)
    assert not first.estimated
    assert first.prompt_tokens > 0


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "whole"])
def test_a_server_reporting_no_usage_gets_an_estimate_marked_as_one(streaming):
    first, second = two_json_answers("no-usage", streaming=streaming)
    for call in (first, second):
        assert call.estimated
        assert call.prompt_tokens > 100
        assert call.completion_tokens > 0
        assert call.cached_tokens == 0


def test_every_request_of_a_retried_turn_is_noted_and_none_outside_a_meter():
    with FakeOpenAI() as server:
        server.queue_error(500)
        server.queue_reply(TURN)
        model = model_of(server)
        with metered("turn") as meter:
            completion = model.complete_turn(QUESTION)
        model.complete_json(QUESTION)  # no meter open: noted nowhere
    assert completion.output is not None
    assert completion.attempts == 2
    assert [call.kind for call in meter.calls] == ["turn"]  # the refused request was not answered: no usage


@pytest.mark.parametrize("personality, estimated", [("openai", False), ("no-usage", True)])
def test_embedding_requests_are_noted_with_the_servers_count_or_an_estimate(personality, estimated):
    with FakeOpenAI(personality=personality) as server:
        embedder = OpenAIEmbedder(server.base_url, "test", "fake-embed", dimensions=384)
        with metered("embedding") as meter:
            embedder.embed(["I like oolong tea", "我住在上海"])
    [call] = meter.calls
    assert (call.kind, call.model, call.estimated, call.completion_tokens) == ("embedding", "fake-embed", estimated, 0)
    assert call.prompt_tokens > 0


def test_usage_is_read_from_sdk_objects_and_plain_dicts_alike():
    assert reported_usage(None) == {}
    assert reported_usage({"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12,
                           "prompt_tokens_details": {"cached_tokens": 8}})["cached_tokens"] == 8
    assert reported_usage({"prompt_tokens": 10, "prompt_cache_hit_tokens": 6})["cached_tokens"] == 6
    assert "cached_tokens" not in reported_usage({"prompt_tokens": 10, "completion_tokens": 1})


# The hot path on PostgreSQL


def say(service: ConversationService, text: str, message_id: str, *, user="u1", chat="c1", private=True):
    incoming = message(text, user=user, chat=chat, sent=NOW, is_private=private, message_id=message_id)
    return asyncio.run(service.handle_message(incoming))


def usage_of(uow_factory, platform_user_id: str = "u1"):
    """(the user's requests newest first, the sums by kind, the user id)."""
    with uow_factory() as uow:
        user_id = uow.users.identify("telegram", platform_user_id).user_id
        calls = uow.usage.recent_calls(user_id, 50)
        by_kind = dict(uow.usage.by_kind(date(2026, 11, 1), user_id=user_id))
    return calls, by_kind, user_id


def test_a_turn_records_its_answer_and_its_query_embedding_with_the_user_and_chat(uow_factory):
    with FakeOpenAI(personality="openai") as server:
        server.set_responder(lambda _request: TURN)
        embedder = OpenAIEmbedder(server.base_url, "test", "fake-embed", dimensions=384)
        service = conversation(uow_factory, CONFIG, server, embedder=embedder,
                                      clock=lambda: NOW)
        say(service, "I like oolong tea", "1")
        say(service, "I like oolong tea", "1")  # a duplicate: answered once, paid once
        say(service, "and green tea too", "2")
    calls, by_kind, _user = usage_of(uow_factory)
    assert sorted(call.kind for call in calls) == ["turn", "turn", "turn_embedding", "turn_embedding"]
    assert {call.chat_id for call in calls} != {None}
    assert all(call.created_at == NOW for call in calls)
    turn, embedding = by_kind["turn"], by_kind["turn_embedding"]
    assert (turn.messages, turn.calls, embedding.messages, embedding.calls) == (2, 2, 0, 2)
    assert turn.prompt_tokens == sum(c.prompt_tokens for c in calls if c.kind == "turn")
    assert turn.cached_tokens > 0  # the second turn's prompt begins like the first's


def test_an_offline_turn_counts_a_message_and_no_tokens(uow_factory):
    service = conversation(uow_factory, CONFIG, clock=lambda: NOW)
    say(service, "I like oolong tea", "1")
    calls, by_kind, _user = usage_of(uow_factory)
    assert calls == []
    assert by_kind == {"turn": UsageTotals(messages=1)}


def test_a_turn_whose_model_failed_still_records_what_was_answered(uow_factory):
    with FakeOpenAI(personality="no-usage") as server:
        server.queue_reply("not json at all, and no braces")
        service = conversation(uow_factory, CONFIG, server, clock=lambda: NOW)
        reply = say(service, "I like oolong tea", "1")
    calls, _by_kind, _user = usage_of(uow_factory)
    assert reply.text
    assert calls
    assert all(call.estimated and call.kind == "turn" for call in calls)


def test_a_batch_larger_than_one_statement_is_recorded_whole(uow_factory):
    count = CALLS_PER_STATEMENT * 2 + 3
    calls = [CallUsage("embedding" if index % 3 else "dedup", "m" * 250, prompt_tokens=index, completion_tokens=1,
                       cached_tokens=index % 2, estimated=index % 5 == 0, latency_ms=index) for index in range(count)]
    with uow_factory() as uow:
        user_id = uow.users.identify("telegram", "u1").user_id
        uow.usage.record(user_id, None, calls, NOW, messages=2)
        uow.commit()
    with uow_factory() as uow:
        recorded = uow.usage.recent_calls(user_id, count + 10)
        by_kind = dict(uow.usage.by_kind(date(2026, 11, 1), user_id=user_id))
    assert sorted(call.latency_ms for call in recorded) == list(range(count))
    assert {len(call.model) for call in recorded} == {MAX_MODEL_CHARS}
    for kind in ("embedding", "dedup"):
        mine = [call for call in calls if call.kind == kind]
        assert by_kind[kind] == UsageTotals(0, len(mine), sum(c.prompt_tokens for c in mine), len(mine),
                                            sum(c.cached_tokens for c in mine), sum(c.estimated for c in mine))
    assert by_kind["turn"] == UsageTotals(messages=2)  # the answered messages are counted once, not per batch
