"""The chat client's protocol rules through the real ``openai`` SDK: deadlines that hold against a slow
stream, a stream closed when nobody waits, operator settings passed through, refused parameters."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from bench.fakes.openai_server import FakeOpenAI, error_body
from shared.llm.client import ChatModel, LLMUnavailable, alternating
from shared.llm.transport import CUT_AT_MARK
from shared.settings import Settings
from tests.waiting import wait_for

MESSAGES = [{"role": "system", "content": "You are Mnemo. Answer in JSON."},
            {"role": "user", "content": "My dog is called Pepper."}]
TURN = {"response": "Pepper is a great name.", "emotion": None, "memory_update": None, "todos": [],
        "topic": None, "context_variables": []}


@pytest.fixture
def llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def model_for(server: FakeOpenAI, timeout: float = 10.0, **options) -> ChatModel:
    return ChatModel(server.base_url, "k", "fake-chat", timeout, **options)


def test_a_stream_that_drips_is_cut_at_the_deadline_and_the_server_sees_the_client_leave() -> None:
    with FakeOpenAI(personality="rambler", stream_chunk_delay=0.2) as llm:
        llm.set_responder(lambda _body: TURN)
        started = time.monotonic()

        with pytest.raises(LLMUnavailable, match=r"timed out|LLM_TIMEOUT_SECONDS"):
            model_for(llm, timeout=1.2).complete_turn(MESSAGES)

        # The behaviour under test is a deadline, so a bound on the time stays, far from the 1.2 s
        # expected: the capped answer drips for about 50 s, which a client without the deadline would wait.
        assert time.monotonic() - started < 15
        assert len(llm.chat_requests()) == 1  # one deadline for the turn: no retry is sent after it
        wait_for(lambda: llm.abandoned_streams, 10, "the fake to see the client close the stream")
        assert llm.abandoned_streams == 1


def test_a_rambling_model_is_capped_and_its_reply_salvaged() -> None:
    with FakeOpenAI(personality="rambler") as llm:
        llm.set_responder(lambda _body: TURN)

        completion = model_for(llm, max_output_tokens=200).complete_turn(MESSAGES)

        assert completion.finish_reason == "length"
        assert completion.output is None
        assert completion.reply.startswith("Pepper is a great name.")
        assert "{" not in completion.reply
        assert llm.chat_requests()[0]["max_tokens"] == 200


def test_a_reply_that_copies_the_app_note_back_is_cut_there_and_the_stream_closed() -> None:
    echo = "Hello Lin, good to see you. I remember this: <app_note>\n\nCurrent time for the user: " + "x " * 3000
    with FakeOpenAI(stream_chunk_delay=0.01) as llm:
        llm.queue_reply({**TURN, "response": echo})

        completion = model_for(llm).complete_turn(MESSAGES)

        assert completion.reply == "Hello Lin, good to see you."
        assert completion.problem == "note_echo"
        assert completion.output is None
        assert completion.finish_reason == CUT_AT_MARK
        wait_for(lambda: llm.abandoned_streams, 10, "the fake to see the client close the stream")
        assert llm.abandoned_streams == 1
        assert len(llm.chat_requests()) == 1


def test_a_background_answer_may_quote_the_note_markup(llm: FakeOpenAI) -> None:
    llm.queue_reply({"summary": "They wrote <app_note> in a message."})

    assert model_for(llm).complete_json(MESSAGES, 50) == {"summary": "They wrote <app_note> in a message."}


def test_extra_body_is_sent_unchanged_on_every_request(llm: FakeOpenAI) -> None:
    extra = {"enable_thinking": False, "cache_prompt": True, "chat_template_kwargs": {"enable_thinking": False}}
    model = model_for(llm, extra_body=extra)
    llm.queue_reply(TURN)
    model.complete_turn(MESSAGES)
    llm.queue_reply({"decision": "keep"})
    model.complete_json(MESSAGES, 50)
    for request in llm.chat_requests():
        assert {key: request[key] for key in extra} == extra


def test_a_model_that_wants_max_completion_tokens_gets_it_from_then_on(llm: FakeOpenAI) -> None:
    message = "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens'."
    llm.queue_error(400, error_body(400, message, param="max_tokens"))
    llm.queue_reply(TURN)
    llm.queue_reply(TURN)
    model = model_for(llm)

    assert model.complete_turn(MESSAGES).output is not None
    assert model.complete_turn(MESSAGES).output is not None

    first, second, third = llm.chat_requests()
    assert "max_tokens" in first
    assert "max_completion_tokens" not in first
    assert second["max_completion_tokens"] == third["max_completion_tokens"] == 1024
    assert "max_tokens" not in third


def test_a_server_that_refuses_stream_options_is_asked_without_them(llm: FakeOpenAI) -> None:
    llm.queue_error(400, error_body(400, "Unrecognized request argument supplied: stream_options"))
    llm.queue_reply(TURN)

    assert model_for(llm).complete_turn(MESSAGES).output is not None
    assert "stream_options" in llm.chat_requests()[0]
    assert "stream_options" not in llm.chat_requests()[1]


def test_a_pinned_text_mode_sends_no_response_format_and_shows_an_example(llm: FakeOpenAI) -> None:
    llm.queue_reply(TURN)
    llm.queue_reply({"decision": "keep"})
    model = model_for(llm, output_mode="text")

    assert model.complete_turn(MESSAGES).mode == "text"
    assert model.complete_json(MESSAGES, 50) == {"decision": "keep"}
    assert llm.response_formats() == [None, None]
    system = llm.chat_requests()[0]["messages"][0]["content"]
    assert system.startswith("You are Mnemo.")
    assert "Fill in this example" in system


def test_a_pinned_json_schema_mode_on_a_server_without_it_fails_with_a_hint() -> None:
    with FakeOpenAI(personality="deepseek") as llm:
        with pytest.raises(LLMUnavailable, match="LLM_OUTPUT_MODE=auto"):
            model_for(llm, output_mode="json_schema").complete_turn(MESSAGES)
        assert len(llm.chat_requests()) == 1


def test_settings_reach_the_model(llm: FakeOpenAI) -> None:
    settings = Settings(_env_file=None, llm_base_url=llm.base_url, llm_output_mode="json_object",
                        llm_max_output_tokens=300, llm_extra_body='{"top_k": 20}')
    model = ChatModel.from_settings(settings)
    llm.queue_reply(TURN)

    assert model is not None
    assert model.complete_turn(MESSAGES).mode == "json_object+schema"
    [request] = llm.chat_requests()
    assert (request["max_tokens"], request["top_k"], request["response_format"]["type"]) == (300, 20, "json_object")


def test_messages_are_sent_as_one_system_message_and_alternating_turns() -> None:
    messages = [{"role": "system", "content": "A"}, {"role": "assistant", "content": "hello"},
                {"role": "user", "content": "1"}, {"role": "user", "content": "2"},
                {"role": "system", "content": "B"}, {"role": "assistant", "content": "x"}]

    assert alternating(messages) == [{"role": "system", "content": "A\n\nB"},
                                     {"role": "user", "content": "1\n\n2"}, {"role": "assistant", "content": "x"}]


def test_with_llm_system_role_user_the_instructions_open_the_first_user_message_and_no_system_message_is_sent(
        llm) -> None:
    llm.set_responder(lambda _body: TURN)
    settings = Settings(_env_file=None, llm_base_url=llm.base_url, llm_model="fake-chat", llm_system_role="user")
    model = ChatModel.from_settings(settings)

    model.complete_turn([*MESSAGES, {"role": "assistant", "content": "Noted."}, {"role": "user", "content": "Hi"}])

    sent = llm.chat_requests()[-1]["messages"]
    assert [message["role"] for message in sent] == ["user", "assistant", "user"]
    assert sent[0]["content"].startswith("You are Mnemo. Answer in JSON.")
    assert sent[0]["content"].endswith("\n\nMy dog is called Pepper.")
    assert alternating([{"role": "system", "content": "A"}], "user") == [{"role": "user", "content": "A"}]


def test_a_server_that_cuts_streams_for_newcomers_gets_whole_requests_and_both_turns_are_answered() -> None:
    async def two_at_once(model: ChatModel) -> list:
        try:
            return await asyncio.gather(model.acomplete_turn(MESSAGES), model.acomplete_turn(MESSAGES))
        finally:
            await model.aclose()

    with FakeOpenAI(personality="llama-cpp-python", stream_chunk_delay=0.05) as llm:
        llm.set_responder(lambda _body: TURN)

        first, second = asyncio.run(two_at_once(model_for(llm, output_mode="json_object")))

        assert first.output is not None
        assert second.output is not None
        streamed = [request.get("stream") for request in llm.chat_requests()]
        assert streamed[:2] == [True, True]
        assert not streamed[-1]
        assert not any("stream_options" in r for r in llm.chat_requests() if not r.get("stream"))
