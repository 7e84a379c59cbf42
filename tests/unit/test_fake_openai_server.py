"""The fake OpenAI server, exercised through the real ``openai`` SDK."""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from collections.abc import Iterator

import openai
import pytest

from bench.fakes.openai_server import FakeOpenAI, _common_prefix

MESSAGES = [{"role": "user", "content": "Remember that my cat is called Miso."}]


@pytest.fixture
def llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def make_client(server: FakeOpenAI, api_key: str = "x", timeout: float = 10.0) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key=api_key, max_retries=0, timeout=timeout)


@pytest.fixture
def client(llm: FakeOpenAI) -> Iterator[openai.OpenAI]:
    with make_client(llm) as sdk:
        yield sdk


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_binds_loopback_and_lists_models(llm: FakeOpenAI, client: openai.OpenAI) -> None:
    assert llm.base_url.startswith("http://127.0.0.1:")
    assert llm.base_url.endswith("/v1")
    assert [m.id for m in client.models.list()] == ["fake-chat", "fake-embed"]


def test_chat_completion_returns_queued_dict_then_default(llm: FakeOpenAI, client: openai.OpenAI) -> None:
    llm.queue_reply({"facts": ["cat is called Miso"]})

    first = client.chat.completions.create(model="fake-chat", messages=MESSAGES)
    second = client.chat.completions.create(model="fake-chat", messages=MESSAGES)

    assert json.loads(first.choices[0].message.content or "") == {"facts": ["cat is called Miso"]}
    assert first.object == "chat.completion"
    assert first.model == "fake-chat"
    assert first.choices[0].finish_reason == "stop"
    assert first.choices[0].message.role == "assistant"
    assert first.usage is not None
    assert first.usage.prompt_tokens > 0
    assert first.usage.total_tokens == first.usage.prompt_tokens + first.usage.completion_tokens
    assert json.loads(second.choices[0].message.content or "") == {"response": "ok"}
    assert [body["messages"] for body in llm.chat_requests()] == [MESSAGES, MESSAGES]


def test_responder_answers_when_queue_is_empty(llm: FakeOpenAI, client: openai.OpenAI) -> None:
    llm.set_responder(lambda request: {"echo": request["messages"][-1]["content"]})

    reply = client.chat.completions.create(model="fake-chat", messages=MESSAGES)

    assert json.loads(reply.choices[0].message.content or "") == {"echo": MESSAGES[0]["content"]}


def test_json_schema_refused_but_json_object_accepted_when_unsupported() -> None:
    schema = {"type": "json_schema", "json_schema": {"name": "r", "schema": {"type": "object"}}}
    with FakeOpenAI(json_schema_supported=False) as llm, make_client(llm) as client:
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(model="fake-chat", messages=MESSAGES, response_format=schema)
        reply = client.chat.completions.create(
            model="fake-chat", messages=MESSAGES, response_format={"type": "json_object"}
        )

        assert refused.value.status_code == 400
        assert "json_schema" in refused.value.message
        assert "response_format" in refused.value.message
        assert json.loads(reply.choices[0].message.content or "") == {"response": "ok"}
        assert llm.response_formats() == [schema, {"type": "json_object"}]


def test_json_schema_accepted_by_default(client: openai.OpenAI) -> None:
    schema = {"type": "json_schema", "json_schema": {"name": "r", "schema": {"type": "object"}}}
    reply = client.chat.completions.create(model="fake-chat", messages=MESSAGES, response_format=schema)
    assert reply.choices[0].message.content == '{"response": "ok"}'


def test_queued_429_surfaces_as_rate_limit_error_with_retry_after(
    llm: FakeOpenAI, client: openai.OpenAI
) -> None:
    llm.queue_error(429, retry_after=3)
    llm.queue_error(500)

    with pytest.raises(openai.RateLimitError) as limited:
        client.chat.completions.create(model="fake-chat", messages=MESSAGES)
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="fake-chat", messages=MESSAGES)
    recovered = client.chat.completions.create(model="fake-chat", messages=MESSAGES)

    assert limited.value.response.headers["retry-after"] == "3"
    assert limited.value.code == "rate_limit_exceeded"
    assert recovered.choices[0].message.content == '{"response": "ok"}'


