"""The memory API's limits, as a client meets them: the body limit, strict JSON, strict types and
server errors, through FastAPI's test client, the raw ASGI interface and a real uvicorn on port 0.

Every refusal answers the documented ``{code, detail}`` shape and is logged as one line.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import logging
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
import uvicorn
from fastapi.testclient import TestClient

from bot.api import schemas
from bot.api.app import create_app
from bot.api.auth import COOKIE, SignInLimiter
from bot.api.body_limit import DRAIN_FACTOR
from bot.api.json_body import (
    MAX_JSON_BODY_BYTES,
    MAX_JSON_DEPTH,
    MAX_JSON_DIGITS,
    JsonRefused,
    parse_json_body,
)
from shared.accounts.user_data import MAX_IMPORT_BYTES
from shared.commands.panel import PanelService
from shared.commands.service import MemoryCommands
from shared.errors import ConfigError
from shared.settings import DEFAULT_API_MAX_BODY_BYTES, load_settings
from tests.integration.test_api import ADMIN, ANN, BASE, MEMORIES, Api, add
from tests.waiting import wait_for

LIMIT = 96 * 1024
"""A body limit for the tests, far under the default, so oversized bodies stay small."""


class UntouchedPanel:
    """A panel service that records any use: a refused request must not reach one."""

    def __init__(self) -> None:
        self.used: list[str] = []

    def __getattr__(self, name: str):
        self.used.append(name)
        raise AssertionError(f"the request reached the panel service ({name})")


@pytest.fixture
def untouched() -> UntouchedPanel:
    return UntouchedPanel()


@pytest.fixture
def limited_app(untouched):
    return create_app(untouched, admin_token=ADMIN, public_url=BASE, max_body_bytes=LIMIT)


@pytest.fixture
def api(uow_factory) -> Api:
    panel = PanelService(uow_factory, session_lifetime=timedelta(hours=1))
    app = create_app(panel, admin_token=ADMIN, public_url=BASE, limiter=SignInLimiter(per_address=100))
    return Api(app, MemoryCommands(uow_factory, panel_url=BASE), uow_factory)


def assert_documented_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["code"] == code
    assert isinstance(body["detail"], str)
    assert body["detail"]
    assert set(body) <= {"code", "detail", "problems"}
    return body


def api_records(caplog) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.name.startswith("bot.api")]


# The body limit


@pytest.mark.parametrize("path", [MEMORIES, f"{MEMORIES}/batch-delete", f"{MEMORIES}/import", "/panel/sign-in",
                                  "/api/v1/health", "/no/such/route"])
def test_a_declared_body_over_the_limit_is_refused_before_authentication(limited_app, untouched, caplog, path):
    caplog.set_level(logging.INFO)
    client = TestClient(limited_app, base_url=BASE, cookies={COOKIE: "a-session-that-would-be-looked-up"})
    response = client.post(path, content=b"{" + b" " * LIMIT + b"}", headers={"content-type": "application/json"})
    body = assert_documented_error(response, 413, "too_large")
    assert str(LIMIT) in body["detail"]
    assert response.headers["connection"] == "close"
    assert response.headers["x-content-type-options"] == "nosniff"  # the security headers are still there
    assert untouched.used == []  # no session looked up, no route run
    [line] = api_records(caplog)
    assert line.levelno == logging.INFO
    assert line.exc_info is None
    assert "413 too_large" in line.getMessage()


def test_a_body_at_the_limit_passes_it(limited_app, untouched):
    client = TestClient(limited_app, base_url=BASE)
    response = client.post(f"{MEMORIES}/batch-delete", content=b" " * (LIMIT - 12) + b'{"ids": [3]}',
                           headers={"content-type": "application/json", "authorization": "Bearer wrong"})
    assert_documented_error(response, 401, "bad_admin_token")  # read whole, then refused for who sent it


def post_in_chunks(app, path: str, chunks: list[bytes], content_type: str) -> tuple[int, dict, int]:
    """POST ``chunks`` as a chunked body (no Content-Length) straight through ASGI: the status, the
    JSON answer and how many chunks the app pulled."""
    pulled = 0
    messages: list[dict] = []

    async def receive() -> dict:
        nonlocal pulled
        if pulled == len(chunks):
            return {"type": "http.disconnect"}
        pulled += 1
        return {"type": "http.request", "body": chunks[pulled - 1], "more_body": pulled < len(chunks)}

    async def send(message: dict) -> None:
        messages.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"host", b"testserver"), (b"content-type", content_type.encode()),
                         (b"transfer-encoding", b"chunked"), (b"cookie", f"{COOKIE}=a-session".encode())],
             "client": ("127.0.0.1", 40000), "server": ("testserver", 80)}
    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in messages if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.response.body")
    return status, json.loads(body), pulled


FILE_PART = b'--cut\r\nContent-Disposition: form-data; name="file"; filename="m.json"\r\n\r\n'


@pytest.mark.parametrize(("path", "content_type", "opening"), [
    (MEMORIES, "application/json", b'{"content": "'),
    (f"{MEMORIES}/import", "multipart/form-data; boundary=cut", FILE_PART),
])
def test_a_chunked_body_is_refused_on_the_chunk_that_crosses_the_limit_and_read_no_further_than_the_drain(
        limited_app, untouched, path, content_type, opening):
    size = LIMIT // 3 + 1  # the third chunk crosses the limit
    chunks = [opening + b"x" * (size - len(opening))] + [b"x" * size] * 39
    status, answer, pulled = post_in_chunks(limited_app, path, chunks, content_type)
    assert (status, answer["code"]) == (413, "too_large")
    drain = DRAIN_FACTOR * LIMIT  # the rest is read and thrown away only this far, then the answer is sent
    assert (pulled - 1) * size <= drain < pulled * size
    assert untouched.used == []
    whole = [opening + b"x" * (size - len(opening))] + [b"x" * size] * 5  # within the drain: read to its end
    status, _answer, pulled = post_in_chunks(limited_app, path, whole, content_type)
    assert (status, pulled) == (413, len(whole))


@contextmanager
def served(app, **options) -> Iterator[int]:
    """``app`` on a real uvicorn bound to a free port of loopback (with uvicorn ``options``); yields the port."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_config=None, lifespan="off",
                                           **options))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started, 15, "uvicorn to listen")
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(15)


