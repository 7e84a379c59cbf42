"""A fake Telegram Bot API server for tests.

It speaks the real HTTP API: ``POST {base_url}{token}/{method}`` with a JSON, form, multipart or
query body, answered with ``{"ok": true, "result": …}`` or ``{"ok": false, "error_code": …,
"description": …}``; files are downloaded from ``GET {base_file_url}{token}/{file_path}``. Plain
httpx and python-telegram-bot (``base_url=fake.base_url, base_file_url=fake.base_file_url``) both
work against it. Standard library only; it binds 127.0.0.1 on an ephemeral port and serves from a
thread::

    with FakeTelegram() as telegram:
        TelegramSender(telegram.base_url, telegram.token).send(target, "hi", idempotency_key="k")
        assert telegram.sent[0]["text"] == "hi"

A bot polls it like Telegram: the test pushes what users do (``push_message``, ``push_callback``)
and ``getUpdates`` serves it, holding the request up to its ``timeout`` until something arrives and
forgetting updates below the ``offset`` it is given. A ``getUpdates`` that arrives while another is
held ends the held one with Telegram's 409 ("Conflict: terminated by other getUpdates request").
Webhook mode as Telegram has it: ``setWebhook`` (an empty ``url`` or ``deleteWebhook`` removes it) and
``getWebhookInfo``; while a webhook is set, ``getUpdates`` is refused with Telegram's 409 ("can't use
getUpdates method while webhook is active"). The test is Telegram's sender and the load balancer:
``take_updates`` hands over what users did, ``post_update`` POSTs one update to a replica's address
with the secret token the bot set.
What the bot does is recorded in Bot API shapes: ``messages`` (its messages as they are now, edits
applied, keyboards included, deleted ones gone), ``drafts`` (``sendMessageDraft``, checked as the Bot API
defines it: a private chat, a non-zero ``draft_id``, 1–4096 characters of text; each with its time),
``documents`` (the uploaded bytes), ``callback_answers``,
``chat_actions``, ``my_commands(language_code)``.

Methods are a table: ``telegram.methods["getUpdates"] = handler`` replaces one. A handler takes the
request's parameters and returns the ``result``, or raises :class:`TelegramApiError`. Scripted
trouble applies to the next request: ``fail_next`` answers with an error (a 429 carries
``parameters.retry_after``), ``stall_next`` holds the request before it is recorded and then drops the
connection (a request that never got processed), or processes it late with ``process=True``;
``forbid_chat`` makes a chat refuse messages (a user who never started the bot); ``migrate_chat``
answers as Telegram does for a group that became a supergroup. Connections are
HTTP/1.0 (one request each) unless ``keep_alive`` (:mod:`bench.fakes.loopback`).
"""

from __future__ import annotations

import http.client
import json
import logging
import re
import threading
import time
import urllib.error
import urllib.request
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass
from email.message import Message as MimeMessage
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from bench.fakes.loopback import LoopbackFake, LoopbackServer

Handler = Callable[[dict[str, Any]], Any]

_log = logging.getLogger(__name__)
_PATH = re.compile(r"^/bot(?P<token>[^/]+)/(?P<method>[A-Za-z]\w*)$")
_FILE_PATH = re.compile(r"^/file/bot(?P<token>[^/]+)/(?P<path>[\w./-]+)$")
TEXT_LIMIT = 4096  # UTF-16 code units, like entity offsets
CAPTION_LIMIT = 1024
CALLBACK_DATA_LIMIT = 64
DOWNLOAD_LIMIT = 20 * 1024 * 1024  # getFile refuses bigger files
LONG_POLL_CAP_SECONDS = 30.0
NOT_STARTED = "Forbidden: bot can't initiate conversation with a user"


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
    at: float = 0.0
    """``time.monotonic()`` when it arrived."""


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


@dataclass(frozen=True)
class _StoredFile:
    document: dict[str, Any]
    data: bytes
    path: str


