"""The platforms' outgoing REST APIs, as workers use them to ping users with reminders.

Plain synchronous httpx, no discord.py or python-telegram-bot (those belong to the bot processes).
Requests go only to the configured base URL: redirects are not followed and proxy variables are
ignored, and every call has a bounded timeout. Each sender turns the platform's answer into the
contract of :mod:`shared.reminders.service`:

- ``RetryLater`` for 429, 5xx and network failures, with the wait the platform asked for (Telegram's
  ``parameters.retry_after``, Discord's JSON ``retry_after`` or the ``Retry-After`` header);
- ``SenderMisconfigured`` when the token or the endpoint is rejected (401, Telegram's 404, a redirect);
- ``DeliveryRefused`` when this chat cannot be reached (403 blocked or kicked, 400 chat not found,
  404 unknown channel);
- ``ChatMoved`` when Telegram says the group became a supergroup (``parameters.migrate_to_chat_id``).

Console reminders have no platform to call. The ``ConsoleSender`` writes them to the worker's log,
and the todo is marked sent. The console shows them between prompts
(``shared.reminders.service.console_reminders_sent_since``).
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx

from shared.delivery.limits import DISCORD_CONTENT_LIMIT, TELEGRAM_TEXT_LIMIT
from shared.metrics import record
from shared.reminders.service import (
    ChatMoved,
    DeliveryRefused,
    ReminderSender,
    ReminderTarget,
    RetryLater,
    SenderMisconfigured,
)
from shared.settings import Settings

if TYPE_CHECKING:
    from limits.storage import Storage

log = logging.getLogger(__name__)

HTTP_TIMEOUT_SECONDS = 10.0
DEFAULT_RETRY_SECONDS = 5.0
MAX_RETRY_SECONDS = 3600.0
DISCORD_NONCE_LIMIT = 25
DISCORD_USER_AGENT = "DiscordBot (https://github.com/mnemo-bot/mnemo, 0.1.0)"
_SNOWFLAKE = re.compile(r"\d{1,20}")
_NUMERIC_CHAT_ID = re.compile(r"-?\d+")


def _client(timeout: float) -> httpx.Client:
    return httpx.Client(timeout=timeout, follow_redirects=False, trust_env=False)


def _post(http: httpx.Client, platform: str, url: str, payload: dict[str, Any], headers: dict[str, str] | None = None,
          ) -> tuple[httpx.Response, dict[str, Any]]:
    """POST JSON; a network failure means "try again later". Returns the response and its JSON object; every
    failure is counted in the metrics."""
    try:
        response = http.post(url, json=payload, headers=headers)
    except httpx.TransportError as exc:  # refused, reset, timed out, dropped without an answer
        record.platform_api_error(platform, None)
        raise RetryLater(DEFAULT_RETRY_SECONDS, f"network error: {type(exc).__name__}") from exc
    if not response.is_success:
        record.platform_api_error(platform, response.status_code)
    try:
        body = response.json()
    except ValueError:
        body = None
    return response, body if isinstance(body, dict) else {}


def _wait_seconds(*candidates: object) -> float:
    """The first candidate that is a non-negative number of seconds, else the default wait."""
    for value in candidates:
        if not isinstance(value, int | float | str):  # a JSON null, list or object; a missing header
            continue
        try:
            seconds = float(value)
        except ValueError:
            continue
        if seconds >= 0:  # NaN is not
            return min(seconds, MAX_RETRY_SECONDS)
    return DEFAULT_RETRY_SECONDS


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def discord_nonce(idempotency_key: str) -> str:
    """Discord's ``nonce`` (at most 25 characters) for an idempotency key, the same every time."""
    if len(idempotency_key) <= DISCORD_NONCE_LIMIT:
        return idempotency_key
    return hashlib.sha256(idempotency_key.encode()).hexdigest()[:DISCORD_NONCE_LIMIT]


class TelegramSender:
    """``sendMessage`` through the Bot API at ``{base_url}{token}/sendMessage``."""

    def __init__(self, base_url: str, token: str, http: httpx.Client | None = None, *,
                 timeout: float = HTTP_TIMEOUT_SECONDS) -> None:
        self._url = f"{base_url}{token}/sendMessage"
        self._http = http or _client(timeout)

    def send(self, target: ReminderTarget, text: str, *, idempotency_key: str) -> None:
        """Post ``text`` to the chat the reminder was asked in (a group too), with no mention added."""
        del idempotency_key  # the Bot API has no idempotency key (see shared.reminders.service)
        chat_id: int | str = target.platform_chat_id
        if _NUMERIC_CHAT_ID.fullmatch(target.platform_chat_id):
            chat_id = int(target.platform_chat_id)
        payload = {"chat_id": chat_id, "text": _truncate(text, TELEGRAM_TEXT_LIMIT)}
        response, body = _post(self._http, "telegram", self._url, payload)
        status = response.status_code
        if response.is_success:
            return
        description = f"telegram {status}: {body.get('description') or response.reason_phrase}"
        given = body.get("parameters")
        parameters: dict[str, Any] = given if isinstance(given, dict) else {}
        if status == 429 or status >= 500:
            wait = _wait_seconds(parameters.get("retry_after"), response.headers.get("Retry-After"))
            raise RetryLater(wait, description)
        if status in (401, 404) or response.is_redirect:
            raise SenderMisconfigured(description)
        moved_to = parameters.get("migrate_to_chat_id")
        if status == 400 and isinstance(moved_to, int) and not isinstance(moved_to, bool):
            raise ChatMoved(str(moved_to), description)
        raise DeliveryRefused(description)

    def close(self) -> None:
        self._http.close()


