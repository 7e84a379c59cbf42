"""Mnemo's configuration: one typed object read from the environment and ``.env``.

Every variable is documented in ``.env.example``. A wrong value stops start-up with a
:class:`~shared.errors.ConfigError` that names the variable, never with a traceback.
"""

from __future__ import annotations

import ipaddress
import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, SecretStr, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from shared.access.config import AccessSettings
from shared.errors import ConfigError
from shared.redaction import mask_secret, mask_url, url_secrets

PLACEHOLDER_SECRETS = frozenset({"changeme", "change-me", "your-token-here", "xxx", "todo"})
SECRET_FIELDS = ("llm_api_key", "transcription_api_key", "discord_token", "telegram_token", "telegram_webhook_secret",
                 "database_url", "redis_url", "admin_token", "log_hash_key")
MIN_ADMIN_TOKEN_CHARS = 24
MIN_WEBHOOK_SECRET_CHARS = 16
MIN_LOG_HASH_KEY_CHARS = 16
WEBHOOK_SECRET = re.compile(r"[A-Za-z0-9_-]{1,256}")
"""What Telegram accepts as a webhook's secret_token (setWebhook)."""
MIN_PROMPT_TOKENS = 512
"""``LLM_CONTEXT_TOKENS`` leaves at least this much room for a prompt beside ``LLM_MAX_OUTPUT_TOKENS``."""
DEFAULT_API_MAX_BODY_BYTES = 6 * 1024 * 1024
"""Above the largest import file (5 MiB) with room for its multipart wrapping."""


