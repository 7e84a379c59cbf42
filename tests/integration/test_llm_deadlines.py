"""LLM_TIMEOUT_SECONDS is a deadline, not a read timeout: a server that trickles its answer one byte at a
time (status line and headers included) keeps every per-read timeout happy, so only the client's own
total deadline can end the wait. Each trickle here would take minutes to finish; the deadline is a
second, and the fake reports that the client closed the connection before the answer was sent.
pytest-timeout is the net should a deadline not hold."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from bench.fakes.openai_server import FakeOpenAI
from shared.llm.client import ChatModel, LLMUnavailable
from tests.waiting import wait_for

MESSAGES = [{"role": "system", "content": "You are Mnemo. Answer in JSON."},
            {"role": "user", "content": "My cat is called Biscuit."}]
TURN = {"response": "Biscuit is a lovely name.", "emotion": None, "memory_update": None, "todos": [],
        "topic": None, "context_variables": []}
BYTE_SECONDS = 0.4  # the answer's few hundred bytes would take minutes
DEADLINE_SECONDS = 1.0


@pytest.fixture
def llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def trickling(server: FakeOpenAI, answers: int = 4) -> None:
    for _ in range(answers):
        server.queue_reply(TURN, trickle=BYTE_SECONDS)


def model_for(server: FakeOpenAI, *, streaming: bool = True) -> ChatModel:
    model = ChatModel(server.base_url, "k", "fake-chat", DEADLINE_SECONDS)
    model.endpoint.streaming = streaming
    return model


def assert_left_early(server: FakeOpenAI, requests: int = 1) -> None:
    """The client closed every trickling connection before its answer was sent, and sent nothing more."""
    wait_for(lambda: server.abandoned_trickles >= requests, 10, "the fake to see the client close the connection")
    assert server.abandoned_trickles == requests == len(server.chat_requests())
    assert server.trickled_bytes < len("HTTP/1.0 200 OK\r\n") * requests  # the headers never arrived whole


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "whole"])
def test_a_turn_from_a_server_trickling_its_headers_ends_at_the_deadline(llm: FakeOpenAI, streaming: bool) -> None:
    trickling(llm)

    with pytest.raises(LLMUnavailable):
        model_for(llm, streaming=streaming).complete_turn(MESSAGES)

    assert_left_early(llm)


def test_the_bots_async_turn_ends_at_the_deadline_too(llm: FakeOpenAI) -> None:
    trickling(llm)
    model = model_for(llm)

    async def turn() -> None:
        try:
            await model.acomplete_turn(MESSAGES)
        finally:
            await model.aclose()

    with pytest.raises(LLMUnavailable):
        asyncio.run(turn())

    assert_left_early(llm)


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "whole"])
def test_a_background_json_call_to_a_trickling_server_ends_at_the_deadline(llm: FakeOpenAI, streaming: bool) -> None:
    trickling(llm)

    with pytest.raises(LLMUnavailable):
        model_for(llm, streaming=streaming).complete_json(MESSAGES)

    assert_left_early(llm)


def test_a_retry_after_a_failure_shares_the_turns_deadline(llm: FakeOpenAI) -> None:
    llm.queue_error(503, retry_after=0.1)  # the backoff alone (0.5–1 s) could leave no room for the retry
    trickling(llm)

    with pytest.raises(LLMUnavailable):
        model_for(llm).complete_turn(MESSAGES)

    wait_for(lambda: llm.abandoned_trickles, 10, "the fake to see the client close the connection")
    assert len(llm.chat_requests()) == 2  # nothing sent after the deadline
    assert llm.abandoned_trickles == 1


def test_walking_down_the_output_format_ladder_shares_the_turns_deadline() -> None:
    with FakeOpenAI(json_schema_supported=False) as llm:  # json_schema refused at once, then json_object trickles
        trickling(llm)

        with pytest.raises(LLMUnavailable):
            model_for(llm).complete_turn(MESSAGES)

        wait_for(lambda: llm.abandoned_trickles, 10, "the fake to see the client close the connection")
        formats = [fmt["type"] if fmt else "text" for fmt in llm.response_formats()]
        assert formats == ["json_schema", "json_object"]
        assert llm.abandoned_trickles == 1