class DiscordSender:
    """Messages through Discord's REST API: a DM to a private chat, a mention in a guild channel."""

    def __init__(self, base_url: str, token: str, http: httpx.Client | None = None, *,
                 timeout: float = HTTP_TIMEOUT_SECONDS) -> None:
        self._base_url = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bot {token}", "User-Agent": DISCORD_USER_AGENT}
        self._http = http or _client(timeout)
        self._dm_channels: dict[str, str] = {}
        self._lock = threading.Lock()

    def send(self, target: ReminderTarget, text: str, *, idempotency_key: str) -> None:
        """Post once per idempotency key: Discord returns the earlier message for a repeated nonce."""
        user_id = _snowflake(target.platform_user_id, "user") if target.platform_user_id else None
        mentions: dict[str, list[str]]
        if target.chat_kind == "private":
            if user_id is None:
                raise DeliveryRefused("discord: a direct message needs the user's Discord id")
            channel_id, content, mentions = self._dm_channel(user_id), text, {"parse": []}
        else:
            channel_id = _snowflake(target.platform_chat_id, "channel")
            content = f"<@{user_id}> {text}" if user_id else text
            mentions = {"parse": [], "users": [user_id] if user_id else []}
        payload = {"content": _truncate(content, DISCORD_CONTENT_LIMIT), "allowed_mentions": mentions,
                   "nonce": discord_nonce(idempotency_key), "enforce_nonce": True}
        self._call(f"/channels/{channel_id}/messages", payload)

    def _dm_channel(self, user_id: str) -> str:
        """The DM channel with this user, created (or fetched) once and remembered."""
        with self._lock:
            known = self._dm_channels.get(user_id)
        if known is not None:
            return known
        channel = self._call("/users/@me/channels", {"recipient_id": user_id})
        channel_id = _snowflake(str(channel.get("id", "")), "channel")
        with self._lock:
            self._dm_channels[user_id] = channel_id
        return channel_id

    def _call(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        response, body = _post(self._http, "discord", self._base_url + path, payload, self._headers)
        status = response.status_code
        if response.is_success:
            return body
        description = f"discord {status}: {body.get('message') or response.reason_phrase} (code {body.get('code')})"
        if status == 429 or status >= 500:
            raise RetryLater(_wait_seconds(body.get("retry_after"), response.headers.get("Retry-After")), description)
        if status == 401 or response.is_redirect:
            raise SenderMisconfigured(description)
        raise DeliveryRefused(description)

    def close(self) -> None:
        self._http.close()


def _snowflake(value: str | None, what: str) -> str:
    """A Discord id, checked to be digits, so it is safe inside a URL path."""
    if value is None or not _SNOWFLAKE.fullmatch(value):
        raise DeliveryRefused(f"discord: {value!r} is not a {what} id")
    return value


class ConsoleSender:
    """Console reminders: written to ``write`` (default: this process's log); nothing can refuse them."""

    def __init__(self, write: Callable[[str], None] | None = None) -> None:
        self._write = write or _log_console_reminder

    def send(self, target: ReminderTarget, text: str, *, idempotency_key: str) -> None:
        self._write(f"[console {target.platform_chat_id}] {text}")


def _log_console_reminder(line: str) -> None:
    """The reminder's words only at DEBUG, as everything users wrote (the console reads them from the database)."""
    log.info("a console reminder was delivered")
    log.debug("%s", line)


def senders_from_settings(settings: Settings, storage: Storage | None = None) -> dict[str, ReminderSender]:
    """A sender for each platform that has a token, plus the console; with ``storage`` (the shared rate
    limits'), each platform's sends keep its pace across every worker (:mod:`shared.delivery.pacing`)."""
    senders: dict[str, ReminderSender] = {"console": ConsoleSender()}
    if settings.telegram_token is not None:
        senders["telegram"] = TelegramSender(settings.telegram_api_base_url,
                                             settings.telegram_token.get_secret_value())
    if settings.discord_token is not None:
        senders["discord"] = DiscordSender(settings.discord_api_base_url, settings.discord_token.get_secret_value())
    if storage is not None:
        from shared.delivery.pacing import PacedSender

        for platform in ("telegram", "discord"):
            if platform in senders:
                senders[platform] = PacedSender(senders[platform], platform, storage)
    return senders
