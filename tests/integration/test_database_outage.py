"""Turns are not lost when PostgreSQL goes away or a bot stops mid-turn (issue 14, item 4).

The database is the real one, reached through a relay (tests/fakes/database_outage.py) that a test
takes down and brings back: Mnemo sees the connection errors a stopped server gives. A bot "stopped
mid-turn" is a turn whose task is cancelled while the LLM is answering, after the user's turn was
recorded, as ``kill -9`` leaves it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from bench.fakes.openai_server import FakeOpenAI
from bot.api.app import create_app
from bot.api.auth import SignInLimiter
from bot.console import chat_loop
from bot.console_commands import ConsoleCommands
from shared.commands import texts
from shared.commands.panel import PanelService
from shared.commands.service import Caller, MemoryCommands
from shared.conversation.config import ConversationConfig
from shared.conversation.messages import IncomingMessage
from shared.conversation.service import ConversationService
from shared.db.engine import make_engine, session_factory
from shared.db.memory_models import OutboxJob
from shared.db.models import ConversationSession, ConversationTurn
from shared.errors import DatabaseUnavailable
from shared.repositories.uow import UnitOfWork
from tests.builders import PER_TURN_CONFIG, chat_model, conversation, model_turn
from tests.fakes.database_outage import DatabaseOutage
from tests.waiting import until

pytestmark = pytest.mark.committed

CONFIG = replace(PER_TURN_CONFIG, default_timezone="Europe/Lisbon", database_patience=timedelta(seconds=60))


def llm_turn(response: str) -> dict:
    return model_turn(response)


@pytest.fixture
def outage(migrated_url: str) -> Iterator[DatabaseOutage]:
    with DatabaseOutage(migrated_url) as relay:
        yield relay


@pytest.fixture
def relayed(outage: DatabaseOutage, uow_factory):
    """Units of work that reach the database through the relay (``uow_factory`` empties the tables after)."""
    engine = make_engine(outage.url, pool_size=2, max_overflow=2, connect_args={"connect_timeout": 5})
    factory = session_factory(engine)
    yield lambda: UnitOfWork(factory)
    engine.dispose()


def service_on(uow_factory, llm: FakeOpenAI | None, config: ConversationConfig = CONFIG) -> ConversationService:
    return conversation(uow_factory, config, chat_model(llm, timeout_seconds=30) if llm else None)


def message(text: str, message_id: str, *, user: str = "501", chat: str = "501", platform: str = "telegram",
            private: bool = True) -> IncomingMessage:
    return IncomingMessage(platform=platform, chat_id=chat, user_id=user, text=text, sent_at=datetime.now(UTC),
                           is_private=private, display_name=f"user {user}", message_id=message_id)


def turns(uow_factory) -> list[tuple[str, str]]:
    with uow_factory() as uow:
        rows = uow.session.scalars(select(ConversationTurn).order_by(ConversationTurn.id))
        return [(row.role, row.text) for row in rows]


def owed_jobs(uow_factory) -> list[str]:
    with uow_factory() as uow:
        return [job.task for job in uow.session.scalars(select(OutboxJob).order_by(OutboxJob.id))]


async def stopped_mid_turn(service: ConversationService, llm: FakeOpenAI, incoming: IncomingMessage) -> None:
    """The process dies while the LLM is answering: the user's turn is recorded, nothing else happens."""
    llm.queue_reply(llm_turn("never delivered"), delay=30)
    asked = len(llm.chat_requests())
    task = asyncio.create_task(service.handle_message(incoming))
    await until(lambda: len(llm.chat_requests()) > asked, what="the LLM to be asked")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_a_connection_being_opened_as_the_database_goes_away_does_not_outlive_it(outage, monkeypatch):
    """The relay itself: a connection whose server side was being opened when ``down()`` came is refused too (a
    bot's start-up connection once slipped through so, and its message was answered with the database away)."""
    import socket

    import psycopg

    from tests.fakes import database_outage

    real = socket.create_connection

    def down_meanwhile(*args, **kwargs):
        outage.down()
        return real(*args, **kwargs)

    monkeypatch.setattr(database_outage.socket, "create_connection", down_meanwhile)
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(outage.url, connect_timeout=5).close()
    assert outage.refused == 1


