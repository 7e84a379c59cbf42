"""A turn's log lines: one turn id, the platform and the user's hash on every line and on every job it owes;
at INFO nothing anyone wrote (the message, the reply, a memory), at DEBUG what users say may show."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import select

from bench.fakes.openai_server import FakeOpenAI
from shared import log_context
from shared.conversation.messages import IncomingMessage
from shared.conversation.service import ConversationService
from shared.db.memory_models import OutboxJob
from shared.llm.client import ChatModel
from tests.integration.test_conversation import CONFIG, START, turn
from tests.log_capture import json_logs

SAID = "I keep bees on my balcony in Quxbridge"
REPLIED = "Bees in Quxbridge, how wonderful"
REMEMBERED = "keeps bees on a Quxbridge balcony"
REFUSED = "does the user like Zorblat honey?"
WORDS = ("Quxbridge", "Zorblat", "balcony", "wonderful")


@pytest.fixture
def answer_a_turn(uow_factory) -> Iterator[Callable[[], None]]:
    with FakeOpenAI(models=("fake-chat",)) as llm:
        model = ChatModel(base_url=llm.base_url, api_key="test-key-for-the-fake-llm", model="fake-chat",
                          timeout_seconds=10)
        service = ConversationService(uow_factory, CONFIG, chat_model=model, clock=lambda: START)

        def answer() -> None:
            llm.queue_reply(turn(REPLIED, entries=[("fact", "user", "hobby", REMEMBERED),
                                                   ("preference", "user", "honey", REFUSED)]))
            message = IncomingMessage(platform="telegram", chat_id="c1", user_id="1001", text=SAID, sent_at=START,
                                      is_private=True, display_name="Alice", message_id="7")
            reply = asyncio.run(service.handle_message(message))
            assert reply.text == REPLIED
            assert len(reply.stored_memory_ids) == 1

        yield answer


def test_every_line_of_a_turn_and_every_job_it_owes_carry_its_turn_id_platform_and_user_hash(
        answer_a_turn, uow_factory):
    with json_logs(logging.INFO) as out:
        answer_a_turn()
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    answered = [line for line in lines if line["message"].startswith("message answered (model)")]
    assert len(answered) == 1, lines
    turn_id = answered[0]["turn"]
    assert len(turn_id) == 16
    assert answered[0]["platform"] == "telegram"
    assert answered[0]["user"] == log_context.hash_user("telegram", "1001") != "1001"
    refused = [line for line in lines if "not stored (question)" in line["message"]]
    assert refused
    assert all(line["turn"] == turn_id for line in refused)
    with uow_factory() as uow:
        owed = uow.session.scalars(select(OutboxJob)).all()
    assert {job.task for job in owed} >= {"extract_turn"}
    assert all(job.log_context == {"turn": turn_id, "platform": "telegram", "user": answered[0]["user"]}
               for job in owed)


def test_at_info_no_line_holds_the_message_the_reply_or_a_memory(answer_a_turn):
    with json_logs(logging.INFO) as out:
        answer_a_turn()
    shown = out.getvalue()
    assert "message answered" in shown
    for words in (SAID, REPLIED, REMEMBERED, REFUSED, *WORDS):
        assert words not in shown


def test_at_debug_what_the_user_said_may_show(answer_a_turn):
    """The check above can fail: the same turn at DEBUG logs a refused memory's words."""
    with json_logs(logging.DEBUG) as out:
        answer_a_turn()
    assert "Zorblat" in out.getvalue()