def test_streaming_answers_in_chunks_with_the_finish_reason_and_usage(llm: FakeOpenAI, client: openai.OpenAI) -> None:
    llm.queue_reply("a" * 100)

    chunks = list(client.chat.completions.create(model="fake-chat", messages=MESSAGES, stream=True, max_tokens=10,
                                                 stream_options={"include_usage": True}))

    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "a" * 40
    assert len(chunks) > 3
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == 10


def test_embeddings_are_deterministic_and_rank_shared_words_higher(client: openai.OpenAI) -> None:
    texts = ["my cat Miso sleeps on the sofa", "Miso the cat sleeps all day", "quarterly tax filing deadline"]

    vectors = [e.embedding for e in client.embeddings.create(model="fake-embed", input=texts).data]
    again = client.embeddings.create(model="fake-embed", input=texts[0], encoding_format="float")

    assert [len(v) for v in vectors] == [384, 384, 384]
    assert all(math.isclose(cosine(v, v), 1.0, rel_tol=1e-5) for v in vectors)
    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2]) + 0.3
    assert again.data[0].embedding == pytest.approx(vectors[0], abs=1e-6)


def test_queued_embedding_error_leaves_chat_alone(llm: FakeOpenAI, client: openai.OpenAI) -> None:
    llm.queue_error(503, endpoint="embeddings")

    with pytest.raises(openai.InternalServerError):
        client.embeddings.create(model="fake-embed", input="Miso")
    client.chat.completions.create(model="fake-chat", messages=MESSAGES)
    client.embeddings.create(model="fake-embed", input="Miso")

    assert [body["input"] for body in llm.embedding_requests()] == ["Miso", "Miso"]


def test_embedding_dimension_is_configurable() -> None:
    with FakeOpenAI(embedding_dim=16) as llm, make_client(llm) as client:
        response = client.embeddings.create(model="fake-embed", input=["a", "b"])
    assert [(e.index, len(e.embedding)) for e in response.data] == [(0, 16), (1, 16)]


def test_api_key_is_required_when_configured() -> None:
    with FakeOpenAI(api_key="secret") as llm:
        with make_client(llm, api_key="wrong") as client, pytest.raises(openai.AuthenticationError):
            client.models.list()
        with make_client(llm, api_key="secret") as client:
            assert len(client.models.list().data) == 2
        assert [r.headers["authorization"] for r in llm.requests] == ["Bearer wrong", "Bearer secret"]


def test_reply_delay_and_latency_slow_responses(llm: FakeOpenAI, client: openai.OpenAI) -> None:
    llm.latency = 0.1
    llm.queue_reply("slow", delay=0.2)

    started = time.monotonic()
    client.chat.completions.create(model="fake-chat", messages=MESSAGES)

    assert time.monotonic() - started >= 0.3


def test_reset_clears_queue_records_and_responder(llm: FakeOpenAI, client: openai.OpenAI) -> None:
    llm.queue_reply("queued")
    llm.set_responder(lambda _request: "custom")
    client.models.list()

    llm.reset()
    reply = client.chat.completions.create(model="fake-chat", messages=MESSAGES)

    assert reply.choices[0].message.content == '{"response": "ok"}'
    assert [r.path for r in llm.requests] == ["/v1/chat/completions"]


def test_stop_joins_threads_and_closes_socket_even_mid_delay() -> None:
    before = set(threading.enumerate())
    llm = FakeOpenAI().start()
    port = int(llm.base_url.split(":")[2].split("/")[0])
    llm.queue_reply("never seen in time", delay=30)
    with make_client(llm, timeout=0.3) as client, pytest.raises(openai.APITimeoutError):
        client.chat.completions.create(model="fake-chat", messages=MESSAGES)

    started = time.monotonic()
    llm.stop()

    assert time.monotonic() - started < 5
    assert set(threading.enumerate()) <= before
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass


@pytest.mark.parametrize(("text", "other", "shared"), [
    ("", "", 0), ("abc", "", 0), ("abc", "abc", 3), ("abc", "abd", 2), ("abcdef", "abc", 3), ("xbc", "abc", 0),
    ("系统：你好，世界", "系统：你好，朋友", 6), ("a" * 5000 + "b", "a" * 5000 + "c", 5000)])
def test_the_prompt_caches_shared_prefix_is_counted_exactly(text: str, other: str, shared: int) -> None:
    assert _common_prefix(text, other) == shared
    assert _common_prefix(other, text) == shared
