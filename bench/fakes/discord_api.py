"""A fake Discord REST API (v10) for tests.

It speaks the real HTTP API under ``base_url`` = ``http://127.0.0.1:PORT/api/v10``:
``GET /users/@me`` and ``GET /oauth2/applications/@me`` (what discord.py's ``login`` asks for),
``POST /users/@me/channels`` (the DM channel with a user, the same one every
time), ``POST /channels/{id}/messages`` (a repeated ``nonce`` with ``enforce_nonce`` returns the
earlier message instead of posting again), and ``PATCH`` / ``DELETE /channels/{id}/messages/{id}`` of the
bot's own messages (each edit recorded in ``edits`` with its time; a deleted message leaves ``messages``).
Bot routes need ``Authorization: Bot <token>``. Errors have Discord's shape (``{"message", "code"}``; a 429
has ``retry_after``, ``global`` and a ``Retry-After`` header). Standard library only, 127.0.0.1 on an ephemeral port::

    with FakeDiscord() as discord:
        DiscordSender(discord.base_url, discord.token).send(target, "hi", idempotency_key="k")
        assert discord.messages[0]["content"] == "hi"

Routes are a table: ``discord.add_route("POST", r"/webhooks/(?P<app_id>\\d+)/(?P<token>[^/]+)", handler,
auth=False)`` adds one (interaction follow-ups do not use the bot token). A handler gets a
:class:`DiscordRequest` and returns the JSON body (status 200), or raises :class:`DiscordApiError`.

Interactions, as a bot process meets them: the fake plays Discord's side, so it *creates* the
gateway payloads (``slash_command``, ``button_press``, ``incoming_message``) and remembers each
interaction's token, as Discord does. The bot's answers are recorded: ``interaction_responses``
(``POST /interactions/{id}/{token}/callback``: type 4 message, 5 deferred, 6 deferred update,
7 update; flags 64 = ephemeral), ``followups`` (``POST /webhooks/{app}/{token}`` and
``PATCH …/messages/@original``, multipart attachments with their bytes), ``command_syncs``
(``PUT /applications/{app}/commands`` and ``…/guilds/{guild}/commands``, validated as Discord
does) and ``typing`` (``POST /channels/{id}/typing``). A deferred ("thinking") response is replaced
by the first follow-up, as on Discord. Unknown or already-answered interactions get Discord's errors
(10062, 40060). ``add_attachment`` serves a file from the fake's CDN path for ``Attachment.read()``.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from bench.fakes.loopback import LoopbackFake, LoopbackServer

_log = logging.getLogger(__name__)
API_PREFIX = "/api/v10"
CDN_PREFIX = "/cdn/attachments"
VOICE_MESSAGE = 1 << 13
DISCORD_EPOCH_MS = 1_420_070_400_000  # 2015-01-01: a snowflake counts milliseconds from it
"""A message's flag for a voice message (its one attachment is OGG audio with a waveform)."""
CONTENT_LIMIT = 2000
NONCE_LIMIT = 25
CUSTOM_ID_LIMIT = 100
EPHEMERAL = 64
LOADING = 128
ATTACHMENT_SIZE_LIMIT = 10 * 1024 * 1024
MEMBER_PERMISSIONS = 2248473465835073
"""A plain member's (and the bot's) permissions in a channel: reading, sending, reacting; managing nothing."""
MANAGE_CHANNELS = 1 << 4
MANAGE_GUILD = 1 << 5
COMMAND_LIMIT = 100
_COMMAND_NAME = re.compile(r"^[-_\w]{1,32}$")
_CALLBACK_TYPES = {1, 4, 5, 6, 7, 8, 9, 10, 12}


