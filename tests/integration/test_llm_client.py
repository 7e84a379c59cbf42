"""The chat client through the real ``openai`` SDK against the fake OpenAI server on loopback."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from bench.fakes.loopback import refusing_port
from bench.fakes.openai_server import FakeOpenAI
from shared.llm import client, retries
from shared.llm.client import MAX_TRANSIENT_RETRIES, ChatModel, LLMUnavailable
from shared.settings import Settings

MESSAGES = [{"role": "system", "content": "You are Mnemo."}, {"role": "user", "content": "My cat is Miso."}]
TURN = {
    "emotion": {"primary": "happy", "category": "positive", "confidence": 0.9, "indicators": []},
    "response": "Miso is a lovely name!",
    "memory_update": {"should_store": True, "entries": [
        {"type": "fact", "subject": "user", "predicate": "pet_name", "content": "The user's cat is Miso.",
         "tier": "long"}]},
    "todos": [],
    "topic": "pets",
    "context_variables": [],
}


@pytest.fixture
def llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def chat_model(server: FakeOpenAI, timeout: float = 10.0, api_key: str | None = "test-key") -> ChatModel:
    return ChatModel(base_url=server.base_url, api_key=api_key, model="fake-chat", timeout_seconds=timeout)


def format_types(server: FakeOpenAI) -> list[str | None]:
    return [fmt.get("type") if fmt else None for fmt in server.response_formats()]


def test_a_turn_is_asked_with_the_strict_json_schema_streamed_and_capped(llm: FakeOpenAI) -> None:
    llm.queue_reply(TURN)

    completion = chat_model(llm).complete_turn(MESSAGES)

    assert completion.output is not None and completion.output.response == "Miso is a lovely name!"
    assert completion.output.memory_update[0].predicate == "pet_name"
    assert (completion.mode, completion.attempts, completion.finish_reason) == ("json_schema", 1, "stop")
    assert completion.usage["total_tokens"] > 0
    [fmt] = llm.response_formats()
    assert fmt is not None and fmt["json_schema"]["name"] == "mnemo_turn" and fmt["json_schema"]["strict"] is True
    [request] = llm.chat_requests()
    assert request["messages"] == MESSAGES
    assert request["stream"] is True and request["stream_options"] == {"include_usage": True}
    assert request["max_tokens"] == client.DEFAULT_MAX_OUTPUT_TOKENS


def test_a_server_without_json_schema_gets_json_mode_with_the_schema_and_keeps_it() -> None:
    with FakeOpenAI(json_schema_supported=False) as llm:
        llm.queue_reply(TURN)
        llm.queue_reply(TURN)
        model = chat_model(llm)

        first = model.complete_turn(MESSAGES)
        second = model.complete_turn(MESSAGES)

        assert format_types(llm) == ["json_schema", "json_object", "json_object"]
        assert llm.response_formats()[1]["schema"]["required"][0] == "response"
        assert llm.response_formats()[1]["schema"]["properties"]["todos"]["maxItems"] == 5
        assert (first.mode, first.attempts, second.mode, second.attempts) == (
            "json_object+schema", 2, "json_object+schema", 1)
        assert first.output is not None and second.output is not None


def test_prose_without_json_is_a_reply_to_show_and_nothing_to_store(llm: FakeOpenAI) -> None:
    llm.queue_reply("Sure! Miso is a lovely name.")

    completion = chat_model(llm).complete_turn(MESSAGES)

    assert completion.output is None and completion.reply == "Sure! Miso is a lovely name."
    assert (completion.attempts, completion.problem) == (1, "invalid")


def test_an_empty_object_or_a_blank_answer_leaves_nothing_to_show(llm: FakeOpenAI) -> None:
    llm.queue_reply("{}")
    assert chat_model(llm).complete_turn(MESSAGES).reply == ""
    llm.queue_reply("")
    llm.queue_reply("   ")
    completion = chat_model(llm).complete_turn(MESSAGES)
    assert (completion.reply, completion.problem, completion.attempts) == ("", "blank", 2)


def test_rate_limit_is_retried_after_the_servers_retry_after(llm: FakeOpenAI) -> None:
    llm.queue_error(429, retry_after=0.3)
    llm.queue_reply(TURN)

    started = time.monotonic()
    completion = chat_model(llm).complete_turn(MESSAGES)

    assert time.monotonic() - started >= 0.3
    assert completion.output is not None and completion.attempts == 2


@pytest.mark.parametrize(("status", "hint"), [(401, "LLM_API_KEY"), (404, "LLM_MODEL")])
def test_a_refused_key_or_model_fails_at_once_with_a_clear_message(llm: FakeOpenAI, status: int, hint: str) -> None:
    llm.queue_error(status)

    with pytest.raises(LLMUnavailable, match=f"HTTP {status}.*{hint}"):
        chat_model(llm).complete_turn(MESSAGES)

    assert len(llm.chat_requests()) == 1


def test_a_wrong_api_key_is_refused_by_a_server_that_checks_it() -> None:
    with FakeOpenAI(api_key="right") as llm, pytest.raises(LLMUnavailable, match="LLM_API_KEY"):
        chat_model(llm, api_key="wrong").complete_turn(MESSAGES)


@pytest.fixture
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retries, "BACKOFF_BASE_SECONDS", 0.05)


@pytest.mark.usefixtures("quick_backoff")
def test_a_failing_server_is_given_up_on_after_bounded_attempts(llm: FakeOpenAI) -> None:
    for _ in range(5):
        llm.queue_error(500)

    with pytest.raises(LLMUnavailable, match=r"HTTP 500.*3 attempts"):
        chat_model(llm).complete_turn(MESSAGES)

    assert len(llm.chat_requests()) == 1 + MAX_TRANSIENT_RETRIES


@pytest.mark.usefixtures("quick_backoff")
def test_a_server_that_went_away_is_unavailable_after_bounded_attempts() -> None:
    with refusing_port() as port:
        model = ChatModel(base_url=f"http://127.0.0.1:{port}/v1", api_key=None, model="fake-chat", timeout_seconds=5)

        with pytest.raises(LLMUnavailable, match=r"APIConnectionError.*3 attempts"):
            model.complete_turn(MESSAGES)


def test_a_slow_server_times_out_within_the_timeout_setting_and_is_not_asked_again(llm: FakeOpenAI) -> None:
    llm.queue_reply(TURN, delay=60)  # cut short when the fake stops
    llm.queue_reply(TURN, delay=60)

    started = time.monotonic()
    with pytest.raises(LLMUnavailable, match=r"timed out|LLM_TIMEOUT_SECONDS"):
        chat_model(llm, timeout=0.5).complete_turn(MESSAGES)

    assert len(llm.chat_requests()) == 1  # the deadline covers the retries: none is sent after it
    # The behaviour under test is a deadline, so a bound on the time stays, far from the 0.5 s expected:
    # a client that ignored the setting would wait out the server's 60 s.
    assert time.monotonic() - started < 20


def test_the_async_variant_shares_the_ladder_and_the_retries() -> None:
    async def two_turns(model: ChatModel) -> list[Any]:
        try:
            return [await model.acomplete_turn(MESSAGES), await model.acomplete_turn(MESSAGES)]
        finally:
            await model.aclose()

    with FakeOpenAI(json_schema_supported=False) as llm:
        llm.queue_reply(TURN)
        llm.queue_error(429, retry_after=0)
        llm.queue_reply(TURN)

        first, second = asyncio.run(two_turns(chat_model(llm)))

        assert first.output is not None and first.output.response == TURN["response"]
        assert (first.mode, first.attempts, second.mode, second.attempts) == (
            "json_object+schema", 2, "json_object+schema", 2)
        assert format_types(llm) == ["json_schema", "json_object", "json_object", "json_object"]


def test_plain_text_completion_sends_no_response_format(llm: FakeOpenAI) -> None:
    llm.queue_reply("A summary.")

    assert chat_model(llm).complete_text(MESSAGES, max_tokens=50) == "A summary."
    assert llm.response_formats() == [None] and llm.chat_requests()[0]["max_tokens"] == 50


def test_from_settings_is_none_offline_and_a_model_when_configured(llm: FakeOpenAI) -> None:
    assert ChatModel.from_settings(Settings(_env_file=None, llm_base_url=None)) is None

    settings = Settings(_env_file=None, llm_base_url=llm.base_url, llm_model="fake-chat", llm_timeout_seconds=5)
    model = ChatModel.from_settings(settings)

    assert model is not None and (model.model, model.timeout_seconds) == ("fake-chat", 5)
    assert model.complete_turn(MESSAGES).output is not None  # the fake's default reply


def test_complete_json_returns_the_object_and_retries_once_on_prose():
    with FakeOpenAI() as llm:
        model = ChatModel(llm.base_url, "k", "fake-chat", timeout_seconds=10)
        llm.queue_reply({"decision": "keep"})
        assert model.complete_json([{"role": "user", "content": "JSON please"}]) == {"decision": "keep"}
        llm.queue_reply("I think you should keep it.")
        llm.queue_reply('Sure: {"decision": "delete"}')
        assert model.complete_json([{"role": "user", "content": "JSON please"}]) == {"decision": "delete"}
        llm.queue_reply("no")
        llm.queue_reply("still no")
        assert model.complete_json([{"role": "user", "content": "JSON please"}]) is None
        assert llm.response_formats()[0] == {"type": "json_object"}


@pytest.mark.parametrize(("personality", "asked", "window"), [
    ("llama.cpp", ["/props"], 3000), ("vllm", ["/props", "/v1/models"], 3000),
    ("openai", ["/props", "/v1/models"], 8192), ("llama-cpp-python", ["/props", "/v1/models"], 8192)])
def test_the_context_window_is_asked_of_the_server_once_and_the_setting_holds_where_it_says_nothing(
        personality, asked, window) -> None:
    with FakeOpenAI(personality=personality, context_window=3000) as server:
        model = ChatModel(base_url=server.base_url, api_key="k", model="fake-chat", max_output_tokens=500)
        budgets = asyncio.run(_twice(model.aprompt_budget))
        paths = [request.path for request in server.requests if request.method == "GET"]
    assert paths == asked and model.window.tokens == window
    assert budgets[0] == budgets[1] == model.window.prompt_budget(500, model._instruction_tokens())


def test_a_server_not_reachable_when_asked_for_its_window_is_asked_again_next_turn() -> None:
    with refusing_port() as port:
        model = ChatModel(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", model="fake-chat")
        assert asyncio.run(model.aprompt_budget()) == model.window.prompt_budget(1024, model._instruction_tokens())
    assert model._window_asked is False


def test_a_prompt_refused_as_too_long_teaches_the_window_and_the_servers_token_count() -> None:
    with FakeOpenAI(personality="llama.cpp", context_window=400) as server:
        model = ChatModel(base_url=server.base_url, api_key="k", model="fake-chat", max_output_tokens=100)
        long_message = [MESSAGES[0], {"role": "user", "content": "tea " * 2000}]
        with pytest.raises(client.ContextOverflow, match="now fitting prompts to 400 tokens"):
            model.complete_turn(long_message)
    assert model.window.reported == 400 and model.window.ratio is not None
    assert server.chat_statuses == [500, 400]  # json_schema refused as llama.cpp does, then the window


async def _twice(call) -> list[Any]:
    return [await call(), await call()]
