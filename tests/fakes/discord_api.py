"""A fake Discord REST API (v10) for tests.

It speaks the real HTTP API under ``base_url`` = ``http://127.0.0.1:PORT/api/v10``:
``GET /users/@me`` and ``GET /oauth2/applications/@me`` (what discord.py's ``login`` asks for),
``POST /users/@me/channels`` (the DM channel with a user, the same one every
time) and ``POST /channels/{id}/messages`` (a repeated ``nonce`` with ``enforce_nonce`` returns the
earlier message instead of posting again). Bot routes need ``Authorization: Bot <token>``. Errors
have Discord's shape (``{"message", "code"}``; a 429 has ``retry_after``, ``global`` and a
``Retry-After`` header). Standard library only, 127.0.0.1 on an ephemeral port::

    with FakeDiscord() as discord:
        DiscordSender(discord.base_url, discord.token).send(target, "hi", idempotency_key="k")
        assert discord.messages[0]["content"] == "hi"

Routes are a table: ``discord.add_route("POST", r"/webhooks/(?P<app_id>\\d+)/(?P<token>[^/]+)", handler,
auth=False)`` adds one (interaction follow-ups do not use the bot token). A handler gets a
:class:`DiscordRequest` and returns the JSON body (status 200), or raises :class:`DiscordApiError`.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import re
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

_log = logging.getLogger(__name__)
API_PREFIX = "/api/v10"
CONTENT_LIMIT = 2000
NONCE_LIMIT = 25


class DiscordApiError(Exception):
    """Raised by a route handler: becomes ``{"message": …, "code": …}`` with ``status``."""

    def __init__(self, status: int, message: str, code: int = 0, extra: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code
        self.extra, self.headers = extra or {}, headers or {}


@dataclass(frozen=True)
class DiscordRequest:
    """One request as a handler sees it: the route's named groups in ``params``."""

    method: str
    path: str
    params: dict[str, str]
    headers: dict[str, str]
    json: Any


@dataclass(frozen=True)
class _Route:
    method: str
    pattern: re.Pattern[str]
    handler: Callable[[DiscordRequest], Any]
    auth: bool


@dataclass(frozen=True)
class _Failure:
    status: int
    retry_after: float | None
    message: str | None
    path_contains: str | None


@dataclass(frozen=True)
class _Stall:
    seconds: float
    process: bool


@dataclass
class _Answer:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


