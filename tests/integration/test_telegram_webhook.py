"""Webhook mode end to end: the real python-telegram-bot application behind our webhook receiver,
updates POSTed to its port as Telegram does, answers sent to the fake Bot API, on real PostgreSQL.

When the ``webhook_running`` block ends, the server stops and the application handles every queued
update and waits for its handlers, so what a test asserts afterwards is all the bot will do."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from bench.fakes.telegram_api import FakeTelegram, chat_object, user_object
from bot.telegram_bot import ALLOWED_UPDATES, build_application
from bot.telegram_webhook import MAX_UPDATE_BYTES, SECRET_HEADER, webhook_running
from shared.commands.service import MemoryCommands
from shared.db.update_log import UpdateInbox
from shared.settings import Settings
from tests.builders import conversation, telegram_settings
from tests.waiting import until

SECRET = "webhook-secret_0123456789abcdef"
PATH = "/telegram/hook-7f3a"
DANA = user_object(2001, "Dana", language_code="en")
Post = Callable[..., Awaitable[httpx.Response]]

pytestmark = pytest.mark.committed


@pytest.fixture
def settings(telegram: FakeTelegram, monkeypatch: pytest.MonkeyPatch) -> Settings:
    return telegram_settings(telegram, monkeypatch)


def run_webhook_bot(settings: Settings, uow_factory, scenario: Callable[[Post, int], Awaitable[None]], *,
                    inbox: UpdateInbox | None = None) -> None:
    """Serve the bot's webhook on a free port of loopback, play the scenario, stop it."""
    async def main() -> None:
        application = build_application(settings, conversation(uow_factory, settings),
                                        MemoryCommands(uow_factory, default_timezone="Asia/Shanghai"), inbox=inbox)
        async with webhook_running(application, url=f"https://bot.example.org{PATH}", listen="127.0.0.1", port=0,
                                   path=PATH, secret_token=SECRET, allowed_updates=ALLOWED_UPDATES,
                                   inbox=inbox) as port, \
                httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:

            async def post(body: bytes | dict, *, secret: str | bytes | None = SECRET) -> httpx.Response:
                headers: dict[str, str | bytes] = {"Content-Type": "application/json"}
                if secret is not None:
                    headers[SECRET_HEADER] = secret
                content = body if isinstance(body, bytes) else json.dumps(body).encode()
                return await client.post(PATH, content=content, headers=headers)

            await scenario(post, port)

    asyncio.run(main())


_update_ids = iter(range(500, 10**6))


def update(text: str, from_user: dict[str, Any] | None = DANA, chat: dict[str, Any] | None = None) -> dict:
    """A message update as Telegram sends it (a leading command gets its entity)."""
    sender = from_user or DANA
    message: dict[str, Any] = {"message_id": next(_update_ids), "date": int(time.time()),
                               "chat": chat or chat_object(sender["id"]), "text": text}
    if from_user is not None:
        message["from"] = from_user
    if text.startswith("/"):
        message["entities"] = [{"type": "bot_command", "offset": 0, "length": len(text.split()[0])}]
    return {"update_id": next(_update_ids), "message": message}


def nested(depth: int) -> bytes:
    return b'{"update_id": 1, "message": ' + b'{"a": ' * depth + b"1" + b"}" * depth + b"}"


def test_the_webhook_is_set_with_its_secret_and_an_update_posted_to_it_is_answered(telegram, settings, uow_factory):
    async def scenario(post: Post, _port: int) -> None:
        assert (await post(update("/help"))).status_code == 200

    run_webhook_bot(settings, uow_factory, scenario)
    registered = telegram.calls_to("setWebhook")[0].params
    assert registered["url"] == f"https://bot.example.org{PATH}"
    assert registered["secret_token"] == SECRET
    assert json.loads(registered["allowed_updates"]) == ALLOWED_UPDATES
    assert "/remember" in telegram.messages_to(DANA["id"])[-1]["text"]


def test_a_request_without_the_right_secret_is_refused_and_reaches_no_handler(telegram, settings, uow_factory):
    async def scenario(post: Post, _port: int) -> None:
        answers = [(await post(update("/help"), secret=secret)).status_code
                   for secret in (None, "", SECRET[:-1], SECRET + "x", "ü".encode() * 8)]
        assert answers == [403] * 5

    run_webhook_bot(settings, uow_factory, scenario)
    assert telegram.sent == []


@pytest.mark.parametrize("body, why", [
    (b'{"update_id": 7, "message": {"text": "secret words"', "not JSON"),
    (b'{"update_id": 7, "message": {"text": "secret words \xff\xfe"}}', "not UTF-8"),
    (nested(40), "nested deeper than 32"),
    (b'["secret words"]', "a JSON list"),
    (b'{"update_id": 7, "message": "secret words"}', "cannot read"),
    (b'{"message": {"text": "secret words", "date": "yesterday", "chat": {"id": 5}}}', "cannot read"),
])
def test_a_body_that_is_not_an_update_is_answered_200_logged_once_briefly_and_dropped(
        telegram, settings, uow_factory, caplog, body, why):
    caplog.set_level(logging.DEBUG)

    async def scenario(post: Post, _port: int) -> None:
        assert (await post(body)).status_code == 200
        assert (await post(update("/help"))).status_code == 200  # the next update is served as usual

    run_webhook_bot(settings, uow_factory, scenario)
    dropped = [r for r in caplog.records if r.name == "bot.telegram_webhook" and r.levelno >= logging.WARNING]
    assert len(dropped) == 1 and why in dropped[0].getMessage() and len(dropped[0].getMessage()) < 300
    assert not any("secret words" in r.getMessage() or r.levelno >= logging.ERROR for r in caplog.records)
    assert len(telegram.sent) == 1  # only the help