def read_until_closed(sock: socket.socket) -> bytes:
    """What the server sent before it closed the connection (a timeout if it does not close)."""
    sock.settimeout(10)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:  # closed with our bytes unread: the kernel resets, the answer may be lost
        pass
    return received


def test_uvicorn_answers_a_huge_declared_body_at_once_and_closes(limited_app, untouched):
    with served(limited_app) as port, socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"POST /api/v1/memory/long-term HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 209715200\r\n\r\n{")  # 200 MiB promised, one byte sent
        answer = read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 413 ")
    assert b'"code":"too_large"' in answer
    assert untouched.used == []


def test_uvicorn_stops_reading_a_chunked_body_once_it_is_over_the_limit(limited_app, untouched):
    chunk = b"%x\r\n%s\r\n" % (16384, b"7" * 16384)
    planned = 64 * 1024 * 1024  # far more than loopback buffers can hold unread
    sent = 0
    with served(limited_app) as port, socket.create_connection(("127.0.0.1", port)) as sock:
        sock.settimeout(10)
        sock.sendall(b"POST /api/v1/memory/long-term/batch-delete HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        try:
            while sent < planned:
                sock.sendall(chunk)
                sent += 16384
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server closed the connection: it read no further
        answer = read_until_closed(sock)
    assert sent < planned  # the server closed the connection long before the body ended
    assert answer == b"" or answer.startswith(b"HTTP/1.1 413 ")
    assert untouched.used == []


@pytest.mark.parametrize("share", [1.3, 2.5, DRAIN_FACTOR], ids=["1.3x", "2.5x", "at-the-drain"])
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_client_that_sends_the_whole_body_first_reads_the_413(untouched, share, chunked):
    """The default limit, and bodies of megabytes: more than loopback's socket buffers hold unread, so a server
    that closed without reading the rest would reset the connection under the client's feet."""
    limit = DEFAULT_API_MAX_BODY_BYTES
    size = int(limit * share)
    body = b'{"content": "' + b"q" * (size - 15) + b'"}'
    app = create_app(untouched, admin_token=ADMIN, public_url=BASE, max_body_bytes=limit)
    with served(app) as port:
        if chunked:  # http.client sends every chunk before it reads the answer
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
            connection.request("POST", MEMORIES, body=iter([body[i:i + 65536] for i in range(0, len(body), 65536)]),
                               headers={"Content-Type": "application/json"}, encode_chunked=True)
            response = connection.getresponse()
            status, answer = response.status, json.loads(response.read())
            connection.close()
        else:  # urllib: the whole body, then the answer
            request = urllib.request.Request(f"http://127.0.0.1:{port}{MEMORIES}", data=body, method="POST",
                                             headers={"Content-Type": "application/json"})
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=20)
            status, answer = refused.value.code, json.loads(refused.value.read())
    assert (status, answer["code"]) == (413, "too_large")
    assert str(limit) in answer["detail"]
    assert untouched.used == []