def test_a_message_sent_while_the_database_is_away_is_kept_and_answered_once_it_is_back(
        relayed, outage, llm, uow_factory):
    llm.queue_reply(llm_turn("Welcome back to Porto!"))
    service, told = service_on(relayed, llm), []

    async def tell() -> None:
        told.append(outage.refused)

    async def main():
        outage.down()
        answer = asyncio.create_task(service.handle_message(message("I moved to Porto", "71"), on_delay=tell))
        await until(lambda: told and outage.refused >= 2, what="the message to be tried again while away")
        outage.up()
        return await answer

    reply = asyncio.run(main())
    assert reply.text == "Welcome back to Porto!"
    assert not reply.offline
    assert len(told) == 1, "the user is told once, however many times it is tried"
    assert turns(uow_factory) == [("user", "I moved to Porto"), ("assistant", "Welcome back to Porto!")]
    assert owed_jobs(uow_factory) == ["extract_turn"]


def test_the_database_going_away_during_the_llm_call_still_records_the_reply_and_its_jobs(
        relayed, outage, llm, uow_factory):
    def answer_while_the_database_goes_away(_request):
        outage.down()
        return llm_turn("Porto has good coffee.")

    llm.set_responder(answer_while_the_database_goes_away)
    service, told = service_on(relayed, llm), []

    async def tell() -> None:
        told.append(True)

    async def main():
        answer = asyncio.create_task(service.handle_message(message("coffee ideas?", "72"), on_delay=tell))
        await until(lambda: told and outage.refused >= 1, what="the reply to wait for the database")
        outage.up()
        return await answer

    reply = asyncio.run(main())
    assert reply.text == "Porto has good coffee."
    assert not reply.warnings
    assert turns(uow_factory) == [("user", "coffee ideas?"), ("assistant", "Porto has good coffee.")]
    assert owed_jobs(uow_factory) == ["extract_turn"]


def test_past_its_patience_a_message_is_refused_in_words_and_nothing_half_done_remains(relayed, outage, uow_factory):
    service = service_on(relayed, None, replace(CONFIG, database_patience=timedelta(seconds=1)))
    outage.down()
    with pytest.raises(DatabaseUnavailable) as refused:
        asyncio.run(service.handle_message(message("are you there?", "73")))
    outage.up()
    assert "can't be reached" in texts.error_text(refused.value, "en")
    assert "暂时连不上" in texts.error_text(refused.value, "zh-CN")
    assert turns(uow_factory) == []


class LostCommit:
    """A unit of work whose first commit lands but whose answer is lost (the connection dropped after COMMIT)."""

    def __init__(self, factory, armed: int) -> None:
        self.factory, self.armed, self.lost = factory, armed, 0

    def __call__(self):
        uow = self.factory()
        commit = uow.commit

        def commit_then_lose_the_answer() -> None:
            commit()
            if self.lost < self.armed:
                self.lost += 1
                raise DatabaseUnavailable("database_unavailable")

        uow.commit = commit_then_lose_the_answer
        return uow


def test_a_step_whose_commit_landed_but_went_unconfirmed_is_not_done_twice(uow_factory, llm):
    lossy = LostCommit(uow_factory, armed=2)  # the user's turn, then the reply: both land, both unconfirmed
    service = service_on(lossy, llm)
    llm.queue_reply(llm_turn("Noted."))
    reply = asyncio.run(service.handle_message(message("my sister is called Inês", "74")))
    assert reply.text == "Noted."
    assert lossy.lost == 2
    assert turns(uow_factory) == [("user", "my sister is called Inês"), ("assistant", "Noted.")]
    assert owed_jobs(uow_factory) == ["extract_turn"]


def test_a_message_recorded_when_the_bot_stopped_is_answered_on_the_next_start_and_only_once(uow_factory, llm):
    first = service_on(uow_factory, llm)
    llm.queue_reply(llm_turn("Hi!"))
    asyncio.run(first.handle_message(message("hello there", "80")))
    assert asyncio.run(first.handle_message(message("hello there", "80"))).duplicate
    asyncio.run(stopped_mid_turn(first, llm, message("what should I cook tonight?", "81")))
    assert turns(uow_factory)[-1] == ("user", "what should I cook tonight?")

    llm.queue_reply(llm_turn("How about bacalhau?"))
    restarted = service_on(uow_factory, llm)

    async def answered() -> list:
        return [(incoming.message_id, incoming.text, reply.text)
                async for incoming, reply in restarted.unanswered_replies("telegram")]

    assert asyncio.run(answered()) == [("81", "what should I cook tonight?", "How about bacalhau?")]
    assert asyncio.run(answered()) == []
    assert [text for role, text in turns(uow_factory) if role == "user"].count("what should I cook tonight?") == 1
    prompt = llm.chat_requests()[-1]["messages"]
    assert sum("what should I cook tonight?" in str(said["content"]) for said in prompt) == 1, \
        "the message is asked once, not also as history"
    assert owed_jobs(uow_factory).count("extract_turn") == 2


