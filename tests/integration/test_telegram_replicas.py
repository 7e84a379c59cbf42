"""Telegram webhook replicas behind a load balancer: two real python-telegram-bot applications, each behind
its own webhook receiver, on one database. An update delivered twice, or to both replicas at once, is
handled once (the replica that records it first handles it), and one a stopped replica left is handled by
another."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import httpx
import pytest
from pydantic import SecretStr
from sqlalchemy import func, select, text

from bench.fakes.openai_server import FakeOpenAI
from bench.fakes.telegram_api import FakeTelegram, user_object
from bot.telegram_bot import ALLOWED_UPDATES, build_application
from bot.telegram_webhook import SECRET_HEADER, webhook_running
from shared.commands.service import MemoryCommands
from shared.conversation.messages import IncomingMessage
from shared.conversation.service import ConversationService
from shared.db.memory_models import Todo
from shared.db.models import ConversationTurn
from shared.db.update_log import RECLAIM_AFTER, UpdateInbox
from shared.settings import Settings
from tests.builders import conversation
from tests.integration.test_telegram_webhook import update
from tests.waiting import until

SECRET = "webhook-secret_0123456789abcdef"
PATH = "/telegram/hook"
EVE = user_object(2101, "Eve", language_code="en")
Deliver = Callable[[int, dict], Awaitable[int]]

pytestmark = pytest.mark.committed


@pytest.fixture
def llm(llm: FakeOpenAI) -> FakeOpenAI:
    llm.set_responder(lambda _request: {"response": "Nice to hear from you.", "emotion": None, "memory_update": None,
                                        "todos": [], "topic": None, "context_variables": []})
    return llm


def replicas(telegram: FakeTelegram, llm: FakeOpenAI, uow_factory, engine,
             scenario: Callable[[Deliver], Awaitable[None]]) -> None:
    """Two bot applications as two replicas would run them (on ``uow_factory``: the webhook's marking units of
    work), and a load balancer that sends an update to the replica it is told to."""
    settings = Settings(_env_file=None, telegram_token=SecretStr(telegram.token),
                        telegram_api_base_url=telegram.base_url, default_timezone="UTC")

    def application():
        inbox = UpdateInbox(engine, "telegram")
        commands = MemoryCommands(uow_factory, default_timezone="UTC")
        return build_application(settings, conversation(uow_factory, settings, llm), commands, inbox=inbox), inbox

    async def main() -> None:
        serve = {"url": f"https://bot.example.org{PATH}", "listen": "127.0.0.1", "port": 0, "path": PATH,
                 "secret_token": SECRET, "allowed_updates": ALLOWED_UPDATES}
        (one, one_inbox), (two, two_inbox) = application(), application()
        async with webhook_running(one, **serve, inbox=one_inbox) as first, \
                webhook_running(two, **serve, inbox=two_inbox) as second, httpx.AsyncClient() as client:
            ports = (first, second)

            async def deliver(replica: int, body: dict) -> int:
                answer = await client.post(f"http://127.0.0.1:{ports[replica]}{PATH}", content=json.dumps(body),
                                           headers={"Content-Type": "application/json", SECRET_HEADER: SECRET})
                return answer.status_code

            await scenario(deliver)

    asyncio.run(main())


def test_an_update_delivered_to_both_replicas_at_once_or_again_later_is_handled_once(
        telegram, llm, uow_factory, marking_uow_factory, engine):
    remind, chat = update("/remind tomorrow 9am call the bank", EVE), update("hello there", EVE)
    help_ = update("/help", EVE)

    async def scenario(deliver: Deliver) -> None:
        for body in (remind, chat, help_):
            assert await asyncio.gather(deliver(0, body), deliver(1, body)) == [200, 200]
        assert await deliver(1, remind) == 200  # Telegram tries again later: the other replica this time

    replicas(telegram, llm, marking_uow_factory, engine, scenario)

    texts = [message["text"] for message in telegram.messages_to(EVE["id"])]
    assert len(texts) == 3, texts  # one answer each: the reminder set, the chat reply, the help
    assert sum(text.startswith("Nice to hear from you.") for text in texts) == 1
    assert len(llm.chat_requests()) == 1
    with uow_factory() as uow:
        assert uow.session.scalar(select(func.count()).select_from(Todo)) == 1
        assert uow.session.scalar(select(func.count()).select_from(ConversationTurn)
                                  .where(ConversationTurn.role == "user")) == 1


def test_an_update_a_stopped_replica_received_but_never_handled_is_answered_by_another(
        telegram, llm, uow_factory, marking_uow_factory, engine):
    remind = update("/remind tomorrow 9am water the plants", EVE)
    assert UpdateInbox(engine, "telegram").receive(remind["update_id"], json.dumps(remind))  # then it died
    with engine.begin() as connection:
        connection.execute(text("UPDATE platform_updates SET seen_at = now() - :silence"), {"silence": RECLAIM_AFTER})

    async def scenario(deliver: Deliver) -> None:
        await until(lambda: telegram.messages_to(EVE["id"]), what="the reminder to be set")
        assert await deliver(0, remind) == 200  # and Telegram, having had no answer, sends it again

    replicas(telegram, llm, marking_uow_factory, engine, scenario)

    assert len(telegram.messages_to(EVE["id"])) == 1
    with uow_factory() as uow:
        assert uow.session.scalar(select(func.count()).select_from(Todo)) == 1


def test_different_updates_are_shared_between_the_replicas(telegram, llm, uow_factory, marking_uow_factory, engine):
    async def scenario(deliver: Deliver) -> None:
        for index in range(6):
            assert await deliver(index % 2, update(f"/remind tomorrow {index + 1}pm stretch {index}", EVE)) == 200

    replicas(telegram, llm, marking_uow_factory, engine, scenario)

    assert len(telegram.messages_to(EVE["id"])) == 6
    with uow_factory() as uow:
        assert uow.session.scalar(select(func.count()).select_from(Todo)) == 6


def test_a_replica_starting_while_another_answers_a_message_does_not_answer_it_too(uow_factory):
    """The starting replica answers what looks unanswered; the message the other is answering is among them."""
    settings = Settings(_env_file=None, default_timezone="UTC")
    replies_of_the_starting_replica = []

    def replica_service(llm: FakeOpenAI) -> ConversationService:
        return conversation(uow_factory, settings, llm)

    async def start_the_other_replica(service: ConversationService) -> None:
        async for _message, reply in service.unanswered_replies("telegram"):
            replies_of_the_starting_replica.append(reply)

    with FakeOpenAI(models=("fake-chat",)) as llm:
        def answer(_request: dict) -> dict:
            if len(llm.chat_requests()) == 1:  # the first replica waits for the model: the other starts now
                asyncio.run(start_the_other_replica(replica_service(llm)))
            return {"response": "Nice to hear from you.", "emotion": None, "memory_update": None, "todos": [],
                    "topic": None, "context_variables": []}

        llm.set_responder(answer)
        message = IncomingMessage(platform="telegram", chat_id=str(EVE["id"]), user_id=str(EVE["id"]),
                                  text="hello there", sent_at=datetime.now(UTC), is_private=True, message_id="77")
        first = asyncio.run(replica_service(llm).handle_message(message))

    assert [reply.text for reply in replies_of_the_starting_replica] == ["Nice to hear from you."]
    assert first.duplicate  # the first replica sends nothing: the message was answered meanwhile
    with uow_factory() as uow:
        assert uow.session.scalar(select(func.count()).select_from(ConversationTurn)
                                  .where(ConversationTurn.role == "assistant")) == 1


def test_a_message_recorded_after_a_replica_started_is_left_to_the_process_answering_it(uow_factory):
    """A bot's scan at its start can run late (a slow database, a busy machine): a message recorded since it started
    is in a live process's hands, and answering it too would ask the model twice and count it twice against the
    user's message rate."""
    settings = Settings(_env_file=None, default_timezone="UTC")
    started = datetime.now(UTC)
    replies_of_the_late_scan = []

    with FakeOpenAI(models=("fake-chat",)) as llm:
        def answer(_request: dict) -> dict:
            if len(llm.chat_requests()) == 1:  # the scan of a replica that started before the message runs now
                async def late_scan() -> None:
                    async for _message, reply in conversation(uow_factory, settings, llm).unanswered_replies(
                            "telegram", recorded_by=started):
                        replies_of_the_late_scan.append(reply)
                asyncio.run(late_scan())
            return {"response": "Nice to hear from you.", "emotion": None, "memory_update": None, "todos": [],
                    "topic": None, "context_variables": []}

        llm.set_responder(answer)
        message = IncomingMessage(platform="telegram", chat_id=str(EVE["id"]), user_id=str(EVE["id"]),
                                  text="hello there", sent_at=datetime.now(UTC), is_private=True, message_id="78")
        first = asyncio.run(conversation(uow_factory, settings, llm).handle_message(message))
        asked = len(llm.chat_requests())

    assert replies_of_the_late_scan == [] and asked == 1
    assert first.text == "Nice to hear from you." and not first.duplicate
