"""What the first hour met on the real llama.cpp server (llama-cpp-python, Gemma 3 270M), tried again: the small
model's non-answers are never shown as its reply, and a conversation longer than the server's context window is
fitted to it and answered instead of refused.

The server is the session's (``real_llm_url``: ``--n_ctx`` :data:`~tests.real_llm.conftest.N_CTX`); llama-cpp-python
names its window only when it refuses a prompt, and that is what Mnemo learns it from.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest

from shared.conversation.fitting import MESSAGE_CUT_MARK, PAST_CUT_MARK
from shared.conversation.service import ConversationService
from shared.conversation.warning_texts import WarningCode
from shared.llm.client import ChatModel
from shared.llm.turn_answer import read_turn_answer
from shared.llm.turn_schema import NOTE_OPEN
from shared.speech.non_answers import non_answer
from tests.builders import conversation_config, message
from tests.fakes.recording_proxy import RecordingProxy
from tests.real_llm.conftest import MODEL_ALIAS, N_CTX, SYSTEM_ROLE
from tests.told import told

pytestmark = [pytest.mark.real_llm, pytest.mark.timeout(900)]

TURN_SECONDS = 150
MAX_OUTPUT_TOKENS = 96
START = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
CONFIG = conversation_config(default_timezone="Asia/Shanghai")
DIARY = "这是我这个月的日记，想请你看看：" + "".join(
    f"第{day}天：06:{day % 60:02d}起床，07:10送朵朵去幼儿园，坐2号线到公司，"
    "09:30、11:00、14:15开会，18:20健身，23:05睡觉。" for day in range(1, 130))
"""About 8,000 characters, many of them figures (which Gemma reads a digit a token): far more of its tokens than
the server's window holds, and more than Mnemo's estimate from the text says."""
ORDINARY = ["Hi! My name is Lin and I live in Lisbon.", "我很喜欢喝茉莉花茶。", "How are you today?",
            "周末我想去爬山。"]


def say(service: ConversationService, text: str, number: int):
    incoming = message(text, user="lin", chat="c1", sent=START + timedelta(minutes=number), name="Lin",
                       message_id=str(number))
    return asyncio.run(service.handle_message(incoming))


def model_on(proxy: RecordingProxy) -> ChatModel:
    return ChatModel(proxy.base_url, None, MODEL_ALIAS, TURN_SECONDS, max_output_tokens=MAX_OUTPUT_TOKENS,
                     system_role=SYSTEM_ROLE)


def test_a_conversation_longer_than_the_servers_window_is_fitted_to_it_and_answered(real_llm_url, uow_factory):
    with RecordingProxy(real_llm_url) as proxy:
        model = model_on(proxy)  # LLM_CONTEXT_TOKENS' default (8192): larger than the server's window
        service = ConversationService(uow_factory, CONFIG, chat_model=model)
        pasted = say(service, DIARY, 1)
        after = say(service, "谢谢你听我说这么多，你觉得我每天的安排怎么样？", 2)
        requests = proxy.chat_requests()
    refused = [request for request in requests if request.status == 400]
    print(json.dumps({"statuses": [request.status for request in requests], "learnt": model.window.tokens,
                      "ratio": model.window.ratio,
                      "replies": [[reply.text, told(reply), [str(warning) for warning in reply.warnings]]
                                  for reply in (pasted, after)]}, ensure_ascii=False))
    assert len(refused) == 1
    assert f"maximum context length is {N_CTX} tokens" in bytes(refused[0].answer).decode()
    assert model.window.tokens == N_CTX  # the refusal named it: every later prompt fits from the start
    assert [request.status for request in requests][-2:] == [200, 200]
    assert requests[-2].status == 200
    for reply in (pasted, after):  # offline only where the model's own answer was unusable (its quality)
        codes = {warning.code for warning in reply.warnings}
        assert not codes & {WarningCode.CONTEXT_OVERFLOW, WarningCode.MODEL_UNAVAILABLE}
        assert not reply.offline or WarningCode.MODEL_NON_ANSWER in codes
    first_sent = requests[requests.index(refused[0]) + 1].body["messages"]
    assert MESSAGE_CUT_MARK in first_sent[-1]["content"]  # the diary alone did not fit: its start was read
    if not pasted.offline:  # the user is told how much of it the model read
        assert pasted.notices
        assert told(pasted).startswith("你的消息太长，模型只读了前 ")
    last_sent = requests[-1].body["messages"]
    assert any(PAST_CUT_MARK in message["content"] for message in last_sent if message["role"] == "user")


def test_the_small_models_non_answers_are_never_shown_as_its_reply(real_llm_url, uow_factory):
    with RecordingProxy(real_llm_url) as proxy:
        service = ConversationService(uow_factory, CONFIG, chat_model=model_on(proxy))
        replies = [say(service, text, number) for number, text in enumerate(ORDINARY)]
        answers = {_asked(request): read_turn_answer(request.content()).reply for request in proxy.chat_requests()
                   if request.status == 200}  # the last answer to each message
    print(json.dumps([[text, answers.get(text), reply.text, reply.offline]
                      for text, reply in zip(ORDINARY, replies, strict=True)], ensure_ascii=False))
    assert set(answers) == set(ORDINARY)
    for text, reply in zip(ORDINARY, replies, strict=True):
        answer = answers[text]
        assert reply.text.strip() and WarningCode.MODEL_UNAVAILABLE not in {
            warning.code for warning in reply.warnings}
        if answer and non_answer(answer, text) is not None:  # a non-answer came back: the offline responder spoke
            assert reply.offline
            assert reply.text != answer
            assert WarningCode.MODEL_NON_ANSWER in {warning.code for warning in reply.warnings}
        elif not reply.offline:  # the model's own words (cut at a sentence's end when max_tokens cut them)
            assert reply.text[:40] in answer
            assert non_answer(reply.text, text) is None


def _asked(request) -> str:
    """The user's message a turn request answers (its last message, before the app note; after the instructions
    when they open it, ``LLM_SYSTEM_ROLE=user``: the messages asked here hold no blank line)."""
    return request.body["messages"][-1]["content"].split(f"\n\n{NOTE_OPEN}")[0].rsplit("\n\n", 1)[-1]