def test_a_client_that_waits_for_100_continue_is_answered_without_sending_the_body(limited_app, untouched):
    with served(limited_app) as port, socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"POST /api/v1/memory/long-term HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % (2 * LIMIT))
        answer = read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 413 ")
    assert b"100 Continue" not in answer


def test_the_default_limit_leaves_room_for_the_largest_import(api):
    client = api.signed_in(ANN)
    too_big_file = b" " * (MAX_IMPORT_BYTES + 1)
    refused = client.post(f"{MEMORIES}/import", files={"file": ("mnemo.json", too_big_file, "application/json")})
    assert_documented_error(refused, 422, "import_too_large")  # the import's own check, not the body limit
    over = client.post(MEMORIES, content=b" " * (DEFAULT_API_MAX_BODY_BYTES + 1),
                       headers={"content-type": "application/json"})
    assert_documented_error(over, 413, "too_large")


def test_the_body_limit_is_a_setting_with_a_floor(monkeypatch):
    monkeypatch.setenv("API_MAX_BODY_BYTES", "2500000")
    assert load_settings().api_max_body_bytes == 2_500_000
    monkeypatch.setenv("API_MAX_BODY_BYTES", "512")
    with pytest.raises(ConfigError, match="API_MAX_BODY_BYTES"):
        load_settings()


# Strict JSON


def nested(depth: int) -> str:
    """A JSON array nested ``depth`` levels deep."""
    return "[" * depth + "]" * depth


def memory_with(field: str, raw: str) -> str:
    """A memory's JSON body whose ``field`` is the JSON text ``raw``."""
    return f'{{"content": "x", "{field}": {raw}}}'


NOT_READ_AS_JSON = {
    "deeper than the limit": memory_with("value", nested(MAX_JSON_DEPTH)),
    "deep enough to exhaust recursion": memory_with("value", nested(730)),
    "deep enough to overflow the parser": memory_with("value", '{"a": ' + nested(1500) + "}"),
    "objects nested deep": memory_with("value", '{"k": ' * 40 + "1" + "}" * 40),
    "latin-1, not UTF-8": '{"content": "café"}'.encode("latin-1"),
    "a truncated UTF-8 sequence": b'{"content": "\xe4\xbd"}',
    "UTF-16": '{"content": "tea"}'.encode("utf-16"),
    "a huge integer": memory_with("value", "7" * 4400),
    "an integer too long for the limit": memory_with("value", "-" + "1" * (MAX_JSON_DIGITS + 1)),
    "an exponent to infinity": memory_with("confidence", "2e308"),
    "NaN": memory_with("value", "[NaN]"),
    "-Infinity": memory_with("confidence", "-Infinity"),
    "not JSON at all": "{content: x}",
}