class Settings(AccessSettings, BaseSettings):
    """Everything a Mnemo process needs to know, with the defaults of the embedded setup (the access lists
    and operators in :class:`~shared.access.config.AccessSettings`)."""

    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    database_url: str | None = Field(None, description="PostgreSQL URL; unset = embedded PostgreSQL")
    database_prepared_statements: bool = Field(
        True, description="prepare statements the bots and workers send often (still planned for each call); "
                          "false behind a pooler in transaction mode (PgBouncer), which shares server connections")
    redis_url: str | None = Field(None, description="Celery broker; unset = the same PostgreSQL")
    llm_base_url: str | None = Field(None, description="OpenAI-compatible endpoint; unset = offline")
    llm_api_key: SecretStr | None = None
    llm_model: str = "gpt-4o-mini"
    llm_timeout_seconds: Annotated[float, Field(gt=0, le=600)] = 30.0
    llm_output_mode: Literal["auto", "json_schema", "json_object", "text"] = "auto"
    llm_system_role: Literal["system", "user"] = Field(
        "system", description="where the instructions go: a system message, or the head of the first user message "
                              "for a server whose chat template drops system messages (llama-cpp-python's gemma)")
    llm_vision: Literal["auto", "on", "off"] = Field(
        "auto", description="send photos to the model as image parts: auto (until the server refuses one), on, off")
    stream_replies: Literal["auto", "off"] = Field(
        "auto", description="show the model's reply as it is written: Telegram drafts in private chats, a message "
                            "edited at most once a second in groups and on Discord, the console as it comes; off")
    llm_max_output_tokens: Annotated[int, Field(ge=64, le=32768)] = 1024
    llm_context_tokens: Annotated[int, Field(ge=512, le=10_000_000)] = 8192
    llm_server_slots: Annotated[int | None, Field(ge=0, le=1024)] = Field(
        None, description="requests the model server runs at once, shared by bots and workers (background calls "
                          "yield to users' turns); unset = 1 for a server on this machine, none otherwise; 0 = none")
    """The most a turn's prompt and its reply may take together; the server's own context window when it reports
    a smaller one (llama.cpp's /props, vLLM's model list, or a refusal of a prompt that was too long)."""
    llm_extra_body: Annotated[dict[str, Any], NoDecode] = Field(
        default_factory=dict, description="JSON object added to every LLM request, e.g. {\"enable_thinking\": false}")
    llm_daily_tokens_per_user: Annotated[int | None, Field(ge=1)] = Field(
        None, description="tokens a user may spend a UTC day; past it, offline replies and background work waits")
    llm_daily_tokens_per_chat: Annotated[int | None, Field(ge=1)] = Field(
        None, description="tokens a group chat may spend a UTC day, every member together")
    llm_price_input_per_mtok: Annotated[float | None, Field(ge=0)] = None
    llm_price_cached_input_per_mtok: Annotated[float | None, Field(ge=0)] = None
    llm_price_output_per_mtok: Annotated[float | None, Field(ge=0)] = None
    llm_price_currency: Annotated[str, Field(min_length=1, max_length=8)] = "USD"
    transcription_base_url: str | None = Field(
        None, description="OpenAI-compatible /audio/transcriptions endpoint for voice notes; unset = not heard")
    transcription_model: str = "whisper-1"
    transcription_api_key: SecretStr | None = None
    embedding_base_url: str | None = None
    embedding_model: str | None = None
    embedding_dimensions: Annotated[int, Field(ge=1, le=16000)] = 384
    discord_token: SecretStr | None = None
    discord_api_base_url: str = "https://discord.com/api/v10"
    telegram_token: SecretStr | None = None
    telegram_api_base_url: str = "https://api.telegram.org/bot"
    telegram_webhook_secret: SecretStr | None = None
    bot_name: Annotated[str, Field(min_length=1, max_length=40)] = "Mnemo"
    bot_personality: Annotated[str, Field(max_length=1000)] = (
        "a warm, curious companion who remembers what matters to people and speaks like a friend"
    )
    use_memory_emotion_system: bool = True
    memory_retrieval_limit: Annotated[int, Field(ge=1, le=100)] = 5
    memory_context_tokens: Annotated[int, Field(ge=100, le=8000)] = 700
    history_turns: Annotated[int, Field(ge=0, le=100)] = 15
    memory_eviction_threshold: Annotated[int | None, Field(ge=1)] = None
    conversation_retention_days: Annotated[int | None, Field(ge=1, le=36_500)] = None
    """Rounds of conversation said more than this many days ago are deleted by the daily decay; unset (or "off"):
    kept while the account lives."""
    session_idle_minutes: Annotated[int, Field(ge=1, le=24 * 60)] = 30
    database_patience_seconds: Annotated[float, Field(ge=0, le=24 * 3600)] = 600.0
    """How long a message is kept and retried while the database cannot be reached."""
    message_rate_per_user: str | None = "20/minute"
    """Messages one user may have answered by the model (``limits`` notation, e.g. "20/minute"; "off": none);
    past it the offline responder answers with a notice. Shared by every bot replica (Redis or PostgreSQL)."""
    command_write_rate_per_user: str | None = "20/minute"
    """Commands one user may run that write what is remembered (/remember, /remind, import; ``limits`` notation;
    "off": none); past it the command is refused with how long to wait. Shared by every replica."""
    turn_llm_concurrency: Annotated[int, Field(ge=1, le=4096)] = 64
    """Turns of one bot process in the LLM call at once; the next ones queue (back-pressure)."""
    turn_queue_limit: Annotated[int, Field(ge=0, le=100_000)] = 256
    """Turns waiting for the model at most; past it a turn is answered offline at once."""
    turn_busy_notice_seconds: Annotated[float, Field(ge=0, le=600)] = 8.0
    """A turn waiting this long for the model tells its user "busy, one moment" (once)."""
    turn_queue_seconds: Annotated[float, Field(ge=0, le=3600)] = 30.0
    """A turn waiting this long for the model is answered offline (its message is kept)."""
    default_timezone: str = "UTC"
    """The time zone of users who have not set theirs (``/timezone``, the panel, or saying where they are)."""
    deadline_heads_up_minutes: Annotated[int, Field(ge=0, le=7 * 24 * 60)] = 60
    """A to-do with a deadline ("周五下午五点前交报告", "due Friday 5pm") pings this long before it."""
    followup_quiet_hours: Annotated[str, Field(pattern=r"^\s*([01]?\d|2[0-3])\s*-\s*([01]?\d|2[0-3])\s*$")] = "22-9"
    """Local hours with no follow-up for users who set none of their own (``/followups quiet 23-8``): from-until."""
    followup_after_minutes: Annotated[int, Field(ge=0, le=7 * 24 * 60)] = 180
    """A follow-up may go this long after its thread's time (a day-only thread: from 18:00 that day)."""
    daily_maintenance_hour_utc: Annotated[int, Field(ge=0, le=23)] = 3
    reminder_scan_seconds: Annotated[float, Field(ge=1, le=3600)] = 60.0
    reminder_lease_seconds: Annotated[float, Field(ge=5, le=86400)] = 300.0
    outbox_redispatch_seconds: Annotated[float, Field(ge=0, le=86400)] = 120.0
    extraction_batch_turns: Annotated[int, Field(ge=1, le=10)] = 10
    """The knowledge monitor reads a sitting once this many of its turns wait (1: every turn at once)."""
    extraction_max_delay_minutes: Annotated[float, Field(ge=0, le=24 * 60)] = 15.0
    """... or once the oldest waiting turn is this old; the rest when the sitting goes idle and closes."""
    outbox_claim_seconds: Annotated[float, Field(ge=1, le=3600)] = 60.0
    """A worker's claim on the job it runs; renewed every third of it while the worker lives."""
    worker_concurrency: Annotated[int, Field(ge=1, le=64)] = 2
    """Prefork processes per ``mnemo worker`` for reminders and the CPU-bound jobs (dedup, decay, reindexing)."""
    worker_llm_concurrency: Annotated[int, Field(ge=1, le=256)] = 16
    """Threads per ``mnemo worker`` for the jobs that wait on the model (extraction, episode summaries, reviews):
    at most this many of its model calls in flight (``LLM_SERVER_SLOTS`` still bounds a local server's)."""
    metrics_host: str = "127.0.0.1"
    metrics_port: Annotated[int | None, Field(ge=0, le=65535)] = Field(
        None, description="each process's /metrics, /livez and /readyz; unset = none, 0 = any free port (logged)")
    api_host: str = "127.0.0.1"
    api_port: Annotated[int, Field(ge=0, le=65535)] = 8080  # 0: a free port, logged when uvicorn listens
    api_max_body_bytes: Annotated[int, Field(ge=64 * 1024, le=1024**3)] = DEFAULT_API_MAX_BODY_BYTES
    trusted_proxies: Annotated[tuple[str, ...], NoDecode] = Field(
        (), description="addresses/CIDRs of reverse proxies whose X-Forwarded-For is believed; empty = none")
    panel_public_url: str = Field("http://127.0.0.1:8080", description="where browsers reach `mnemo api`")
    panel_link_minutes: Annotated[int, Field(ge=1, le=24 * 60)] = 10
    panel_session_hours: Annotated[int, Field(ge=1, le=24 * 30)] = 12
    admin_token: SecretStr | None = Field(None, description="operators' bearer token for the API; unset = none")
    mnemo_data_dir: Path = Path("~/.local/share/mnemo")
    log_level: str = "INFO"
    log_format: Literal["text", "json"] = Field("text", description="text: lines for people; json: one object a line")
    log_hash_key: SecretStr | None = Field(None, description="key of the user hash in logs; unset = derived from "
                                                             "the other secrets")

    @field_validator("llm_context_tokens")
    @classmethod
    def _room_for_a_prompt(cls, value: int, info: ValidationInfo) -> int:
        reply = info.data.get("llm_max_output_tokens")
        if isinstance(reply, int) and value < reply + MIN_PROMPT_TOKENS:
            raise ValueError(f"must leave room for a prompt beside LLM_MAX_OUTPUT_TOKENS ({reply}): at least "
                             f"{reply + MIN_PROMPT_TOKENS}")
        return value

    @field_validator("memory_eviction_threshold", "conversation_retention_days", "llm_daily_tokens_per_user",
                     "llm_daily_tokens_per_chat", "message_rate_per_user", "command_write_rate_per_user",
                     mode="before")
    @classmethod
    def _off_means_none(cls, value: object) -> object:
        if isinstance(value, str) and value.strip().lower() in {"", "off", "none", "0"}:
            return None
        return value

    @field_validator(
        "database_url", "redis_url", "llm_base_url", "embedding_base_url", "embedding_model", "metrics_port",
        "transcription_base_url",
        "llm_price_input_per_mtok", "llm_price_cached_input_per_mtok", "llm_price_output_per_mtok",
        mode="before",
    )
    @classmethod
    def _blank_means_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("message_rate_per_user", "command_write_rate_per_user")
    @classmethod
    def _a_rate(cls, value: str | None) -> str | None:
        if value is not None:
            from limits import parse

            try:
                parse(value)
            except ValueError:
                raise ValueError(f"{value!r} is not a rate such as 20/minute or 5 per 10 seconds (or off)") from None
        return value

    @field_validator("llm_extra_body", mode="before")
    @classmethod
    def _json_object(cls, value: object) -> object:
        if isinstance(value, str):
            if not value.strip():
                return {}
            try:
                value = json.loads(value)
            except ValueError as exc:
                raise ValueError(f"must be a JSON object ({exc})") from None
        if not isinstance(value, dict):
            raise ValueError("must be a JSON object, e.g. {\"enable_thinking\": false}")
        return value

    @field_validator("database_url")
    @classmethod
    def _postgres_only(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("postgresql", "postgres://")):
            raise ValueError("must be a postgresql:// URL")
        return value

    @field_validator("redis_url")
    @classmethod
    def _redis_scheme(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must be a redis://, rediss:// or unix:// URL")
        return value

    @model_validator(mode="after")
    def _panel_follows_the_api_port(self) -> Settings:
        """Unset, the panel's address is the API's own on this machine: ``API_PORT=8090`` moves the /panel links too."""
        if "panel_public_url" not in self.model_fields_set and self.api_port:
            self.panel_public_url = f"http://127.0.0.1:{self.api_port}"
        return self

    @field_validator("llm_base_url", "embedding_base_url", "discord_api_base_url", "telegram_api_base_url",
                     "transcription_base_url",
                     "panel_public_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value.rstrip("/") if value else value

    @field_validator("llm_api_key", "transcription_api_key", "discord_token", "telegram_token",
                     "telegram_webhook_secret", "admin_token",
                     "log_hash_key")
    @classmethod
    def _no_placeholder(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value().strip():
            return None
        if value.get_secret_value().strip().lower() in PLACEHOLDER_SECRETS:
            raise ValueError("is still the placeholder from .env.example; set the real secret or leave it empty")
        return value

    @field_validator("admin_token", "log_hash_key")
    @classmethod
    def _long_secret(cls, value: SecretStr | None, info: ValidationInfo) -> SecretStr | None:
        shortest = MIN_ADMIN_TOKEN_CHARS if info.field_name == "admin_token" else MIN_LOG_HASH_KEY_CHARS
        if value is not None and len(value.get_secret_value().strip()) < shortest:
            raise ValueError(f"must be at least {shortest} characters (try: openssl rand -hex 32)")
        return value

    @field_validator("telegram_webhook_secret")
    @classmethod
    def _telegram_webhook_secret(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None:
            return None
        if not WEBHOOK_SECRET.fullmatch(value.get_secret_value()):
            raise ValueError("must be 1-256 characters of A-Z, a-z, 0-9, _ and - only (Telegram's rule; "
                             "try: openssl rand -hex 32)")
        if len(value.get_secret_value()) < MIN_WEBHOOK_SECRET_CHARS:
            raise ValueError(f"must be at least {MIN_WEBHOOK_SECRET_CHARS} characters (try: openssl rand -hex 32)")
        return value

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _proxy_networks(cls, value: object) -> object:
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list | tuple):
            return value
        proxies = tuple(str(item).strip() for item in items if str(item).strip())
        for proxy in proxies:
            try:
                ipaddress.ip_network(proxy, strict=False)
            except ValueError:
                raise ValueError(f"{proxy!r} is not an IP address or CIDR network (e.g. 10.0.0.5, 172.18.0.0/16)"
                                 ) from None
        return proxies

    @field_validator("default_timezone")
    @classmethod
    def _known_timezone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {value!r} (use an IANA name such as Asia/Shanghai)") from exc
        return value

    @field_validator("log_format", mode="before")
    @classmethod
    def _log_format_any_case(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("log_level")
    @classmethod
    def _log_level(cls, value: str) -> str:
        level = value.upper()
        if level not in {"DEBUG", "INFO", "WARNING", "ERROR"}:
            raise ValueError("must be DEBUG, INFO, WARNING or ERROR")
        return level

    @property
    def data_dir(self) -> Path:
        """The data directory, expanded (embedded database, exports, caches)."""
        return self.mnemo_data_dir.expanduser()

    @property
    def uses_embedded_database(self) -> bool:
        return self.database_url is None

    @property
    def embeddings_configured(self) -> bool:
        """An embedder is named (an endpoint or a local model), so new memories owe an embedding."""
        return self.embedding_base_url is not None or self.embedding_model is not None

    @property
    def llm_configured(self) -> bool:
        return self.llm_base_url is not None

    def masked(self) -> dict[str, str]:
        """Every setting as an environment variable with secrets masked (URLs too), for ``mnemo doctor``."""
        shown: dict[str, str] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, SecretStr):
                value = value.get_secret_value()
            if value is None:
                text = "(unset)"
            elif name in SECRET_FIELDS:
                text = mask_secret(str(value))
            else:
                text = mask_url(str(value))
            shown[name.upper()] = text
        return shown

    def secret_values(self) -> list[str]:
        """Every configured secret, and every password inside a configured URL: what no log line may show."""
        found: list[str] = []
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, SecretStr):
                found.append(value.get_secret_value())
            elif isinstance(value, str):
                found += url_secrets(value)
        return found


def load_settings(**overrides: Any) -> Settings:
    """Read the settings, turning validation errors into a message that names each variable. ``overrides`` are
    validated as the environment's values are (a string to parse, or a value of the field's type): any value
    may come, and a wrong one is reported like a wrong variable."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = str(error["loc"][0]) if error["loc"] else "configuration"
            shown = error.get("input")
            if isinstance(shown, str):
                shown = mask_secret(shown) if field in SECRET_FIELDS else mask_url(shown)
            message = error["msg"].removeprefix("Value error, ")
            problems.append(f"{field.upper()}: {message} (got {shown!r})")
        raise ConfigError("Invalid configuration:\n  " + "\n  ".join(problems)) from None
