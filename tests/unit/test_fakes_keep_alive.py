"""The loopback fakes keep connections open when asked (``keep_alive=True``), as the real APIs let a client do,
through the real client libraries: openai (httpx), python-telegram-bot (httpx) and discord.py (aiohttp)."""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import openai
import pytest

from bench.fakes.discord_api import FakeDiscord
from bench.fakes.openai_server import FakeOpenAI
from bench.fakes.telegram_api import FakeTelegram

MESSAGES = [{"role": "user", "content": "Remember that my cat is called Miso."}]


def two_calls_then_one_streamed(llm: FakeOpenAI) -> str:
    with openai.OpenAI(base_url=llm.base_url, api_key="x", max_retries=0, timeout=10) as client:
        client.chat.completions.create(model="fake-chat", messages=MESSAGES)
        client.chat.completions.create(model="fake-chat", messages=MESSAGES)
        stream = client.chat.completions.create(model="fake-chat", messages=MESSAGES, stream=True)
        return "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)


@pytest.mark.parametrize(("keep_alive", "connections"), [(True, 1), (False, 3)])
def test_the_openai_sdk_keeps_one_connection_for_plain_and_streamed_answers(keep_alive: bool,
                                                                           connections: int) -> None:
    with FakeOpenAI(keep_alive=keep_alive) as llm:
        llm.queue_reply("first")
        llm.queue_reply("second")
        llm.queue_reply("a streamed answer, in pieces, whole")
        streamed = two_calls_then_one_streamed(llm)
        assert llm.connections == connections
    assert streamed == "a streamed answer, in pieces, whole"  # the chunked body framed the events whole


def test_the_openai_sdk_leaves_a_streamed_answers_connection_as_with_a_real_server() -> None:
    """The SDK stops reading at ``[DONE]`` and closes the response before the body's last (empty) chunk, so
    httpx drops that connection: the fake may not hide a connection a streamed reply really costs."""
    with FakeOpenAI(keep_alive=True) as llm, \
            openai.OpenAI(base_url=llm.base_url, api_key="x", max_retries=0, timeout=10) as client:
        for _ in range(2):
            stream = client.chat.completions.create(model="fake-chat", messages=MESSAGES, stream=True)
            assert "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
        assert llm.connections == 2


def test_python_telegram_bot_keeps_its_connection() -> None:
    import telegram

    async def talk(fake: FakeTelegram) -> None:
        bot = telegram.Bot(fake.token, base_url=fake.base_url)
        async with bot:
            for n in range(4):
                await bot.send_message(chat_id=42, text=f"hello {n}")

    with FakeTelegram(keep_alive=True) as fake:
        asyncio.run(talk(fake))
        assert [m["text"] for m in fake.messages_to(42)] == [f"hello {n}" for n in range(4)]
        assert fake.connections < 5  # getMe and four messages, over the connections the pool opened


def test_discord_py_keeps_its_connection() -> None:
    import discord

    from bot.discord_bot import use_api

    async def post(fake: FakeDiscord) -> None:
        client = discord.Client(intents=discord.Intents.none())
        async with client:
            await client.login(fake.token)
            for n in range(4):
                await client.get_partial_messageable(777).send(f"hello {n}")

    base = discord.http.Route.BASE
    with FakeDiscord(keep_alive=True) as fake:
        use_api(fake.base_url)
        try:
            asyncio.run(post(fake))
        finally:
            discord.http.Route.BASE = base
        assert [m["content"] for m in fake.messages_in("777")] == [f"hello {n}" for n in range(4)]
        assert fake.connections == 1


def test_a_dropped_request_still_drops_its_connection() -> None:
    with FakeTelegram(keep_alive=True) as fake, httpx.Client(timeout=10) as client:
        fake.stall_next(0.05)
        with pytest.raises(httpx.RemoteProtocolError):  # the server closed it without an answer
            client.post(f"{fake.base_url}{fake.token}/getMe")
        assert client.post(f"{fake.base_url}{fake.token}/getMe").json()["ok"] is True


