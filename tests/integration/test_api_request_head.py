"""One request's head costs a bounded amount, whoever sends it: a real uvicorn, configured as ``mnemo api``
configures it, refuses a too-long request target (414) or header block (431) before anything reads it, and
what the access log and the refusal line write of it is redacted in linear time and cut to a bounded size."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator

import pytest

from bot.api.app import create_app
from bot.api.head_limit import MAX_HEAD_BYTES, MAX_HEADER_BYTES, MAX_REQUEST_TARGET_BYTES
from bot.api.server import uvicorn_options
from shared.app.logs import LOGGED_TEXT_MAX_CHARS
from shared.settings import Settings
from tests.integration.test_api import BASE
from tests.integration.test_api_limits import UntouchedPanel, read_until_closed, served
from tests.log_capture import json_logs


def served_as_mnemo_api():
    """The app on a real uvicorn with ``mnemo api``'s options, at DEBUG (the worst case for the logs)."""
    app = create_app(UntouchedPanel(), admin_token=None, public_url=BASE)  # type: ignore[arg-type]
    return served(app, **uvicorn_options(Settings(_env_file=None, log_level="DEBUG")))


def exchange(port: int, head: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(head)
        return read_until_closed(sock)


@pytest.fixture
def logs() -> Iterator:
    with json_logs(logging.DEBUG, secrets=["s3cret-for-the-head-tests"]) as out:
        yield out


@pytest.mark.parametrize("target", [
    "/" + "q" * 70_000,                              # letters without "://": was quadratic in the redaction
    "/panel/" + "Ab1" * 11_000,
    "/api/v1/memory/long-term?" + "k=v&" * 5_000,   # a query string
    "/" + "%41" * 4_000,                             # short once decoded, long as sent
])
def test_a_request_target_over_the_limit_is_refused_with_414_and_logged_short(logs, target):
    assert len(target.encode()) > MAX_REQUEST_TARGET_BYTES
    with served_as_mnemo_api() as port:
        answer = exchange(port, f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        after = exchange(port, b"GET /favicon.ico HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 414 ")
    assert b'"code":"uri_too_long"' in answer
    assert after.startswith(b"HTTP/1.1 204 ")
    lines = logs.getvalue().splitlines()
    assert any("uri_too_long" in line for line in lines)
    assert all(len(line) < LOGGED_TEXT_MAX_CHARS + 1_000 for line in lines)


def test_a_target_just_under_the_limit_is_served():
    with served_as_mnemo_api() as port:
        path = "/favicon.ico?" + "z" * (MAX_REQUEST_TARGET_BYTES - len("/favicon.ico?"))
        answer = exchange(port, f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 204 ")


@pytest.mark.parametrize("headers", [
    [("X-Long", "h" * (MAX_HEADER_BYTES + 10))],
    [(f"X-Many-{n}", "v" * 90) for n in range(200)],
])
def test_headers_over_the_limit_are_refused_with_431(logs, headers):
    head = "GET /favicon.ico HTTP/1.1\r\nHost: x\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
    with served_as_mnemo_api() as port:
        answer = exchange(port, head.encode())
    assert answer.startswith(b"HTTP/1.1 431 ")
    assert b'"code":"headers_too_large"' in answer


def test_a_head_that_arrives_in_pieces_is_not_buffered_past_the_limit():
    with served_as_mnemo_api() as port, socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET /" + b"p" * 1000)
        sent = 1005
        sock.settimeout(10)
        try:
            while sent <= MAX_HEAD_BYTES + 4096:
                sock.sendall(b"p" * 1024)
                sent += 1024
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = read_until_closed(sock)
    assert answer == b"" or answer.startswith(b"HTTP/1.1 400 ")  # h11 refuses the buffer; never a 200