class _Handler(BaseHTTPRequestHandler):
    server: LoopbackServer[FakeTelegram]
    protocol_version = "HTTP/1.0"
    timeout = 10.0

    def do_POST(self) -> None:
        """Serve one request (GET the same way); a dropped request gets no answer at all."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        answer = self.server.fake._dispatch(self.path, headers, raw)
        if answer is None:
            self.close_connection = True  # no answer: the connection is dropped
            return
        status, body = answer
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream" if isinstance(body, bytes)
                             else "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a cancelled long poll)
            _log.debug("fake telegram: client went away before the answer")

    do_GET = do_POST

    def log_message(self, format: str, *args: Any) -> None:
        _log.debug("fake telegram: " + format, *args)


class FakeTelegram(LoopbackFake):
    """A scriptable Bot API on 127.0.0.1; use as a context manager."""

    handler = _Handler
    api_root = "/bot"

    def __init__(self, token: str = "123:ABC", *, bot_username: str = "mnemo_test_bot",
                 keep_alive: bool = False) -> None:
        super().__init__(keep_alive=keep_alive)
        self.token = token
        self.bot_user: dict[str, Any] = {
            "id": int(token.split(":")[0]) if token.split(":")[0].isdigit() else 1, "is_bot": True,
            "first_name": "Mnemo", "username": bot_username, "can_join_groups": True,
            "can_read_all_group_messages": False, "supports_inline_queries": False}
        self.methods: dict[str, Handler] = {
            "getMe": self._get_me, "sendMessage": self._send_message, "getUpdates": self._get_updates,
            "deleteWebhook": self._delete_webhook, "setWebhook": self._set_webhook,
            "getWebhookInfo": self._get_webhook_info,
            "setMyCommands": self._set_my_commands, "getMyCommands": self._get_my_commands,
            "deleteMyCommands": self._delete_my_commands, "editMessageText": self._edit_message_text,
            "editMessageReplyMarkup": self._edit_message_reply_markup,
            "answerCallbackQuery": self._answer_callback_query, "sendChatAction": self._send_chat_action,
            "sendDocument": self._send_document, "getFile": self._get_file,
            "sendMessageDraft": self._send_message_draft, "deleteMessage": self._delete_message,
            "getChatMember": self._get_chat_member,
        }
        self._lock = threading.Lock()
        self._webhook_connections = threading.local()  # post_update's, with keep_alive
        self._updates_ready = threading.Condition(self._lock)
        self._calls: list[RecordedCall] = []
        self._sent: list[dict[str, Any]] = []
        self._drafts: list[dict[str, Any]] = []
        self._message_ids: defaultdict[int | str, int] = defaultdict(int)
        self._failures: deque[_Failure] = deque()
        self._stalls: deque[_Stall] = deque()
        self._updates: list[dict[str, Any]] = []
        self._next_update_id = 1
        self._polls = 0  # getUpdates requests so far: a held one ends with 409 when a newer one arrives
        self._messages: dict[tuple[int | str, int], dict[str, Any]] = {}
        self._outgoing: list[tuple[int | str, int]] = []
        self._files: dict[str, _StoredFile] = {}
        self._documents: list[dict[str, Any]] = []
        self._commands: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._answers: list[dict[str, Any]] = []
        self._open_queries: set[str] = set()
        self._actions: list[dict[str, Any]] = []
        self._forbidden: dict[int | str, str] = {}
        self._migrated: dict[int | str, int] = {}
        self._chats: dict[int | str, dict[str, Any]] = {}
        self._users: dict[int, dict[str, Any]] = {}
        self._statuses: dict[tuple[int | str, int], str] = {}
        self._webhook: dict[str, Any] | None = None

    @property
    def base_file_url(self) -> str:
        """``http://127.0.0.1:PORT/file/bot``: the token and ``/file_path`` are appended to it."""
        return self.base_url.removesuffix("/bot") + "/file/bot"

    def _wake_waiters(self) -> None:
        with self._updates_ready:
            self._updates_ready.notify_all()

    # -- scripting -------------------------------------------------------------------------------

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

    def forbid_chat(self, chat_id: int | str, description: str = NOT_STARTED) -> None:
        """Messages and documents to this chat get a 403 (by default: the user never started the bot)."""
        with self._lock:
            self._forbidden[chat_id] = description

    def migrate_chat(self, chat_id: int, to_chat_id: int) -> None:
        """The group became a supergroup: messages to ``chat_id`` get Telegram's 400 naming the new id."""
        with self._lock:
            self._migrated[chat_id] = to_chat_id

    def set_member_status(self, chat_id: int | str, user: dict[str, Any], status: str) -> None:
        """``getChatMember`` answers ``status`` (``creator``, ``administrator``, ``member``, ``left``…) for
        ``user`` in ``chat_id``; a user never set there is a plain ``member`` of a chat they wrote in."""
        with self._lock:
            self._users[user["id"]] = dict(user)
            self._statuses[(chat_id, user["id"])] = status

    def push_message(self, chat: dict[str, Any] | int, from_user: dict[str, Any], text: str | None = None, *,
                     reply_to: dict[str, Any] | None = None, entities: list[dict[str, Any]] | None = None,
                     document: dict[str, Any] | None = None, service: dict[str, Any] | None = None,
                     date: int | None = None, media: dict[str, Any] | None = None) -> dict[str, Any]:
        """A user's message, served by the next ``getUpdates``; returns the Message. ``date`` (Unix seconds, now
        when not given) is when the user sent it: an update can reach the bot long after (a slow bot, a backlog).

        A text starting with ``/`` gets its ``bot_command`` entity, as Telegram adds it. With a
        ``document`` (from :meth:`add_file`, or a document the bot sent), ``text`` is its caption.
        ``service`` fields make it a service message (``{"migrate_to_chat_id": …}``). ``media`` fields (``{"photo":
        add_photo(…)}``, ``{"sticker": sticker_object(…)}``, ``{"voice": add_voice(…)}``) are the message's media, and
        ``text`` then is its caption, as with a document.
        """
        chat = chat if isinstance(chat, dict) else chat_object(chat)
        with self._lock:
            self._chats[chat["id"]] = dict(chat)
            self._users[from_user["id"]] = dict(from_user)
            message: dict[str, Any] = {"message_id": self._next_message_id(chat["id"]),
                                       "date": int(time.time()) if date is None else date,
                                       "chat": dict(chat), "from": dict(from_user)}
        captioned = document is not None or media is not None
        key, entities_key = ("caption", "caption_entities") if captioned else ("text", "entities")
        if text is not None:
            message[key] = text
        found = entities if entities is not None else _command_entity(text)
        if found:
            message[entities_key] = found
        if document is not None:
            message["document"] = dict(document)
        if reply_to is not None:
            message["reply_to_message"] = {k: v for k, v in reply_to.items() if k != "reply_to_message"}
        message.update(service or {})
        message.update(json.loads(json.dumps(media or {})))
        with self._lock:
            self._messages[(chat["id"], message["message_id"])] = message  # the bot may reply to it
        self._push_update({"message": message})
        return json.loads(json.dumps(message))

    def push_callback(self, from_user: dict[str, Any], message: dict[str, Any], data: str) -> str:
        """A press on an inline button of ``message`` (as the bot sent it); returns the query id."""
        current = self.message(message["chat"]["id"], message["message_id"]) or message
        with self._lock:
            query_id = f"cq{self._next_update_id}"
            self._open_queries.add(query_id)
        self._push_update({"callback_query": {"id": query_id, "from": dict(from_user), "message": current,
                                              "chat_instance": f"ci{current['chat']['id']}", "data": data}})
        return query_id

    def take_updates(self) -> list[dict[str, Any]]:
        """The updates not yet served, removed from the queue: what Telegram POSTs to a webhook."""
        with self._lock:
            taken, self._updates = self._updates, []
        return taken

    def post_update(self, url: str, update: dict[str, Any], timeout: float = 10.0) -> int:
        """POST ``update`` to ``url`` (a replica behind the load balancer) as Telegram delivers it to a webhook,
        with the secret token the bot set; returns the HTTP status. With ``keep_alive``, each calling thread keeps
        its connection to a replica for its next update, as Telegram keeps its webhook connections."""
        secret = (self._webhook or {}).get("secret_token")
        headers = {"Content-Type": "application/json",
                   **({"X-Telegram-Bot-Api-Secret-Token": secret} if secret else {})}
        body = json.dumps(update).encode()
        if self.keep_alive:
            return self._post_kept(url, body, headers, timeout)
        request = urllib.request.Request(url, data=body, method="POST", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                return answer.status
        except urllib.error.HTTPError as exc:
            return exc.code

    def _post_kept(self, url: str, body: bytes, headers: dict[str, str], timeout: float) -> int:
        parts = urlsplit(url)
        kept = getattr(self._webhook_connections, "by_host", None)
        if kept is None:
            kept = self._webhook_connections.by_host = {}
        while True:
            connection = kept.pop(parts.netloc, None)
            fresh = connection is None
            if connection is None:
                connection = http.client.HTTPConnection(parts.netloc, timeout=timeout)
            try:
                connection.request("POST", parts.path or "/", body=body, headers=headers)
                with connection.getresponse() as answer:
                    answer.read()
                    status = answer.status
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                connection.close()
                if fresh:
                    raise
                continue  # a kept connection the replica closed while it sat idle: once more, on a new one
            except BaseException:
                connection.close()
                raise
            kept[parts.netloc] = connection
            return int(status)

    @property
    def webhook(self) -> dict[str, Any] | None:
        """What the last ``setWebhook`` set (url, secret_token, allowed_updates), or None."""
        with self._lock:
            return dict(self._webhook) if self._webhook is not None else None

    def add_photo(self, data: bytes, width: int, height: int) -> list[dict[str, Any]]:
        """A photo a user sends: its sizes as Telegram lists them (a thumbnail, then the photo), for ``media``."""
        with self._lock:
            thumbnail = self._store_file(data[: max(1, len(data) // 8)], "thumb.jpg", "image/jpeg").document
            full = self._store_file(data, "photo.jpg", "image/jpeg").document
        scale = min(1.0, 90 / max(width, height))  # Telegram's thumbnail: at most 90 pixels a side
        return [_photo_size(thumbnail, round(width * scale), round(height * scale)), _photo_size(full, width, height)]

    def add_voice(self, data: bytes, duration: int = 3) -> dict[str, Any]:
        """A voice note a user records (OGG/Opus), for ``media={"voice": …}``."""
        with self._lock:
            stored = self._store_file(data, "voice.ogg", "audio/ogg").document
        return {key: stored[key] for key in ("file_id", "file_unique_id", "mime_type", "file_size")} | {
            "duration": duration}

    def add_file(self, data: bytes, file_name: str, mime_type: str = "application/json") -> dict[str, Any]:
        """A file a user uploads: the Document object to pass to :meth:`push_message`."""
        with self._lock:
            return dict(self._store_file(data, file_name, mime_type).document)

    # -- what happened ---------------------------------------------------------------------------

    @property
    def calls(self) -> list[RecordedCall]:
        """Every request that reached a method, in arrival order."""
        with self._lock:
            return list(self._calls)

    def calls_to(self, method: str) -> list[RecordedCall]:
        return [call for call in self.calls if call.method == method]

    @property
    def sent(self) -> list[dict[str, Any]]:
        """Messages accepted by ``sendMessage``: ``{chat_id, text, message_id}``."""
        with self._lock:
            return [dict(message) for message in self._sent]

    @property
    def drafts(self) -> list[dict[str, Any]]:
        """Drafts accepted by ``sendMessageDraft``: ``{chat_id, draft_id, text, message_thread_id, entities, at}``."""
        with self._lock:
            return [dict(draft) for draft in self._drafts]

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The bot's messages (texts and documents) as Message objects, edits applied, oldest first."""
        with self._lock:
            return [json.loads(json.dumps(self._messages[key])) for key in self._outgoing]

    def messages_to(self, chat_id: int | str) -> list[dict[str, Any]]:
        return [message for message in self.messages if message["chat"]["id"] == chat_id]

    def message(self, chat_id: int | str, message_id: int) -> dict[str, Any] | None:
        with self._lock:
            found = self._messages.get((chat_id, message_id))
            return json.loads(json.dumps(found)) if found is not None else None

    @property
    def documents(self) -> list[dict[str, Any]]:
        """Uploaded by ``sendDocument``: ``{chat_id, message_id, file_name, mime_type, caption, data}``."""
        with self._lock:
            return [dict(document) for document in self._documents]

    @property
    def callback_answers(self) -> list[dict[str, Any]]:
        """``answerCallbackQuery`` calls: ``{callback_query_id, text, show_alert}``."""
        with self._lock:
            return [dict(answer) for answer in self._answers]

    @property
    def chat_actions(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(action) for action in self._actions]

    def my_commands(self, language_code: str = "", scope: str = "default") -> list[dict[str, Any]]:
        """The command menu set for this language (``""``: every language without its own)."""
        with self._lock:
            return [dict(command) for command in self._commands.get((scope, language_code), [])]

    @property
    def pending_updates(self) -> int:
        """Updates not yet confirmed by a later ``getUpdates`` offset."""
        with self._lock:
            return len(self._updates)

    def wait_for(self, condition: Callable[[], Any], timeout: float = 10.0) -> Any:
        """Poll ``condition`` until it returns something truthy (returned); AssertionError after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"condition not met within {timeout}s")
            time.sleep(0.02)

    # -- the server side -------------------------------------------------------------------------

    def _dispatch(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, Any] | bytes] | None:
        with self._lock:
            stall = self._stalls.popleft() if self._stalls else None
        if stall is not None:
            self._stopping.wait(stall.seconds)
            if not stall.process:
                return None
        url = urlsplit(path)
        file_match = _FILE_PATH.match(unquote(url.path))  # clients may quote the token's ":"
        if file_match is not None:
            return self._download(file_match["token"], file_match["path"])
        match = _PATH.match(url.path)
        if match is None:
            return _error(404, "Not Found")
        name = next((m for m in self.methods if m.lower() == match["method"].lower()), None)
        params = _params(url.query, headers.get("content-type", ""), raw)
        with self._lock:
            self._calls.append(RecordedCall(match["method"], params, headers, time.monotonic()))
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

    def _download(self, token: str, file_path: str) -> tuple[int, dict[str, Any] | bytes]:
        with self._lock:
            stored = next((f for f in self._files.values() if f.path == file_path), None)
        if token != self.token:
            return _error(401, "Unauthorized")
        return (200, stored.data) if stored is not None else _error(404, "Not Found")

    def _push_update(self, body: dict[str, Any]) -> None:
        with self._updates_ready:
            self._updates.append({"update_id": self._next_update_id, **body})
            self._next_update_id += 1
            self._updates_ready.notify_all()

    def _next_message_id(self, chat_id: int | str) -> int:
        self._message_ids[chat_id] += 1
        return self._message_ids[chat_id]

    def _get_me(self, _params: dict[str, Any]) -> dict[str, Any]:
        return dict(self.bot_user)

    def _set_webhook(self, params: dict[str, Any]) -> bool:
        url = str(params.get("url") or "")
        with self._lock:
            self._webhook = {"url": url, "secret_token": params.get("secret_token"),
                             "allowed_updates": _json_value(params.get("allowed_updates")) or None} if url else None
        return True

    def _delete_webhook(self, _params: dict[str, Any]) -> bool:
        with self._lock:
            self._webhook = None
        return True

    def _get_webhook_info(self, _params: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            info = {"url": (self._webhook or {}).get("url", ""), "has_custom_certificate": False,
                    "pending_update_count": len(self._updates)}
            if self._webhook is not None and self._webhook["allowed_updates"]:
                info["allowed_updates"] = self._webhook["allowed_updates"]
        return info

    def _get_updates(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        if self.webhook is not None:
            raise TelegramApiError(409, WEBHOOK_ACTIVE)
        offset, limit = int(params.get("offset") or 0), min(max(int(params.get("limit") or 100), 1), 100)
        timeout = min(max(float(params.get("timeout") or 0), 0.0), LONG_POLL_CAP_SECONDS)
        allowed = _json_value(params.get("allowed_updates")) or None
        with self._updates_ready:
            self._polls += 1
            mine = self._polls
            self._updates_ready.notify_all()
            if offset > 0:
                self._updates = [u for u in self._updates if u["update_id"] >= offset]
            self._updates_ready.wait_for(lambda: self._updates or self._stopping.is_set() or self._polls != mine,
                                         timeout)
            if self._polls != mine:
                raise TelegramApiError(409, CONFLICT)
            wanted = [u for u in self._updates if allowed is None or any(kind in u for kind in allowed)]
            return json.loads(json.dumps(wanted[:limit]))

    def _send_message(self, params: dict[str, Any]) -> dict[str, Any]:
        chat_id, text = chat_id_param(params), str(params.get("text") or "")
        if not text.strip():
            raise TelegramApiError(400, "Bad Request: message text is empty")
        if utf16_len(text) > TEXT_LIMIT:
            raise TelegramApiError(400, "Bad Request: message is too long")
        markup = _reply_markup(params)
        with self._lock:
            self._refuse_if_forbidden(chat_id)
            message = self._record_outgoing(chat_id, {"text": text}, params, markup)
            self._sent.append({"chat_id": chat_id, "text": text, "message_id": message["message_id"]})
            return json.loads(json.dumps(message))

    def _send_message_draft(self, params: dict[str, Any]) -> bool:
        """A partial message streamed to a user: chat_id (a private chat), draft_id (non-zero), text, and optional
        message_thread_id, parse_mode, entities. Changes of one draft_id are animated; nothing is stored as a
        message (the bot sends the final one with sendMessage)."""
        chat_id, text = chat_id_param(params), str(params.get("text") or "")
        try:
            draft_id = int(params.get("draft_id") or 0)
        except (TypeError, ValueError):
            draft_id = 0
        if draft_id == 0:
            raise TelegramApiError(400, "Bad Request: draft_id must be non-zero")
        if not text.strip():
            raise TelegramApiError(400, "Bad Request: text must be non-empty")
        if utf16_len(text) > TEXT_LIMIT:
            raise TelegramApiError(400, "Bad Request: TEXT_TOO_LONG")
        if not isinstance(chat_id, int) or chat_id <= 0:
            raise TelegramApiError(400, "Bad Request: draft can be sent only to private chats")
        with self._lock:
            self._refuse_if_forbidden(chat_id)
            self._drafts.append({"chat_id": chat_id, "draft_id": draft_id, "text": text,
                                 "message_thread_id": params.get("message_thread_id"),
                                 "entities": _json_value(params.get("entities")), "at": time.monotonic()})
        return True

    def _get_chat_member(self, params: dict[str, Any]) -> dict[str, Any]:
        chat_id, user_id = chat_id_param(params), int(params.get("user_id") or 0)
        with self._lock:
            user = self._users.get(user_id)
            status = self._statuses.get((chat_id, user_id), "member" if user is not None else None)
        if user is None or status is None:
            raise TelegramApiError(400, "Bad Request: user not found")
        member: dict[str, Any] = {"status": status, "user": user}
        if status == "administrator":
            member |= {"can_be_edited": False, "is_anonymous": False, "can_manage_chat": True,
                       "can_delete_messages": True, "can_manage_video_chats": True, "can_restrict_members": True,
                       "can_promote_members": False, "can_change_info": True, "can_invite_users": True,
                       "can_post_stories": False, "can_edit_stories": False, "can_delete_stories": False}
        elif status == "creator":
            member |= {"is_anonymous": False}
        return member

    def _delete_message(self, params: dict[str, Any]) -> bool:
        chat_id, message_id = chat_id_param(params), int(params.get("message_id") or 0)
        with self._lock:
            if self._messages.pop((chat_id, message_id), None) is None:
                raise TelegramApiError(400, "Bad Request: message to delete not found")
            self._outgoing = [key for key in self._outgoing if key != (chat_id, message_id)]
        return True

    def _send_document(self, params: dict[str, Any]) -> dict[str, Any]:
        chat_id, upload = chat_id_param(params), params.get("document")
        if isinstance(upload, str) and upload.startswith("attach://"):
            upload = params.get(upload.removeprefix("attach://"))
        caption = str(params.get("caption") or "")
        if utf16_len(caption) > CAPTION_LIMIT:
            raise TelegramApiError(400, "Bad Request: message caption is too long")
        with self._lock:
            self._refuse_if_forbidden(chat_id)
            if isinstance(upload, _Upload):
                stored = self._store_file(upload.data, upload.filename or "document",
                                          upload.content_type or "application/octet-stream")
            elif isinstance(upload, str) and upload in self._files:
                stored = self._files[upload]
            else:
                raise TelegramApiError(400, "Bad Request: there is no document in the request")
            body: dict[str, Any] = {"document": dict(stored.document)}
            if caption:
                body["caption"] = caption
            message = self._record_outgoing(chat_id, body, params, _reply_markup(params))
            self._documents.append({"chat_id": chat_id, "message_id": message["message_id"],
                                    "file_name": stored.document["file_name"], "caption": caption or None,
                                    "mime_type": stored.document["mime_type"], "data": stored.data})
            return json.loads(json.dumps(message))

    def _edit_message_text(self, params: dict[str, Any]) -> dict[str, Any]:
        text = str(params.get("text") or "")
        if not text.strip():
            raise TelegramApiError(400, "Bad Request: message text is empty")
        if utf16_len(text) > TEXT_LIMIT:
            raise TelegramApiError(400, "Bad Request: MESSAGE_TOO_LONG")
        return self._edit(params, {"text": text, "entities": _json_value(params.get("entities")) or None})

    def _edit_message_reply_markup(self, params: dict[str, Any]) -> dict[str, Any]:
        return self._edit(params, {})

    def _edit(self, params: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
        """Edits replace the inline keyboard: an edit without ``reply_markup`` removes it, as on Telegram."""
        chat_id, message_id = chat_id_param(params), int(params.get("message_id") or 0)
        changes["reply_markup"] = _reply_markup(params)
        with self._lock:
            message = self._messages.get((chat_id, message_id))
            if message is None:
                raise TelegramApiError(400, "Bad Request: message to edit not found")
            if all(message.get(key) == value for key, value in changes.items()):
                raise TelegramApiError(400, "Bad Request: message is not modified: specified new message "
                                            "content and reply markup are exactly the same as a current "
                                            "content and reply markup of the message")
            for key, value in changes.items():
                if value is None:
                    message.pop(key, None)
                else:
                    message[key] = value
            message["edit_date"] = int(time.time())
            return json.loads(json.dumps(message))

    def _answer_callback_query(self, params: dict[str, Any]) -> bool:
        query_id = str(params.get("callback_query_id") or "")
        with self._lock:
            if query_id not in self._open_queries:
                raise TelegramApiError(400, "Bad Request: query is too old and response timeout expired or "
                                            "query ID is invalid")
            self._open_queries.discard(query_id)
            self._answers.append({"callback_query_id": query_id, "text": params.get("text"),
                                  "show_alert": _json_value(params.get("show_alert")) is True})
        return True

    def _send_chat_action(self, params: dict[str, Any]) -> bool:
        chat_id = chat_id_param(params)
        with self._lock:
            self._actions.append({"chat_id": chat_id, "action": params.get("action")})
        return True

    def _get_file(self, params: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            stored = self._files.get(str(params.get("file_id") or ""))
        if stored is None:
            raise TelegramApiError(400, "Bad Request: invalid file_id")
        if len(stored.data) > DOWNLOAD_LIMIT:
            raise TelegramApiError(400, "Bad Request: file is too big")
        return {"file_id": stored.document["file_id"], "file_unique_id": stored.document["file_unique_id"],
                "file_size": len(stored.data), "file_path": stored.path}

    def _set_my_commands(self, params: dict[str, Any]) -> bool:
        commands = _json_value(params.get("commands"))
        if not isinstance(commands, list) or len(commands) > 100:
            raise TelegramApiError(400, "Bad Request: commands must be an array of at most 100 commands")
        for command in commands:
            name, description = str(command.get("command", "")), str(command.get("description", ""))
            if not re.fullmatch(r"[a-z0-9_]{1,32}", name) or not 1 <= len(description) <= 256:
                raise TelegramApiError(400, f"Bad Request: BOT_COMMAND_INVALID ({name!r})")
        with self._lock:
            self._commands[self._menu_key(params)] = [dict(c) for c in commands]
        return True

    def _get_my_commands(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(c) for c in self._commands.get(self._menu_key(params), [])]

    def _delete_my_commands(self, params: dict[str, Any]) -> bool:
        with self._lock:
            self._commands.pop(self._menu_key(params), None)
        return True

    @staticmethod
    def _menu_key(params: dict[str, Any]) -> tuple[str, str]:
        scope = _json_value(params.get("scope")) or {"type": "default"}
        return str(scope.get("type", "default")), str(params.get("language_code") or "")

    def _refuse_if_forbidden(self, chat_id: int | str) -> None:
        if chat_id in self._forbidden:
            raise TelegramApiError(403, self._forbidden[chat_id])
        if chat_id in self._migrated:
            raise TelegramApiError(400, "Bad Request: group chat was upgraded to a supergroup chat",
                                   {"migrate_to_chat_id": self._migrated[chat_id]})

    def _record_outgoing(self, chat_id: int | str, body: dict[str, Any], params: dict[str, Any],
                         markup: dict[str, Any] | None) -> dict[str, Any]:
        """Store the bot's message (caller holds the lock) and return it."""
        message: dict[str, Any] = {"message_id": self._next_message_id(chat_id), "date": int(time.time()),
                                   "chat": dict(self._chats.get(chat_id) or chat_object(chat_id)),
                                   "from": dict(self.bot_user), **body}
        entities = _json_value(params.get("entities"))
        if entities:
            message["entities"] = entities
        if markup is not None:
            message["reply_markup"] = markup
        reply = _json_value(params.get("reply_parameters")) or {}
        reply_to = reply.get("message_id") or params.get("reply_to_message_id")
        if reply_to and (chat_id, int(reply_to)) in self._messages:
            message["reply_to_message"] = dict(self._messages[(chat_id, int(reply_to))])
            message["reply_to_message"].pop("reply_to_message", None)
        self._messages[(chat_id, message["message_id"])] = message
        self._outgoing.append((chat_id, message["message_id"]))
        return message

    def _store_file(self, data: bytes, file_name: str, mime_type: str) -> _StoredFile:
        number = len(self._files) + 1
        document: dict[str, Any] = {"file_id": f"BQACAgIAAx{number:06d}", "file_unique_id": f"AgAD{number:06d}",
                                    "file_name": file_name, "mime_type": mime_type, "file_size": len(data)}
        stored = _StoredFile(document, bytes(data), f"documents/file_{number}{_extension(file_name)}")
        self._files[document["file_id"]] = stored
        return stored


@dataclass(frozen=True)
class _Upload:
    """A file part of a multipart request."""

    filename: str | None
    content_type: str | None
    data: bytes


CONFLICT = "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"
WEBHOOK_ACTIVE = ("Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the "
                  "webhook first")


def _photo_size(document: dict[str, Any], width: int, height: int) -> dict[str, Any]:
    return {"file_id": document["file_id"], "file_unique_id": document["file_unique_id"],
            "file_size": document["file_size"], "width": width, "height": height}


def sticker_object(emoji: str | None, *, number: int = 1) -> dict[str, Any]:
    """A sticker as the Bot API sends it (a regular static one; its file is never needed)."""
    sticker = {"file_id": f"CAACAgIAAx{number:06d}", "file_unique_id": f"AgADst{number:04d}", "type": "regular",
               "width": 512, "height": 512, "is_animated": False, "is_video": False, "file_size": 20480}
    return sticker | ({"emoji": emoji} if emoji else {})


def user_object(user_id: int, first_name: str = "User", *, username: str | None = None,
                language_code: str | None = None) -> dict[str, Any]:
    """A User as the Bot API sends it."""
    user: dict[str, Any] = {"id": user_id, "is_bot": False, "first_name": first_name}
    if username:
        user["username"] = username
    if language_code:
        user["language_code"] = language_code
    return user


def utf16_len(text: str) -> int:
    """Length as Telegram measures texts (UTF-16 code units: an emoji outside the BMP counts twice)."""
    return len(text.encode("utf-16-le")) // 2


def chat_id_param(params: dict[str, Any]) -> int | str:
    """The ``chat_id`` parameter as Telegram reads it: an integer, or an ``@username``."""
    value = params.get("chat_id")
    if isinstance(value, int) or (isinstance(value, str) and re.fullmatch(r"-?\d+", value)):
        return int(value)
    if isinstance(value, str) and value.startswith("@"):
        return value
    raise TelegramApiError(400, "Bad Request: chat not found" if value else "Bad Request: chat_id is empty")


def chat_object(chat_id: int | str, title: str = "Group") -> dict[str, Any]:
    """A Chat as the Bot API returns it: private for positive ids, (super)group for negative ones."""
    if isinstance(chat_id, str):
        return {"id": -1000000000001, "type": "channel", "username": chat_id[1:], "title": chat_id[1:]}
    if chat_id > 0:
        return {"id": chat_id, "type": "private", "first_name": "User"}
    kind = "supergroup" if str(chat_id).startswith("-100") else "group"
    return {"id": chat_id, "type": kind, "title": title}


def _command_entity(text: str | None) -> list[dict[str, Any]]:
    """The ``bot_command`` entity Telegram adds to a text starting with a command (``/cmd@bot``)."""
    found = re.match(r"/[A-Za-z0-9_]{1,32}(@[A-Za-z0-9_]{3,32})?", text or "")
    return [{"type": "bot_command", "offset": 0, "length": len(found.group(0))}] if found else []


def _reply_markup(params: dict[str, Any]) -> dict[str, Any] | None:
    markup = _json_value(params.get("reply_markup"))
    if markup is None:
        return None
    for row in markup.get("inline_keyboard", []):
        for button in row:
            if len(str(button.get("callback_data", "")).encode()) > CALLBACK_DATA_LIMIT:
                raise TelegramApiError(400, "Bad Request: BUTTON_DATA_INVALID")
    return markup


def _json_value(value: Any) -> Any:
    """A parameter that may arrive JSON-encoded in a form field (``"true"``, ``'{"inline_keyboard": …}'``)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _extension(file_name: str) -> str:
    found = re.search(r"\.[A-Za-z0-9]{1,8}$", file_name)
    return found.group(0) if found else ""


def _params(query: str, content_type: str, raw: bytes) -> dict[str, Any]:
    """Query-string, form, multipart and JSON parameters merged (JSON wins); unreadable bodies add nothing."""
    params: dict[str, Any] = dict(parse_qsl(query))
    if raw and content_type.startswith("application/x-www-form-urlencoded"):
        params.update(parse_qsl(raw.decode("utf-8", "replace")))
    elif raw and content_type.startswith("multipart/form-data"):
        params.update(_multipart(content_type, raw))
    elif raw and content_type.startswith("application/json"):
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if isinstance(body, dict):
            params.update(body)
    return params


def _multipart(content_type: str, raw: bytes) -> dict[str, Any]:
    """The fields of a multipart/form-data body: text values as strings, files as :class:`_Upload`."""
    message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
    fields: dict[str, Any] = {}
    if not message.is_multipart():
        return fields
    for part in message.iter_parts():
        assert isinstance(part, MimeMessage)
        name = part.get_param("name", header="content-disposition")
        decoded = part.get_payload(decode=True)
        payload = decoded if isinstance(decoded, bytes) else b""  # None for a part that is itself multipart
        if not isinstance(name, str):
            continue
        filename = part.get_filename()
        if filename is not None or part.get_content_type() not in ("text/plain",):
            fields[name] = _Upload(filename, part.get_content_type(), payload)
        else:
            fields[name] = payload.decode("utf-8", "replace")
    return fields


def _error(status: int, description: str, parameters: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
    if parameters:
        body["parameters"] = parameters
    return status, body