def test_only_a_message_that_ends_a_conversation_still_open_is_owed_an_answer(uow_factory, llm):
    service = service_on(uow_factory, llm)
    for user, text, number in (("601", "first words", "1"), ("601", "second words", "2"), ("602", "closed chat", "3"),
                               ("603", "on discord", "4"), ("604", "long ago", "5")):
        platform = "discord" if user == "603" else "telegram"
        asyncio.run(stopped_mid_turn(service, llm, message(text, number, user=user, chat=user, platform=platform)))
    with uow_factory() as uow:
        sessions = {row.id: row for row in uow.session.scalars(select(ConversationSession))}
        by_text = {row.text: row.session_id for row in uow.session.scalars(select(ConversationTurn))}
        uow.sessions.close(by_text["closed chat"], datetime.now(UTC))
        sessions[by_text["long ago"]].updated_at = datetime.now(UTC) - timedelta(hours=2)
        uow.commit()

    def owed(platform: str, **only) -> list[str]:
        with uow_factory() as uow:
            rows = uow.turns.unanswered(platform, datetime.now(UTC) - CONFIG.idle, 100, **only)
        return [row.turn.text for row in rows]

    assert owed("telegram") == ["second words"], "the last message of each open conversation"
    assert owed("discord") == ["on discord"]
    assert owed("telegram", platform_user_id="601") == ["second words"]
    assert owed("telegram", platform_user_id="602") == []


def test_the_console_keeps_a_message_while_the_database_is_away_and_answers_it_after(relayed, outage, tmp_path):
    lines = iter(["/memories", "I live in Braga now"])
    out: list[str] = []

    def read_line(_prompt: str) -> str:
        outage.down()
        try:
            return next(lines)
        except StopIteration:
            outage.up()
            raise EOFError from None

    def write(text: str) -> None:
        out.append(text)
        if text == texts.waiting_for_database_text("en"):
            outage.up()

    caller = Caller(platform="console", platform_user_id="tester", locale="en", platform_chat_id="console")
    commands = ConsoleCommands(MemoryCommands(relayed, default_timezone="Europe/Lisbon"), caller,
                               ask=lambda _question: "n", export_dir=tmp_path)
    asyncio.run(chat_loop(service_on(relayed, None), user_id="tester", bot_name="Mnemo", read_line=read_line,
                          write=write, commands=commands))
    assert texts.error_text(DatabaseUnavailable("database_unavailable"), "en") in out, "/memories says why"
    waiting = out.index(texts.waiting_for_database_text("en"))
    assert out[waiting + 1].startswith("Mnemo (offline)> "), out
    assert out[-1] == "Bye."


def test_the_console_answers_what_it_was_told_before_it_stopped(uow_factory, llm, tmp_path):
    service = service_on(uow_factory, llm)
    said = message("remind me what I said about Braga", "20261123-1", user="tester", chat="console",
                   platform="console")
    asyncio.run(stopped_mid_turn(service, llm, said))
    llm.queue_reply(llm_turn("You said you live in Braga."))
    out: list[str] = []

    def read_line(_prompt: str) -> str:
        raise EOFError

    asyncio.run(chat_loop(service_on(uow_factory, llm), user_id="tester", bot_name="Mnemo", read_line=read_line,
                          write=out.append))
    assert out[1:3] == [texts.answered_late_text("remind me what I said about Braga", None),
                        "Mnemo> You said you live in Braga."]


def test_the_api_answers_503_in_its_error_shape_while_the_database_is_away_and_200_after(relayed, outage):
    panel = PanelService(relayed, session_lifetime=timedelta(hours=1))
    client = TestClient(create_app(panel, admin_token=None, public_url="http://testserver",
                                   limiter=SignInLimiter(per_address=100)), base_url="http://testserver")
    assert client.get("/api/v1/health").status_code == 200
    outage.down()
    away = client.get("/api/v1/health")
    assert (away.status_code, away.json()["code"], away.headers["Retry-After"]) == (503, "database_unavailable", "30")
    assert "can't be reached" in away.json()["detail"]
    outage.up()
    assert client.get("/api/v1/health").status_code == 200