@pytest.mark.parametrize("body", NOT_READ_AS_JSON.values(), ids=NOT_READ_AS_JSON.keys())
@pytest.mark.parametrize("route", ["create", "update", "batch-delete"])
def test_a_body_that_is_not_json_the_api_reads_is_422_in_the_documented_shape_and_logged_once(
        api, caplog, body, route):
    client = api.signed_in(ANN)
    made = add(client, "keeps its place")
    caplog.set_level(logging.INFO)
    caplog.clear()
    method, path = {"create": ("POST", MEMORIES), "update": ("PUT", f"{MEMORIES}/{made['id']}"),
                    "batch-delete": ("POST", f"{MEMORIES}/batch-delete")}[route]
    payload = body if isinstance(body, bytes) else body.encode()
    response = client.request(method, path, content=payload, headers={"content-type": "application/json"})
    answer = assert_documented_error(response, 422, "invalid")
    assert answer["detail"].startswith("body: ")
    assert payload[8:40].decode(errors="replace") not in answer["detail"]
    [line] = api_records(caplog)
    assert line.levelno == logging.INFO
    assert line.exc_info is None
    assert "422 invalid" in line.getMessage()
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert [m["content"] for m in client.get(MEMORIES).json()["items"]] == ["keeps its place"]


def test_a_json_body_over_its_own_limit_is_refused_413_before_authentication(untouched):
    app = create_app(untouched, admin_token=ADMIN, public_url=BASE)  # the default body limit, far above it
    client = TestClient(app, base_url=BASE, cookies={COOKIE: "a-session-that-would-be-looked-up"})
    ids = ", ".join(["12345"] * (MAX_JSON_BODY_BYTES // 7 + 1))
    response = client.post(f"{MEMORIES}/batch-delete", content=f'{{"ids": [{ids}]}}',
                           headers={"content-type": "application/json"})
    assert str(MAX_JSON_BODY_BYTES) in assert_documented_error(response, 413, "too_large")["detail"]
    assert untouched.used == []


def test_reading_a_hostile_string_takes_time_in_proportion_to_its_length():
    quotes = b'"' + b'\\"' * (MAX_JSON_BODY_BYTES // 2 - 1)  # an unclosed string of escaped quotes
    started = time.monotonic()
    with pytest.raises(json.JSONDecodeError):
        parse_json_body(quotes)
    assert time.monotonic() - started < 2  # a scan that retried from every quote would take hours


def test_nesting_up_to_the_limit_and_brackets_inside_strings_are_accepted(api):
    client = api.signed_in(ANN)
    deepest = json.loads(nested(MAX_JSON_DEPTH - 1))  # inside the body object: exactly the limit
    made = client.post(MEMORIES, content=json.dumps({"content": "[[[{{{ " * 30, "value": deepest}),
                       headers={"content-type": "application/json"})
    assert made.status_code == 201, made.text
    assert made.json()["value"] == deepest
    assert made.json()["content"].startswith("[[[{{{")
    long_number = client.post(MEMORIES, json={"content": "big", "value": int("9" * MAX_JSON_DIGITS)})
    assert long_number.status_code == 201
    assert long_number.json()["value"] == int("9" * MAX_JSON_DIGITS)


@pytest.mark.parametrize(("text", "why"), [
    (b'{"a": "\\" [[[[ \\\\"}', None),
    (b'[' * 33 + b']' * 33, "nested deeper than 32 levels"),
    (b'"\xc3\x28"', "not UTF-8 (byte 1)"),
    (b'[1e400]', "a number out of range (1e400)"),
    (b'[Infinity]', "Infinity is not a JSON number"),
])
def test_parse_json_body_says_why_it_refuses(text, why):
    if why is None:
        assert parse_json_body(text) == {"a": '" [[[[ \\'}
    else:
        with pytest.raises(JsonRefused, match=why.replace("(", r"\(").replace(")", r"\)")):
            parse_json_body(text)


def test_refusals_by_the_framework_answer_the_documented_shape(api):
    client = api.client()
    assert_documented_error(client.get("/api/v1/no-such-thing"), 404, "not_found")
    not_allowed = client.put("/api/v1/health")
    assert_documented_error(not_allowed, 405, "method_not_allowed")
    assert not_allowed.headers["allow"] == "GET"
    broken_form = client.post("/panel/sign-in", content=b"--cut\r\nno headers here",
                              headers={"content-type": "multipart/form-data; boundary=cut"})
    assert_documented_error(broken_form, 400, "bad_request")


# Strict types


@pytest.mark.parametrize("ids", [[True], [False, True], [1.0], ["1"], [[1]], [{"id": 1}], [None], [2**63]])
def test_batch_delete_takes_only_integer_ids(api, ids):
    client = api.signed_in(ANN)
    made = add(client, "stays put")
    response = client.post(f"{MEMORIES}/batch-delete", json={"ids": [*ids, made["id"]]})
    assert assert_documented_error(response, 422, "invalid")["problems"][0]["where"].startswith("body.ids.")
    assert client.get(f"{MEMORIES}/{made['id']}").status_code == 200


@pytest.mark.parametrize("fields", [
    {"confidence": "0.25"}, {"confidence": False}, {"confidence": True}, {"confidence": [0.4]},
    {"confidence": None}, {"type": True}, {"key": 12}, {"key": ["likes"]}, {"content": 3.5},
    {"content": ["tea"]}, {"type": ["fact"]},
])
def test_fields_of_the_wrong_json_type_are_refused_on_create_and_update(api, fields):
    client = api.signed_in(ANN)
    made = add(client, "likes green tea", confidence=0.6)
    created = client.post(MEMORIES, json={"content": "likes black tea", **fields})
    assert_documented_error(created, 422, "invalid")
    changed = client.put(f"{MEMORIES}/{made['id']}", json=fields)
    if fields != {"confidence": None}:  # on update, null means "leave it"
        assert_documented_error(changed, 422, "invalid")
    stored = client.get(MEMORIES).json()["items"]
    assert [(m["content"], m["confidence"]) for m in stored] == [("likes green tea", 0.6)]


def test_a_whole_number_is_still_a_confidence(api):
    client = api.signed_in(ANN)
    made = add(client, "likes jasmine tea", confidence=0)
    assert made["confidence"] == 0.0
    assert client.put(f"{MEMORIES}/{made['id']}", json={"confidence": 1}).json()["confidence"] == 1.0


def test_every_json_request_body_is_strict(api):
    document = api.client().get("/api/openapi.json").json()
    refs = [operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
            for path in document["paths"].values() for operation in path.values()
            if "application/json" in operation.get("requestBody", {}).get("content", {})]
    models = [getattr(schemas, ref.rsplit("/", 1)[-1]) for ref in refs]
    assert {model.__name__ for model in models} == {"MemoryCreate", "MemoryUpdate", "BatchDelete", "ZoneIn",
                                                        "FollowupsIn"}
    assert all(model.model_config.get("strict") and model.model_config.get("extra") == "forbid" for model in models)


# Server errors


def failing_app() -> object:
    def database_gone():
        raise RuntimeError("the database went away")

    panel = PanelService(database_gone, session_lifetime=timedelta(hours=1))
    return create_app(panel, admin_token=ADMIN, public_url=BASE)


def test_a_server_error_is_answered_in_the_documented_shape_and_logged_once_with_its_traceback(caplog):
    caplog.set_level(logging.INFO)
    response = TestClient(failing_app(), base_url=BASE).get("/api/v1/health")
    assert_documented_error(response, 500, "unexpected")
    assert "database went away" not in response.text
    [logged] = [record for record in caplog.records if record.exc_info]
    assert logged.name == "bot.api.errors"
    assert logged.exc_info[0] is RuntimeError


def test_uvicorn_keeps_the_connection_after_a_server_error_and_logs_it_once(caplog):
    caplog.set_level(logging.INFO)
    with served(failing_app()) as port:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("GET", "/api/v1/health")
        failed = connection.getresponse()
        answer, first_socket = json.loads(failed.read()), connection.sock
        assert failed.status == 500
        assert answer["code"] == "unexpected"
        assert failed.getheader("connection") is None  # not "close"
        connection.request("GET", "/api/openapi.json")
        after = connection.getresponse()
        assert after.status == 200
        assert json.loads(after.read())["info"]["title"] == "Mnemo memory API"
        assert connection.sock is first_socket  # the same connection, not a new one
        connection.close()
    tracebacks = [record for record in caplog.records if record.exc_info]
    assert [(record.name, record.exc_info[0]) for record in tracebacks] == [("bot.api.errors", RuntimeError)]
    assert not [record for record in caplog.records if record.name.startswith("uvicorn.error")
                and record.levelno >= logging.ERROR]