class _Server(ThreadingHTTPServer):
    daemon_threads = False
    request_queue_size = 128

    def __init__(self, fake: FakeDiscord) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"
    timeout = 10.0

    def do_POST(self) -> None:
        """Serve one request (every verb the same way); a dropped request gets no answer at all."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        answer = self.server.fake._dispatch(self.command, self.path, headers, raw)
        if answer is None:
            return
        payload = b"" if answer.status == 204 else json.dumps(answer.body).encode()
        self.send_response(answer.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in answer.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_PUT = do_PATCH = do_DELETE = do_POST

    def log_message(self, format: str, *args: Any) -> None:
        _log.debug("fake discord: " + format, *args)


class FakeDiscord:
    """A scriptable Discord REST API on 127.0.0.1; use as a context manager."""

    def __init__(self, token: str = "discord-token", *, bot_id: str = "1000000000000000001") -> None:
        self.token = token
        self.bot_user = {"id": bot_id, "username": "Mnemo", "discriminator": "0", "global_name": None,
                         "avatar": None, "bot": True}
        self._ids = itertools.count(1200000000000000000)
        self._lock = threading.Lock()
        self._routes: list[_Route] = []
        self._requests: list[DiscordRequest] = []
        self._messages: list[dict[str, Any]] = []
        self._dm_channels: dict[str, dict[str, Any]] = {}
        self._by_nonce: dict[tuple[str, str], dict[str, Any]] = {}
        self._failures: deque[_Failure] = deque()
        self._stalls: deque[_Stall] = deque()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.application = {"id": bot_id, "name": "Mnemo", "description": "", "icon": None, "bot_public": True,
                            "bot_require_code_grant": False, "verify_key": "0" * 64, "flags": 0,
                            "owner": {"id": "1000000000000000002", "username": "owner", "discriminator": "0",
                                      "global_name": None, "avatar": None}}
        self.add_route("GET", r"/users/@me", lambda _request: dict(self.bot_user))
        self.add_route("GET", r"/oauth2/applications/@me", lambda _request: dict(self.application))
        self.add_route("POST", r"/users/@me/channels", self._open_dm)
        self.add_route("POST", r"/channels/(?P<channel_id>[^/]+)/messages", self._create_message)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/api/v10``, as ``DISCORD_API_BASE_URL``."""
        if self._server is None:
            raise RuntimeError("FakeDiscord is not running; call start() first")
        return f"http://127.0.0.1:{self._server.server_address[1]}{API_PREFIX}"

    def start(self) -> FakeDiscord:
        if self._server is not None:
            raise RuntimeError("FakeDiscord is already running")
        self._stopping.clear()
        self._server = _Server(self)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"FakeDiscord:{self._server.server_address[1]}", daemon=True)
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

    def __enter__(self) -> FakeDiscord:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def add_route(self, method: str, pattern: str, handler: Callable[[DiscordRequest], Any], *,
                  auth: bool = True) -> None:
        """Serve ``method`` on paths (after ``/api/v10``) matching ``pattern`` in full."""
        with self._lock:
            self._routes.append(_Route(method.upper(), re.compile(pattern), handler, auth))

    def fail_next(self, status: int, retry_after: float | None = None, *, message: str | None = None,
                  path_contains: str | None = None) -> None:
        """Answer the next request (whose path contains ``path_contains``, if given) with this error."""
        with self._lock:
            self._failures.append(_Failure(status, retry_after, message, path_contains))

    def stall_next(self, seconds: float, *, process: bool = False) -> None:
        """Hold the next request ``seconds`` before recording it; then drop it (or process it late)."""
        with self._lock:
            self._stalls.append(_Stall(seconds, process))

    def new_id(self) -> str:
        """A fresh snowflake-like id."""
        with self._lock:
            return str(next(self._ids))

    @property
    def requests(self) -> list[DiscordRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """Every message created, in order (a deduplicated resend adds nothing)."""
        with self._lock:
            return [dict(message) for message in self._messages]

    def messages_in(self, channel_id: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m["channel_id"] == channel_id]

    def dm_channel_of(self, user_id: str) -> str | None:
        with self._lock:
            channel = self._dm_channels.get(user_id)
        return channel["id"] if channel else None

    def _dispatch(self, method: str, raw_path: str, headers: dict[str, str], raw: bytes) -> _Answer | None:
        with self._lock:
            stall = self._stalls.popleft() if self._stalls else None
        if stall is not None:
            self._stopping.wait(stall.seconds)
            if not stall.process:
                return None
        path = urlsplit(raw_path).path
        if not path.startswith(API_PREFIX + "/"):
            return _error(404, "404: Not Found")
        path = path[len(API_PREFIX):]
        route, match = self._match(method, path)
        request = DiscordRequest(method, path, match.groupdict() if match else {}, headers, _json(raw))
        with self._lock:
            self._requests.append(request)
            if route is not None and route.auth and headers.get("authorization") != f"Bot {self.token}":
                return _error(401, "401: Unauthorized")
            failure = next((f for f in self._failures if f.path_contains is None or f.path_contains in path), None)
            if failure is not None:
                self._failures.remove(failure)
        if failure is not None:
            return _failure(failure)
        if route is None:
            return _error(404, "404: Not Found")
        try:
            body = route.handler(request)
        except DiscordApiError as exc:
            return _Answer(exc.status, {"message": exc.message, "code": exc.code, **exc.extra}, exc.headers)
        return _Answer(204, None) if body is None else _Answer(200, body)

    def _match(self, method: str, path: str) -> tuple[_Route | None, re.Match[str] | None]:
        with self._lock:
            routes = list(self._routes)
        for route in routes:
            match = route.pattern.fullmatch(path)
            if match is not None and route.method == method:
                return route, match
        return None, None

    def _open_dm(self, request: DiscordRequest) -> dict[str, Any]:
        recipient = str((request.json or {}).get("recipient_id") or "")
        if not recipient.isdigit():
            raise DiscordApiError(400, "Invalid Form Body", 50035,
                                  {"errors": {"recipient_id": {"_errors": [{"code": "NUMBER_TYPE_COERCE"}]}}})
        with self._lock:
            channel = self._dm_channels.get(recipient)
            if channel is None:
                user = {"id": recipient, "username": f"user{recipient[-4:]}", "discriminator": "0",
                        "global_name": None, "avatar": None}
                channel = {"id": str(next(self._ids)), "type": 1, "last_message_id": None, "flags": 0,
                           "recipients": [user]}
                self._dm_channels[recipient] = channel
            return json.loads(json.dumps(channel))

    def _create_message(self, request: DiscordRequest) -> dict[str, Any]:
        channel_id, body = request.params["channel_id"], request.json if isinstance(request.json, dict) else {}
        if not channel_id.isdigit():
            raise DiscordApiError(404, "Unknown Channel", 10003)
        content, nonce = str(body.get("content") or ""), body.get("nonce")
        if not content.strip():
            raise DiscordApiError(400, "Cannot send an empty message", 50006)
        if len(content) > CONTENT_LIMIT or (nonce is not None and len(str(nonce)) > NONCE_LIMIT):
            raise DiscordApiError(400, "Invalid Form Body", 50035)
        with self._lock:
            key = (channel_id, str(nonce))
            if nonce is not None and body.get("enforce_nonce") and key in self._by_nonce:
                return dict(self._by_nonce[key])
            mentioned = (body.get("allowed_mentions") or {}).get("users") or []
            message = {"id": str(next(self._ids)), "channel_id": channel_id, "type": 0, "content": content,
                       "author": dict(self.bot_user), "timestamp": datetime.now(UTC).isoformat(),
                       "nonce": nonce, "allowed_mentions": body.get("allowed_mentions"),
                       "mentions": [{"id": user_id} for user_id in mentioned if f"<@{user_id}>" in content]}
            self._messages.append(message)
            if nonce is not None:
                self._by_nonce[key] = message
            return dict(message)


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


def _error(status: int, message: str, code: int = 0) -> _Answer:
    return _Answer(status, {"message": message, "code": code})


def _failure(failure: _Failure) -> _Answer:
    if failure.status == 429:
        wait = 0.2 if failure.retry_after is None else failure.retry_after
        body = {"message": failure.message or "You are being rate limited.", "retry_after": wait, "global": False}
        headers = {"Retry-After": str(math.ceil(wait)), "X-RateLimit-Scope": "user"}
        return _Answer(429, body, headers)
    default = {401: "401: Unauthorized", 403: "Missing Access", 404: "Unknown Channel"}.get(
        failure.status, f"{failure.status}: Internal Server Error" if failure.status >= 500 else "Bad Request")
    code = {403: 50001, 404: 10003}.get(failure.status, 0)
    headers = {} if failure.retry_after is None else {"Retry-After": f"{failure.retry_after:g}"}
    return _Answer(failure.status, {"message": failure.message or default, "code": code}, headers)
