"""A fake Telegram Bot API server for tests.

It speaks the real HTTP API: ``POST {base_url}{token}/{method}`` with a JSON, form or query body,
answered with ``{"ok": true, "result": …}`` or ``{"ok": false, "error_code": …, "description": …}``.
Plain httpx and python-telegram-bot (``base_url=fake.base_url``) both work against it. Standard
library only; it binds 127.0.0.1 on an ephemeral port and serves from a thread::

    with FakeTelegram() as telegram:
        TelegramSender(telegram.base_url, telegram.token).send(target, "hi", idempotency_key="k")
        assert telegram.sent[0]["text"] == "hi"

Methods are a table: ``telegram.methods["getUpdates"] = handler`` adds one. A handler takes the
request's parameters and returns the ``result``, or raises :class:`TelegramApiError`. Scripted
trouble applies to the next request: ``fail_next`` answers with an error, and ``stall_next`` holds
the request before it is recorded and then drops the connection (a request that never got
processed), or processes it late with ``process=True``. Connections are HTTP/1.0 (one request
each), so nothing lingers once ``stop()`` returns.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

Handler = Callable[[dict[str, Any]], Any]

_log = logging.getLogger(__name__)
_PATH = re.compile(r"^/bot(?P<token>[^/]+)/(?P<method>[A-Za-z]\w*)$")
TEXT_LIMIT = 4096


class TelegramApiError(Exception):
    """Raised by a method handler: becomes ``{"ok": false, "error_code": status, …}``."""

    def __init__(self, status: int, description: str, parameters: dict[str, Any] | None = None) -> None:
        super().__init__(description)
        self.status, self.description, self.parameters = status, description, parameters


@dataclass(frozen=True)
class RecordedCall:
    """One request that reached a method (or was refused for its token)."""

    method: str
    params: dict[str, Any]
    headers: dict[str, str]


@dataclass(frozen=True)
class _Failure:
    status: int
    description: str
    retry_after: int | None
    method: str | None


@dataclass(frozen=True)
class _Stall:
    seconds: float
    process: bool


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # so server_close() joins the request threads
    request_queue_size = 128

    def __init__(self, fake: FakeTelegram) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"
    timeout = 10.0

    def do_POST(self) -> None:
        """Serve one request (GET the same way); a dropped request gets no answer at all."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        answer = self.server.fake._dispatch(self.path, headers, raw)
        if answer is None:
            return
        status, body = answer
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST

    def log_message(self, format: str, *args: Any) -> None:
        _log.debug("fake telegram: " + format, *args)