def test_stop_ends_a_connection_kept_open_by_its_client() -> None:
    fake = FakeTelegram(keep_alive=True).start()
    client = httpx.Client(timeout=10)
    assert client.post(f"{fake.base_url}{fake.token}/getMe").json()["ok"] is True
    stopped = threading.Event()

    def stop() -> None:
        fake.stop()
        stopped.set()

    threading.Thread(target=stop, daemon=True).start()
    try:
        # without closing the idle connection, stop() joins a thread reading it until its 30 s timeout
        assert stopped.wait(10), "stop() waited on a connection its client kept"
    finally:
        client.close()


class _Replica(BaseHTTPRequestHandler):
    """A webhook replica that takes every update; it ends a connection after ``server.requests_per_connection``."""

    protocol_version = "HTTP/1.1"
    server: _ReplicaServer

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.server.updates.append((self.server.connections, self.headers.get("X-Telegram-Bot-Api-Secret-Token")))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
        self.served += 1

    def handle(self) -> None:
        self.server.connections += 1
        self.served, self.close_connection = 0, False
        while not self.close_connection and self.served < self.server.requests_per_connection:
            self.handle_one_request()

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _ReplicaServer(ThreadingHTTPServer):
    def __init__(self, requests_per_connection: int) -> None:
        super().__init__(("127.0.0.1", 0), _Replica)
        self.requests_per_connection = requests_per_connection
        self.connections = 0
        self.updates: list[tuple[int, str | None]] = []  # (the connection it came on, its secret token)


@contextmanager
def replica(requests_per_connection: int) -> Iterator[_ReplicaServer]:
    server = _ReplicaServer(requests_per_connection)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(("requests_per_connection", "connections"), [(100, 1), (2, 3)])
def test_webhook_updates_go_over_a_kept_connection_and_a_closed_one_is_opened_anew(
        requests_per_connection: int, connections: int) -> None:
    with FakeTelegram(keep_alive=True) as fake, replica(requests_per_connection) as server:
        fake._webhook = {"url": "", "secret_token": "s3cret"}
        url = f"http://127.0.0.1:{server.server_address[1]}/telegram/hook"
        statuses = []
        for n in range(5):
            statuses.append(fake.post_update(url, {"update_id": n}))
            time.sleep(0.05)  # the replica has closed a spent connection before the next update comes
    assert statuses == [200] * 5
    assert len(server.updates) == 5 and {secret for _, secret in server.updates} == {"s3cret"}
    assert server.connections == connections


def test_a_kept_connection_does_not_wait_for_delayed_acks() -> None:
    """With Nagle's algorithm on, an answer's body (a second small write) waits for the client's delayed ACK of
    its headers: ~40 ms a request on a kept connection, which made the load bench's fakes its bottleneck."""
    with FakeTelegram(keep_alive=True) as fake, httpx.Client(timeout=10) as client:
        url = f"{fake.base_url}{fake.token}/sendMessage"
        client.post(url, json={"chat_id": 1, "text": "warm"})
        began = time.monotonic()
        for n in range(20):
            client.post(url, json={"chat_id": 1, "text": f"hello {n}"})
        took = time.monotonic() - began
        assert fake.connections == 1
    assert took < 0.5, f"20 requests on one connection took {took:.2f} s (about 0.8 s is Nagle's wait)"


def test_a_client_resetting_its_kept_connection_prints_no_traceback(capfd: pytest.CaptureFixture[str]) -> None:
    with FakeTelegram(keep_alive=True) as fake:
        host, port = fake.base_url.removeprefix("http://").split("/")[0].split(":")
        with socket.create_connection((host, int(port))) as raw:
            raw.sendall(f"GET /bot{fake.token}/getMe HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            assert b"200 OK" in raw.recv(65536)
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a reset
        deadline = time.monotonic() + 5
        while fake._server is not None and fake._server._open and time.monotonic() < deadline:
            time.sleep(0.01)
    assert "Traceback" not in capfd.readouterr().err