class DiscordApiError(Exception):
    """Raised by a route handler: becomes ``{"message": …, "code": …}`` with ``status``."""

    def __init__(self, status: int, message: str, code: int = 0, extra: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code
        self.extra, self.headers = extra or {}, headers or {}


@dataclass(frozen=True)
class UploadedFile:
    """One file part of a multipart request (``files[n]``), with its bytes."""

    field: str
    filename: str
    data: bytes


@dataclass(frozen=True)
class DiscordRequest:
    """One request as a handler sees it: the route's named groups in ``params``.

    For a multipart body ``json`` is its ``payload_json`` part and ``files`` the uploaded files;
    ``at`` is ``time.monotonic()`` when the request arrived.
    """

    method: str
    path: str
    params: dict[str, str]
    headers: dict[str, str]
    json: Any
    query: dict[str, str] = field(default_factory=dict)
    files: tuple[UploadedFile, ...] = ()
    at: float = 0.0


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
class _Interaction:
    """What Discord remembers about an interaction it created: where, and what was answered."""

    id: str
    channel_id: str
    kind: int
    responded: bool = False
    original: dict[str, Any] | None = None
    """The response message (or, for a button press, the message the button is on)."""


@dataclass
class _Answer:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


class _Handler(BaseHTTPRequestHandler):
    server: LoopbackServer[FakeDiscord]
    protocol_version = "HTTP/1.0"
    timeout = 10.0

    def do_POST(self) -> None:
        """Serve one request (every verb the same way); a dropped request gets no answer at all."""
        headers = {name.lower(): value for name, value in self.headers.items()}
        raw = self._body(headers)
        answer = self.server.fake._dispatch(self.command, self.path, headers, raw)
        if answer is None:
            self.close_connection = True  # no answer: the connection is dropped
            return
        if isinstance(answer.body, bytes):
            payload, content_type = answer.body, "application/octet-stream"
        else:
            payload = b"" if answer.status == 204 else json.dumps(answer.body).encode()
            content_type = "application/json"
        self.send_response(answer.status)
        if answer.status != 204:  # Discord's 204 has no body and no content type
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in answer.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_PUT = do_PATCH = do_DELETE = do_POST

    def _body(self, headers: dict[str, str]) -> bytes:
        if headers.get("transfer-encoding", "").lower() != "chunked":
            length = int(headers.get("content-length") or 0)
            return self.rfile.read(length) if length else b""
        chunks: list[bytes] = []
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                self.rfile.readline()
                return b"".join(chunks)
            chunks.append(self.rfile.read(size))
            self.rfile.readline()

    def log_message(self, format: str, *args: Any) -> None:
        _log.debug("fake discord: " + format, *args)


class FakeDiscord(LoopbackFake):
    """A scriptable Discord REST API on 127.0.0.1; use as a context manager."""

    handler = _Handler
    api_root = API_PREFIX

    def __init__(self, token: str = "discord-token", *, bot_id: str = "1000000000000000001",
                 keep_alive: bool = False) -> None:
        super().__init__(keep_alive=keep_alive)
        self.token = token
        self.bot_user = {"id": bot_id, "username": "Mnemo", "discriminator": "0", "global_name": None,
                         "avatar": None, "bot": True}
        self._last_id = 0
        self._lock = threading.Lock()
        self._routes: list[_Route] = []
        self._requests: list[DiscordRequest] = []
        self._messages: list[dict[str, Any]] = []
        self._edits: list[dict[str, Any]] = []
        self._dm_channels: dict[str, dict[str, Any]] = {}
        self._by_nonce: dict[tuple[str, str], dict[str, Any]] = {}
        self._failures: deque[_Failure] = deque()
        self._stalls: deque[_Stall] = deque()
        self._interactions: dict[str, _Interaction] = {}
        self._responses: list[dict[str, Any]] = []
        self._followups: list[dict[str, Any]] = []
        self._bot_messages: dict[str, dict[str, Any]] = {}
        self._syncs: list[dict[str, Any]] = []
        self._typing: list[str] = []
        self._cdn: dict[str, bytes] = {}
        self._cdn_reads: list[str] = []
        self.application = {"id": bot_id, "name": "Mnemo", "description": "", "icon": None, "bot_public": True,
                            "bot_require_code_grant": False, "verify_key": "0" * 64, "flags": 0,
                            "owner": {"id": "1000000000000000002", "username": "owner", "discriminator": "0",
                                      "global_name": None, "avatar": None}}
        self.add_route("GET", r"/users/@me", lambda _request: dict(self.bot_user))
        self.add_route("GET", r"/oauth2/applications/@me", lambda _request: dict(self.application))
        self.add_route("POST", r"/users/@me/channels", self._open_dm)
        self.add_route("POST", r"/channels/(?P<channel_id>[^/]+)/messages", self._create_message)
        self.add_route("POST", r"/channels/(?P<channel_id>\d+)/typing", self._start_typing)
        self.add_route("PATCH", r"/channels/(?P<channel_id>\d+)/messages/(?P<message_id>\d+)", self._edit_message)
        self.add_route("DELETE", r"/channels/(?P<channel_id>\d+)/messages/(?P<message_id>\d+)",
                       self._delete_message)
        self.add_route("POST", r"/interactions/(?P<interaction_id>\d+)/(?P<token>[^/]+)/callback",
                       self._interaction_callback, auth=False)
        self.add_route("POST", r"/webhooks/(?P<app_id>\d+)/(?P<token>[^/]+)", self._followup, auth=False)
        self.add_route("PATCH", r"/webhooks/(?P<app_id>\d+)/(?P<token>[^/]+)/messages/@original",
                       self._edit_original, auth=False)
        self.add_route("PUT", r"/applications/(?P<app_id>\d+)/commands", self._sync_commands)
        self.add_route("PUT", r"/applications/(?P<app_id>\d+)/guilds/(?P<guild_id>\d+)/commands",
                       self._sync_commands)

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
        """A fresh snowflake: its top bits are the time of now, as Discord's are (discord.py reads a message's
        ``created_at`` from its id, and Mnemo counts "in 5 minutes" from it); strictly increasing."""
        with self._lock:
            return self._snowflake()

    def _snowflake(self) -> str:
        """:meth:`new_id` for a caller holding the lock."""
        self._last_id = max((int(time.time() * 1000) - DISCORD_EPOCH_MS) << 22, self._last_id + 1)
        return str(self._last_id)

    @property
    def requests(self) -> list[DiscordRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """Every message created, in order (a deduplicated resend adds nothing)."""
        with self._lock:
            return [dict(message) for message in self._messages]

    @property
    def edits(self) -> list[dict[str, Any]]:
        """Every edit of a channel message: ``channel_id``, ``message_id``, ``content``, ``at`` (monotonic)."""
        with self._lock:
            return [dict(edit) for edit in self._edits]

    def messages_in(self, channel_id: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m["channel_id"] == channel_id]

    def dm_channel_of(self, user_id: str) -> str | None:
        with self._lock:
            channel = self._dm_channels.get(user_id)
        return channel["id"] if channel else None

    @property
    def interaction_responses(self) -> list[dict[str, Any]]:
        """Every interaction callback: token, type, flags, content, components, ``at`` (monotonic)."""
        with self._lock:
            return json.loads(json.dumps(self._responses))

    @property
    def followups(self) -> list[dict[str, Any]]:
        """Every follow-up (POST) and edit of the original (PATCH): token, message id, content, flags,
        components, ``files`` as ``{filename: bytes}`` and ``at`` (monotonic), in order."""
        with self._lock:
            return [dict(item, files=dict(item["files"])) for item in self._followups]

    def bot_message(self, message_id: str) -> dict[str, Any]:
        """A message the bot posted through an interaction, as Discord would send it back."""
        with self._lock:
            return json.loads(json.dumps(self._bot_messages[message_id]))

    @property
    def command_syncs(self) -> list[dict[str, Any]]:
        """Every bulk command overwrite: ``{"guild_id": str | None, "commands": [...]}``."""
        with self._lock:
            return json.loads(json.dumps(self._syncs))

    @property
    def typing(self) -> list[str]:
        """The channels a typing indicator was started in, in order."""
        with self._lock:
            return list(self._typing)

    # -- Discord's side: the payloads the gateway delivers ------------------------------------------

    def user(self, user_id: str, name: str | None = None, *, bot: bool = False) -> dict[str, Any]:
        """A user object as Discord sends it."""
        name = name or f"user{user_id[-4:]}"
        return {"id": user_id, "username": name, "discriminator": "0", "global_name": name.title(),
                "avatar": None, "bot": bot, "public_flags": 0}

    @property
    def cdn_reads(self) -> list[str]:
        """The paths of the CDN's files that were downloaded, in order."""
        with self._lock:
            return list(self._cdn_reads)

    def add_attachment(self, filename: str, data: bytes, content_type: str = "application/json") -> dict[str, Any]:
        """An uploaded attachment (as in ``resolved.attachments``) whose URL this fake serves."""
        attachment_id = self.new_id()
        path = f"{CDN_PREFIX}/{attachment_id}/{filename}"
        with self._lock:
            self._cdn[path] = data
        url = self.base_url.removesuffix(API_PREFIX) + path
        return {"id": attachment_id, "filename": filename, "size": len(data), "url": url, "proxy_url": url,
                "content_type": content_type, "ephemeral": True}

    def slash_command(self, name: str, options: Mapping[str, object] | None = None, *, user_id: str,
                      guild_id: str | None = None, channel_id: str | None = None,
                      locale: str = "en-US", roles: tuple[str, ...] = (),
                      permissions: int = MEMBER_PERMISSIONS) -> dict[str, Any]:
        """An INTERACTION_CREATE for ``/name``; attachments (from ``add_attachment``) become type 11. In a server,
        ``permissions`` are the member's resolved permissions in the channel (a plain member's by default)."""
        raw_options: list[dict[str, Any]] = []
        resolved: dict[str, dict[str, Any]] = {}
        for option, value in (options or {}).items():
            if isinstance(value, dict) and "filename" in value:
                resolved.setdefault("attachments", {})[value["id"]] = value
                raw_options.append({"name": option, "type": 11, "value": value["id"]})
            else:
                kind = 5 if isinstance(value, bool) else 4 if isinstance(value, int) else 3
                raw_options.append({"name": option, "type": kind, "value": value})
        data: dict[str, Any] = {"id": self._command_id(name), "name": name, "type": 1, "options": raw_options}
        if resolved:
            data["resolved"] = resolved
        return self._interaction(2, data, user_id=user_id, guild_id=guild_id, channel_id=channel_id, locale=locale,
                                 roles=roles, permissions=permissions)

    def button_press(self, message: dict[str, Any], custom_id: str, *, user_id: str, guild_id: str | None = None,
                     channel_id: str | None = None, locale: str = "en-US") -> dict[str, Any]:
        """An INTERACTION_CREATE for a button on ``message`` (one the bot posted)."""
        data = {"custom_id": custom_id, "component_type": 2}
        payload = self._interaction(3, data, user_id=user_id, guild_id=guild_id,
                                    channel_id=channel_id or message.get("channel_id"), locale=locale,
                                    message=message)
        return payload

    def incoming_message(self, content: str, *, user_id: str, channel_id: str | None = None,
                         guild_id: str | None = None, mentions: tuple[dict[str, Any], ...] = (),
                         reply_to: dict[str, Any] | None = None, bot: bool = False,
                         roles: tuple[str, ...] = (), attachments: tuple[dict[str, Any], ...] = (),
                         stickers: tuple[str, ...] = (), voice: bool = False) -> dict[str, Any]:
        """A MESSAGE_CREATE: a DM when ``guild_id`` is None (in the user's DM channel by default); in a server
        the sender has ``roles``. ``attachments`` come from :meth:`add_attachment` (served by the fake CDN),
        ``stickers`` are sticker names (``sticker_items``), ``voice`` marks a voice message (flag 8192)."""
        channel_id = channel_id or (self.dm_channel(user_id) if guild_id is None else self.new_id())
        message: dict[str, Any] = {
            "id": self.new_id(), "channel_id": channel_id, "type": 19 if reply_to else 0, "content": content,
            "author": self.user(user_id, bot=bot), "timestamp": datetime.now(UTC).isoformat(),
            "edited_timestamp": None, "tts": False, "mention_everyone": False, "mentions": list(mentions),
            "mention_roles": [], "attachments": [{k: v for k, v in item.items() if k != "ephemeral"}
                                                 for item in attachments],
            "embeds": [], "pinned": False, "flags": VOICE_MESSAGE if voice else 0, "components": [],
            "sticker_items": [{"id": self.new_id(), "name": name, "format_type": 1} for name in stickers]}
        if guild_id is not None:
            message["guild_id"] = guild_id
            message["member"] = {"roles": list(roles), "joined_at": "2026-01-01T00:00:00+00:00", "deaf": False,
                                 "mute": False, "flags": 0}
        if reply_to is not None:
            message["message_reference"] = {"type": 0, "message_id": reply_to["id"],
                                            "channel_id": reply_to["channel_id"], "guild_id": guild_id}
            message["referenced_message"] = reply_to
        return message

    def guild_create(self, guild_id: str, role_ids: tuple[str, ...] = ()) -> dict[str, Any]:
        """The GUILD_CREATE the gateway sends for each server the bot is in (with the guilds intent): its
        roles, the @everyone role (whose id is the server's) among them."""
        roles = [{"id": role_id, "name": "@everyone" if role_id == guild_id else f"role{role_id[-4:]}",
                  "color": 0, "hoist": False, "position": index, "permissions": "0", "managed": False,
                  "mentionable": False, "flags": 0} for index, role_id in enumerate((guild_id, *role_ids))]
        return {"id": guild_id, "name": f"server{guild_id[-4:]}", "unavailable": False, "roles": roles,
                "channels": [], "threads": [], "members": [], "member_count": 2, "emojis": [], "stickers": [],
                "features": [], "owner_id": self.new_id(), "afk_timeout": 300, "verification_level": 0,
                "default_message_notifications": 0, "explicit_content_filter": 0, "mfa_level": 0,
                "premium_tier": 0, "preferred_locale": "en-US", "nsfw_level": 0, "large": False}

    def dm_channel(self, user_id: str) -> str:
        """The id of the DM channel with ``user_id`` (created on first use, as Discord does)."""
        return self._dm_channel(user_id)["id"]

    def _dispatch(self, method: str, raw_path: str, headers: dict[str, str], raw: bytes) -> _Answer | None:
        with self._lock:
            stall = self._stalls.popleft() if self._stalls else None
        if stall is not None:
            self._stopping.wait(stall.seconds)
            if not stall.process:
                return None
        parts = urlsplit(raw_path)
        path = parts.path
        if method == "GET" and path.startswith(CDN_PREFIX + "/"):
            with self._lock:
                content = self._cdn.get(path)
                self._cdn_reads.append(path)
            return _error(404, "404: Not Found") if content is None else _Answer(200, content)
        if not path.startswith(API_PREFIX + "/"):
            return _error(404, "404: Not Found")
        path = path[len(API_PREFIX):]
        route, match = self._match(method, path)
        body, files = _body(raw, headers.get("content-type", ""))
        request = DiscordRequest(method, path, match.groupdict() if match else {}, headers, body,
                                 dict(parse_qsl(parts.query)), files, time.monotonic())
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
        return self._dm_channel(recipient)

    def _dm_channel(self, recipient: str) -> dict[str, Any]:
        with self._lock:
            channel = self._dm_channels.get(recipient)
            if channel is None:
                user = {"id": recipient, "username": f"user{recipient[-4:]}", "discriminator": "0",
                        "global_name": None, "avatar": None}
                channel = {"id": self._snowflake(), "type": 1, "last_message_id": None, "flags": 0,
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
            message = {"id": self._snowflake(), "channel_id": channel_id, "type": 0, "content": content,
                       "author": dict(self.bot_user), "timestamp": datetime.now(UTC).isoformat(),
                       "nonce": nonce, "allowed_mentions": body.get("allowed_mentions"),
                       "mentions": [self.user(str(user_id)) for user_id in mentioned
                                    if f"<@{user_id}>" in content]}
            if body.get("message_reference"):
                message["type"] = 19
                message["message_reference"] = body["message_reference"]
            self._messages.append(message)
            if nonce is not None:
                self._by_nonce[key] = message
            return dict(message)

    # -- interactions ---------------------------------------------------------------------------

    def _command_id(self, name: str) -> str:
        """The id Discord gave ``name`` at the last sync (a fresh one if it was never synced)."""
        with self._lock:
            for sync in reversed(self._syncs):
                for command in sync["commands"]:
                    if command["name"] == name:
                        return command["id"]
        return self.new_id()

    def _interaction(self, kind: int, data: dict[str, Any], *, user_id: str, guild_id: str | None,
                     channel_id: str | None, locale: str, message: dict[str, Any] | None = None,
                     roles: tuple[str, ...] = (), permissions: int = MEMBER_PERMISSIONS) -> dict[str, Any]:
        user, interaction_id = self.user(user_id), self.new_id()
        token = f"aW50ZXJhY3Rpb246{interaction_id}OjEyMzQ1Njc4OTA6{interaction_id[::-1]}"
        payload: dict[str, Any] = {
            "id": interaction_id, "application_id": self.application["id"], "type": kind, "data": data,
            "token": token, "version": 1, "locale": locale, "app_permissions": str(MEMBER_PERMISSIONS),
            "entitlements": [],
            "attachment_size_limit": ATTACHMENT_SIZE_LIMIT}
        if guild_id is None:
            channel_id = channel_id or self.dm_channel(user_id)
            payload.update(user=user, context=1, authorizing_integration_owners={"0": "0"},
                           channel={"id": channel_id, "type": 1, "last_message_id": None, "flags": 0,
                                    "recipients": [user]})
        else:
            channel_id = channel_id or self.new_id()
            payload.update(
                guild_id=guild_id, guild_locale="en-US", guild={"id": guild_id, "locale": "en-US", "features": []},
                context=0, authorizing_integration_owners={"0": guild_id},
                member={"user": user, "roles": list(roles), "joined_at": "2026-01-01T00:00:00+00:00", "deaf": False,
                        "mute": False, "flags": 0, "pending": False, "nick": None, "avatar": None,
                        "permissions": str(permissions)},
                channel={"id": channel_id, "type": 0, "guild_id": guild_id, "name": "general", "position": 0,
                         "permission_overwrites": [], "nsfw": False, "parent_id": None, "topic": None,
                         "rate_limit_per_user": 0, "last_message_id": None, "flags": 0,
                         "permissions": str(permissions)})
        payload["channel_id"] = channel_id
        if message is not None:
            payload["message"] = message
        with self._lock:
            self._interactions[token] = _Interaction(interaction_id, channel_id, kind, original=message)
        return payload

    def _known_interaction(self, token: str, unknown_code: int) -> _Interaction:
        with self._lock:
            interaction = self._interactions.get(token)
        if interaction is None:
            message = "Unknown interaction" if unknown_code == 10062 else "Unknown Webhook"
            raise DiscordApiError(404, message, unknown_code)
        return interaction

    def _bot_message_from(self, interaction: _Interaction, body: dict[str, Any], files: tuple[UploadedFile, ...],
                          *, flags: int, message_id: str | None = None) -> dict[str, Any]:
        return {"id": message_id or self.new_id(), "channel_id": interaction.channel_id, "type": 20,
                "content": str(body.get("content") or ""), "author": dict(self.bot_user),
                "timestamp": datetime.now(UTC).isoformat(), "edited_timestamp": None, "tts": False,
                "mention_everyone": False, "mentions": [], "mention_roles": [], "pinned": False,
                "embeds": body.get("embeds") or [], "components": body.get("components") or [],
                "attachments": _file_list(files), "flags": flags, "webhook_id": self.application["id"],
                "application_id": self.application["id"]}

    def _remember(self, message: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self._bot_messages[message["id"]] = message
        return json.loads(json.dumps(message))

    def _interaction_callback(self, request: DiscordRequest) -> dict[str, Any] | None:
        interaction = self._known_interaction(request.params["token"], 10062)
        body = request.json if isinstance(request.json, dict) else {}
        kind, data = body.get("type"), body.get("data") or {}
        if kind not in _CALLBACK_TYPES or interaction.id != request.params["interaction_id"]:
            raise DiscordApiError(400, "Invalid Form Body", 50035)
        flags = int(data.get("flags") or 0)
        with self._lock:
            if interaction.responded:
                raise DiscordApiError(400, "Interaction has already been acknowledged.", 40060)
            interaction.responded = True
            self._responses.append({"interaction_id": interaction.id, "token": request.params["token"],
                                    "type": kind, "flags": flags, "content": data.get("content"),
                                    "components": data.get("components"), "at": request.at})
        message = None
        if kind == 4:
            _check_message_body(data, request.files)
            message = self._bot_message_from(interaction, data, request.files, flags=flags)
        elif kind == 5:
            message = self._bot_message_from(interaction, {}, (), flags=flags | LOADING)
        elif kind == 7 and interaction.original is not None:
            message = {**interaction.original, **{k: v for k, v in data.items() if k in ("content", "components")},
                       "edited_timestamp": datetime.now(UTC).isoformat()}
        if message is not None:
            interaction.original = self._remember(message)
        if request.query.get("with_response") not in ("1", "true", "True"):
            return None
        answer: dict[str, Any] = {"interaction": {
            "id": interaction.id, "type": interaction.kind, "response_message_loading": kind == 5,
            "response_message_ephemeral": bool(flags & EPHEMERAL)}}
        if message is not None:
            answer["interaction"]["response_message_id"] = message["id"]
            answer["resource"] = {"type": kind, "message": message}
        return answer

    def _followup(self, request: DiscordRequest) -> dict[str, Any] | None:
        interaction = self._known_interaction(request.params["token"], 10015)
        body = request.json if isinstance(request.json, dict) else {}
        if not interaction.responded:
            raise DiscordApiError(404, "Unknown Webhook", 10015)
        _check_message_body(body, request.files)
        original = interaction.original
        if original is not None and int(original.get("flags") or 0) & LOADING:  # replaces the "thinking…"
            message = self._bot_message_from(interaction, body, request.files, message_id=original["id"],
                                             flags=int(original["flags"]) & ~LOADING)
            interaction.original = message
        else:
            message = self._bot_message_from(interaction, body, request.files, flags=int(body.get("flags") or 0))
        self._record_followup("POST", request, message)
        return self._remember(message) if request.query.get("wait") in ("1", "true", "True") else None

    def _edit_original(self, request: DiscordRequest) -> dict[str, Any]:
        interaction = self._known_interaction(request.params["token"], 10015)
        body = request.json if isinstance(request.json, dict) else {}
        if interaction.original is None:
            raise DiscordApiError(404, "Unknown Message", 10008)
        message = dict(interaction.original, edited_timestamp=datetime.now(UTC).isoformat())
        for key in ("content", "components", "embeds"):
            if key in body:
                message[key] = body[key] if body[key] is not None else ([] if key != "content" else "")
        if request.files:
            message["attachments"] = _file_list(request.files)
        message["flags"] = int(message.get("flags") or 0) & ~LOADING
        _check_message_body(message, request.files)
        interaction.original = message
        self._record_followup("PATCH", request, message)
        return self._remember(message)

    def _record_followup(self, method: str, request: DiscordRequest, message: dict[str, Any]) -> None:
        with self._lock:
            self._followups.append({
                "method": method, "token": request.params["token"], "message_id": message["id"],
                "content": message["content"], "flags": message["flags"], "components": message["components"],
                "files": {file.filename: file.data for file in request.files}, "at": request.at})

    def _sync_commands(self, request: DiscordRequest) -> list[dict[str, Any]]:
        if request.params["app_id"] != self.application["id"]:
            raise DiscordApiError(403, "Missing Access", 50001)
        _check_commands(request.json)
        guild_id = request.params.get("guild_id")
        commands = [{**command, "id": self.new_id(), "application_id": self.application["id"], "version": "1",
                     **({"guild_id": guild_id} if guild_id else {})} for command in request.json]
        with self._lock:
            self._syncs.append({"guild_id": guild_id, "commands": commands})
        return json.loads(json.dumps(commands))

    def _own_message(self, request: DiscordRequest) -> dict[str, Any]:
        """The bot's message the request names (call with the lock held); Discord's 404 or 403 otherwise."""
        channel_id, message_id = request.params["channel_id"], request.params["message_id"]
        found = next((m for m in self._messages if m["id"] == message_id and m["channel_id"] == channel_id), None)
        if found is None:
            raise DiscordApiError(404, "Unknown Message", 10008)
        if found["author"]["id"] != self.bot_user["id"]:
            raise DiscordApiError(403, "Cannot edit a message authored by another user", 50005)
        return found

    def _edit_message(self, request: DiscordRequest) -> dict[str, Any]:
        body = request.json if isinstance(request.json, dict) else {}
        with self._lock:
            message = self._own_message(request)
            if "content" in body:
                content = str(body.get("content") or "")
                _check_message_body({"content": content}, ())
                message["content"] = content
            message["edited_timestamp"] = datetime.now(UTC).isoformat()
            self._edits.append({"channel_id": message["channel_id"], "message_id": message["id"],
                                "content": message["content"], "at": request.at})
            return dict(message)

    def _delete_message(self, request: DiscordRequest) -> None:
        with self._lock:
            self._messages.remove(self._own_message(request))

    def _start_typing(self, request: DiscordRequest) -> None:
        with self._lock:
            self._typing.append(request.params["channel_id"])


def _body(raw: bytes, content_type: str) -> tuple[Any, tuple[UploadedFile, ...]]:
    """The JSON body, or for multipart/form-data its ``payload_json`` and its files."""
    if not content_type.startswith("multipart/form-data"):
        return _json(raw), ()
    message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
    payload, files = None, []
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        decoded = part.get_payload(decode=True)
        data = decoded if isinstance(decoded, bytes) else b""  # None for a part that is itself multipart
        filename = part.get_filename()
        if name == "payload_json":
            payload = _json(data)
        elif filename is not None:
            files.append(UploadedFile(str(name), filename, data))
    return payload, tuple(files)


def _check_message_body(body: dict[str, Any], files: tuple[UploadedFile, ...]) -> None:
    """Discord's checks on a message: not empty, within the content limit, custom ids within theirs."""
    content = str(body.get("content") or "")
    if not content.strip() and not body.get("embeds") and not files and not body.get("components"):
        raise DiscordApiError(400, "Cannot send an empty message", 50006)
    custom_ids = [str(button.get("custom_id") or "") for row in body.get("components") or []
                  for button in row.get("components") or []]
    if len(content) > CONTENT_LIMIT or any(len(custom_id) > CUSTOM_ID_LIMIT for custom_id in custom_ids):
        raise DiscordApiError(400, "Invalid Form Body", 50035)


def _check_commands(commands: Any) -> None:
    """Discord's checks on a bulk overwrite: names, descriptions and localizations within limits."""
    if not isinstance(commands, list) or len(commands) > COMMAND_LIMIT:
        raise DiscordApiError(400, "Invalid Form Body", 50035)
    names = [command.get("name") for command in commands]
    if len(set(names)) != len(names):
        raise DiscordApiError(400, "Application command names must be unique", 50035)
    for item in [*commands, *(option for command in commands for option in command.get("options") or [])]:
        name, description = str(item.get("name") or ""), str(item.get("description") or "")
        localized = {**(item.get("name_localizations") or {})}
        if not _COMMAND_NAME.fullmatch(name) or name != name.lower() or not 1 <= len(description) <= 100:
            raise DiscordApiError(400, "Invalid Form Body", 50035, {"errors": {"name": name}})
        descriptions = (item.get("description_localizations") or {}).values()
        if any(not _COMMAND_NAME.fullmatch(str(v)) for v in localized.values()) or any(
                not 1 <= len(str(v)) <= 100 for v in descriptions):
            raise DiscordApiError(400, "Invalid Form Body", 50035, {"errors": {"localizations": name}})


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


def _file_list(files: tuple[UploadedFile, ...]) -> list[dict[str, Any]]:
    return [{"id": str(index), "filename": file.filename, "size": len(file.data), "url": "", "proxy_url": ""}
            for index, file in enumerate(files)]


def _error(status: int, message: str, code: int = 0) -> _Answer:
    return _Answer(status, {"message": message, "code": code})


def _failure(failure: _Failure) -> _Answer:
    if failure.status == 429:
        wait = 0.2 if failure.retry_after is None else failure.retry_after
        body = {"message": failure.message or "You are being rate limited.", "retry_after": wait, "global": False}
        # Discord's own 429s come through its Google front (``Via: 1.1 google``); one without it is Cloudflare's
        # ban, which discord.py raises instead of waiting out.
        headers = {"Retry-After": str(math.ceil(wait)), "X-RateLimit-Scope": "user", "Via": "1.1 google"}
        return _Answer(429, body, headers)
    default = {401: "401: Unauthorized", 403: "Missing Access", 404: "Unknown Channel"}.get(
        failure.status, f"{failure.status}: Internal Server Error" if failure.status >= 500 else "Bad Request")
    code = {403: 50001, 404: 10003}.get(failure.status, 0)
    headers = {} if failure.retry_after is None else {"Retry-After": f"{failure.retry_after:g}"}
    return _Answer(failure.status, {"message": failure.message or default, "code": code}, headers)