@pytest.mark.parametrize("update_id", [-3, 2**63 + 7, 10**30, "42", "7f", False, 12.5, {"n": 1}, []],
                         ids=["negative", "past-bigint", "huge", "digits-as-text", "hex-text", "false", "fraction",
                              "object", "empty-list"])
@pytest.mark.parametrize("replicas", [False, True], ids=["alone", "with-inbox"])
def test_a_readable_update_with_an_odd_update_id_is_answered_200_and_dropped(
        telegram, settings, uow_factory, marking_uow_factory, engine, caplog, update_id, replicas):
    caplog.set_level(logging.INFO)
    inbox = UpdateInbox(engine, "telegram") if replicas else None

    async def scenario(post: Post, _port: int) -> None:
        odd = {**update("/help"), "update_id": update_id}
        assert (await post(odd)).status_code == 200
        assert (await post(update("/help"))).status_code == 200  # the next update is served as usual
        await until(lambda: telegram.sent, what="the next update's answer")

    run_webhook_bot(settings, marking_uow_factory if replicas else uow_factory, scenario, inbox=inbox)
    assert len(telegram.sent) == 1  # only the second update's help
    assert not any(r.levelno >= logging.ERROR for r in caplog.records)
    assert any("update_id" in r.getMessage() for r in caplog.records if r.name == "bot.telegram_webhook")


def test_a_body_over_the_limit_is_refused_before_it_is_read(telegram, settings, uow_factory, caplog):
    async def scenario(_post: Post, port: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"POST {PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{SECRET_HEADER}: "
                     f"{SECRET}\r\nContent-Length: {40 * 1024 * 1024}\r\n\r\n{{".encode())
        await writer.drain()
        answer = await reader.read()  # until the server closes the connection
        writer.close()
        assert answer.startswith(b"HTTP/1.1 400 ")

    run_webhook_bot(settings, uow_factory, scenario)
    assert MAX_UPDATE_BYTES < 40 * 1024 * 1024 and telegram.sent == []


def test_a_body_just_under_the_limit_is_read(telegram, settings, uow_factory):
    padded = update("/help")
    padded["message"]["padding"] = "p" * (MAX_UPDATE_BYTES - 1000)

    async def scenario(post: Post, _port: int) -> None:
        assert (await post(padded)).status_code == 200

    run_webhook_bot(settings, uow_factory, scenario)
    assert "/remember" in telegram.messages_to(DANA["id"])[-1]["text"]


@pytest.mark.parametrize("language_code", ["\u0000", "zh\u0000", "x" * 40, "🙂", "zh_CN'; --"])
def test_an_odd_language_code_falls_back_to_the_default_language(telegram, settings, uow_factory, caplog,
                                                                 language_code):
    user = user_object(2002 + len(language_code), "Eve", language_code=language_code)

    async def scenario(post: Post, _port: int) -> None:
        assert (await post(update("/remember I keep bees", user))).status_code == 200
        assert (await post(update("hello there", user))).status_code == 200

    run_webhook_bot(settings, uow_factory, scenario)
    answers = [m["text"] for m in telegram.messages_to(user["id"])]  # in either order: handled concurrently
    remembered = [text for text in answers if "I keep bees" in text]
    assert len(answers) == 2 and len(remembered) == 1 and "记" not in remembered[0]
    assert not any(r.levelno >= logging.ERROR for r in caplog.records)
    with uow_factory() as uow:
        assert uow.users.identity("telegram", str(user["id"])).locale is None


def test_a_chinese_language_tag_is_kept(telegram, settings, uow_factory):
    user = user_object(2100, "Fang", language_code="zh-hans")

    async def scenario(post: Post, _port: int) -> None:
        assert (await post(update("/remember 我养蜜蜂", user))).status_code == 200

    run_webhook_bot(settings, uow_factory, scenario)
    with uow_factory() as uow:
        assert uow.users.identity("telegram", "2100").locale == "zh-hans"


def test_a_message_without_a_sender_is_ignored_quietly(telegram, settings, uow_factory, caplog):
    async def scenario(post: Post, _port: int) -> None:
        for text in ("/memories", "/remember nobody", "hello"):
            assert (await post(update(text, from_user=None, chat=chat_object(2200)))).status_code == 200
        assert (await post(update("/help"))).status_code == 200

    run_webhook_bot(settings, uow_factory, scenario)
    assert [m["chat_id"] for m in telegram.sent] == [DANA["id"]]
    assert not any(r.levelno >= logging.ERROR for r in caplog.records)


def test_the_listening_socket_is_closed_when_the_bot_stops(telegram, settings, uow_factory):
    ports: list[int] = []

    async def scenario(_post: Post, port: int) -> None:
        ports.append(port)

    run_webhook_bot(settings, uow_factory, scenario)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", ports[0]), timeout=5).close()
