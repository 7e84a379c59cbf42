"""One prompt budget against servers with a small context window (the fake OpenAI server in each one's manner): a
user who pastes long texts keeps getting the model's answers, never the server's context error; the newest
message alone too long is cut, and the user told in their language."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from bench.fakes.openai_server import FakeOpenAI, estimate_tokens
from shared.conversation.fitting import MESSAGE_CUT_MARK, PAST_CUT_MARK
from shared.conversation.service import ConversationService
from tests.builders import chat_model, conversation, conversation_config, message
from tests.integration.test_conversation import START, turn
from tests.told import told

WINDOW = 4096
"""The fake server's window, in its own tokens (about four characters each)."""
MAX_OUTPUT = 200
CONFIG = conversation_config(default_timezone="Europe/Lisbon")
PASTES = [" ".join(f"Line {n} of the {topic} notes I took this week, with every detail I could remember."
                   for n in range(40)) for topic in ("garden", "budget", "recipe", "travel", "reading")]
"""Five texts of about 3,900 characters: each fits the window alone, three of them do not."""


def service_on(server: FakeOpenAI, uow_factory, **model_options) -> ConversationService:
    return conversation(uow_factory, CONFIG, chat_model(server, max_output_tokens=MAX_OUTPUT, **model_options))


def say(service: ConversationService, text: str, number: int):
    incoming = message(text, chat="c1", sent=START + timedelta(minutes=number), name="Lin", message_id=str(number))
    return asyncio.run(service.handle_message(incoming))


def prompt_tokens(request: dict) -> int:
    return estimate_tokens("\n".join(str(message["content"]) for message in request["messages"]))


@pytest.mark.parametrize("personality", ["llama.cpp", "vllm"])
def test_a_server_that_reports_its_window_gets_prompts_that_fit_from_the_first_turn(uow_factory, personality):
    with FakeOpenAI(models=("fake-chat",), personality=personality, context_window=WINDOW) as server:
        server.set_responder(lambda _request: turn("Thanks, I read all of it."))
        service = service_on(server, uow_factory)
        replies = [say(service, text, number) for number, text in enumerate(PASTES)]
        requests = server.chat_requests()
    assert all(not reply.offline and reply.text == "Thanks, I read all of it." for reply in replies)
    assert 400 not in server.chat_statuses
    assert all(prompt_tokens(r) + MAX_OUTPUT <= WINDOW for r in requests)
    assert PAST_CUT_MARK in str(requests[-1]["messages"])  # the pasted texts before are shortened, not lost
    assert PASTES[-1] in requests[-1]["messages"][-1]["content"]  # the newest is whole
    assert service.chat_model.window.tokens == WINDOW


@pytest.mark.parametrize("personality", ["llama-cpp-python", "openai"])
def test_a_server_that_names_its_window_only_when_refusing_is_asked_again_with_the_conversation_fitted(
        uow_factory, personality):
    with FakeOpenAI(models=("fake-chat",), personality=personality, context_window=WINDOW) as server:
        server.set_responder(lambda _request: turn("Got it, those are good notes."))
        service = service_on(server, uow_factory)  # LLM_CONTEXT_TOKENS' default, 8192: the server is smaller
        replies = [say(service, text, number) for number, text in enumerate(PASTES)]
        answered, requests = server.chat_statuses, server.chat_requests()
    assert all(not reply.offline and reply.text == "Got it, those are good notes." for reply in replies)
    assert answered.count(400) == 1  # one refusal teaches the window; every turn after fits at once
    assert service.chat_model.window.tokens == WINDOW
    refused = answered.index(400)
    if personality == "llama-cpp-python":  # a streamed prompt too long is an empty 200; sent whole, it is refused
        assert requests[refused - 1].get("stream")
        assert not requests[refused].get("stream")
        assert requests[refused - 1]["messages"] == requests[refused]["messages"]


def test_with_the_window_set_no_prompt_is_ever_refused(uow_factory):
    with FakeOpenAI(models=("fake-chat",), personality="llama-cpp-python", context_window=WINDOW) as server:
        server.set_responder(lambda _request: turn("Noted, thank you."))
        service = service_on(server, uow_factory, context_tokens=WINDOW)  # LLM_CONTEXT_TOKENS=4096
        replies = [say(service, text, number) for number, text in enumerate(PASTES)]
    assert all(not reply.offline for reply in replies)
    assert 400 not in server.chat_statuses


@pytest.mark.parametrize(("pasted", "notice"), [
    (" ".join(PASTES) * 2, "Your message was too long for the model: it read the first "),
    ("这是我写的日记，" + "今天在西湖边散步，看见很多人在拍照，湖面很平静。" * 300, "你的消息太长，模型只读了前 "),
])
def test_a_newest_message_too_long_alone_is_cut_and_the_user_told_in_their_language(uow_factory, pasted, notice):
    with FakeOpenAI(models=("fake-chat",), personality="llama.cpp", context_window=WINDOW) as server:
        server.set_responder(lambda _request: turn("That is a lot to take in, let me think about it."))
        service = service_on(server, uow_factory)
        reply = say(service, pasted, 1)
        sent = server.chat_requests()[-1]["messages"][-1]["content"]
    assert not reply.offline
    assert reply.text.startswith("That is a lot")
    assert reply.notices
    assert told(reply).startswith(notice)
    read = int("".join(filter(str.isdigit, told(reply))))
    assert sent.startswith(pasted[:read] + MESSAGE_CUT_MARK)
    assert 400 not in server.chat_statuses