class FakeTelegram:
    """A scriptable Bot API on 127.0.0.1; use as a context manager."""

    def __init__(self, token: str = "123:ABC", *, bot_username: str = "mnemo_test_bot") -> None:
        self.token = token
        self.bot_user = {"id": int(token.split(":")[0]) if token.split(":")[0].isdigit() else 1, "is_bot": True,
                         "first_name": "Mnemo", "username": bot_username, "can_join_groups": True,
                         "can_read_all_group_messages": False, "supports_inline_queries": False}
        self.methods: dict[str, Handler] = {"getMe": self._get_me, "sendMessage": self._send_message}
        self._lock = threading.Lock()
        self._calls: list[RecordedCall] = []
        self._sent: list[dict[str, Any]] = []
        self._message_ids: defaultdict[int | str, int] = defaultdict(int)
        self._failures: deque[_Failure] = deque()
        self._stalls: deque[_Stall] = deque()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/bot``: the token and ``/method`` are appended to it."""
        if self._server is None:
            raise RuntimeError("FakeTelegram is not running; call start() first")
        return f"http://127.0.0.1:{self._server.server_address[1]}/bot"

    def start(self) -> FakeTelegram:
        if self._server is not None:
            raise RuntimeError("FakeTelegram is already running")
        self._stopping.clear()
        self._server = _Server(self)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"FakeTelegram:{self._server.server_address[1]}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Shut down, cut stalls short, close the socket and join the threads (idempotent)."""
        server, thread, self._server, self._thread = self._server, self._thread, None, None
        if server is None or thread is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        thread.join()

    def __enter__(self) -> FakeTelegram:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def fail_next(self, status: int, retry_after: int | None = None, description: str | None = None, *,
                  method: str | None = None) -> None:
        """Answer the next request (of ``method``, if given) with this error."""
        if description is None:
            too_many = "Too Many Requests" + (f": retry after {retry_after}" if retry_after is not None else "")
            description = {429: too_many, 401: "Unauthorized",
                           403: "Forbidden: bot was blocked by the user", 400: "Bad Request: chat not found",
                           }.get(status, "Internal Server Error" if status >= 500 else f"Error {status}")
        with self._lock:
            self._failures.append(_Failure(status, description, retry_after, method))

    def stall_next(self, seconds: float, *, process: bool = False) -> None:
        """Hold the next request ``seconds`` before recording it; then drop it (or process it late)."""
        with self._lock:
            self._stalls.append(_Stall(seconds, process))

    @property
    def calls(self) -> list[RecordedCall]:
        """Every request that reached a method, in arrival order."""
        with self._lock:
            return list(self._calls)

    @property
    def sent(self) -> list[dict[str, Any]]:
        """Messages accepted by ``sendMessage``: ``{chat_id, text, message_id}``."""
        with self._lock:
            return [dict(message) for message in self._sent]

    def _dispatch(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, Any]] | None:
        with self._lock:
            stall = self._stalls.popleft() if self._stalls else None
        if stall is not None:
            self._stopping.wait(stall.seconds)
            if not stall.process:
                return None
        url = urlsplit(path)
        match = _PATH.match(url.path)
        if match is None:
            return _error(404, "Not Found")
        name = next((m for m in self.methods if m.lower() == match["method"].lower()), None)
        params = _params(url.query, headers.get("content-type", ""), raw)
        with self._lock:
            self._calls.append(RecordedCall(match["method"], params, headers))
            if match["token"] != self.token:
                return _error(401, "Unauthorized")
            failure = next((f for f in self._failures if f.method in (None, name)), None)
            if failure is not None:
                self._failures.remove(failure)
        if failure is not None:
            retry = {"retry_after": failure.retry_after} if failure.retry_after is not None else None
            return _error(failure.status, failure.description, retry)
        if name is None:
            return _error(404, "Not Found")
        try:
            return 200, {"ok": True, "result": self.methods[name](params)}
        except TelegramApiError as exc:
            return _error(exc.status, exc.description, exc.parameters)

    def _get_me(self, _params: dict[str, Any]) -> dict[str, Any]:
        return dict(self.bot_user)

    def _send_message(self, params: dict[str, Any]) -> dict[str, Any]:
        chat_id, text = chat_id_param(params), str(params.get("text") or "")
        if not text.strip():
            raise TelegramApiError(400, "Bad Request: message text is empty")
        if len(text) > TEXT_LIMIT:
            raise TelegramApiError(400, "Bad Request: message is too long")
        with self._lock:
            self._message_ids[chat_id] += 1
            message_id = self._message_ids[chat_id]
            self._sent.append({"chat_id": chat_id, "text": text, "message_id": message_id})
        return {"message_id": message_id, "date": int(time.time()), "chat": chat_object(chat_id),
                "from": dict(self.bot_user), "text": text}


def chat_id_param(params: dict[str, Any]) -> int | str:
    """The ``chat_id`` parameter as Telegram reads it: an integer, or an ``@username``."""
    value = params.get("chat_id")
    if isinstance(value, int) or (isinstance(value, str) and re.fullmatch(r"-?\d+", value)):
        return int(value)
    if isinstance(value, str) and value.startswith("@"):
        return value
    raise TelegramApiError(400, "Bad Request: chat not found" if value else "Bad Request: chat_id is empty")


def chat_object(chat_id: int | str) -> dict[str, Any]:
    """A Chat as the Bot API returns it: private for positive ids, (super)group for negative ones."""
    if isinstance(chat_id, str):
        return {"id": -1000000000001, "type": "channel", "username": chat_id[1:], "title": chat_id[1:]}
    if chat_id > 0:
        return {"id": chat_id, "type": "private", "first_name": "User"}
    kind = "supergroup" if str(chat_id).startswith("-100") else "group"
    return {"id": chat_id, "type": kind, "title": "Group"}


def _params(query: str, content_type: str, raw: bytes) -> dict[str, Any]:
    """Query-string, form and JSON parameters merged (JSON wins); unreadable bodies add nothing."""
    params: dict[str, Any] = dict(parse_qsl(query))
    if raw and content_type.startswith("application/x-www-form-urlencoded"):
        params.update(parse_qsl(raw.decode("utf-8", "replace")))
    elif raw and content_type.startswith("application/json"):
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if isinstance(body, dict):
            params.update(body)
    return params


def _error(status: int, description: str, parameters: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
    if parameters:
        body["parameters"] = parameters
    return status, body
