"""Builders the tests share: the hot path's configuration and services wired as production wires them,
settings from a clean environment, the model's answers and the messages users send.

Each builder takes keywords for what a test varies and defaults for the rest, so a test names only what
it is about. Fixtures built from these live in the conftest of each layer (tests/integration/conftest.py,
tests/e2e/conftest.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from bench.fakes.openai_server import FakeOpenAI
from bench.fakes.telegram_api import FakeTelegram
from shared.commands.service import Caller
from shared.conversation.config import ConversationConfig
from shared.conversation.extraction_timing import ExtractionTiming
from shared.conversation.messages import IncomingMessage, Reply
from shared.conversation.service import ConversationService
from shared.db.engine import make_engine, session_factory
from shared.db.memory_models import Memory
from shared.llm.client import ChatModel
from shared.repositories.uow import UnitOfWork
from shared.settings import Settings
from tests.conftest import audit_of
from tests.fakes.uow import Clock

__all__ = [
    "PER_TURN",
    "Clock",
    "Settings",
    "audit_actions",
    "chat_model",
    "clean_settings",
    "conversation",
    "conversation_config",
    "message",
    "model_turn",
    "monitor_adds",
    "said",
    "stored_memory",
    "telegram_settings",
    "turn_or_monitor",
    "units_of_work",
    "worker_units_of_work",
]

PER_TURN = ExtractionTiming(batch_turns=1)
"""Every turn owes its knowledge-monitor job at once: for tests about the jobs a turn owes, not about when
a sitting is read (tests/integration/test_sitting_extraction.py)."""
NEUTRAL = {"primary": "neutral", "category": "neutral", "confidence": 0.9, "indicators": []}
CATEGORIES = {"sad": "negative", "happy": "positive", "neutral": "neutral"}


def conversation_config(*, default_timezone: str = "UTC", personality: str = "a warm friend",
                        **fields: Any) -> ConversationConfig:
    """The hot path's configuration as the tests run it: five memories in 700 tokens, 15 turns of history,
    sessions idle after 30 minutes; ``fields`` override any of it."""
    base: dict[str, Any] = {"bot_name": "Mnemo", "personality": personality, "emotion_enabled": True,
                            "retrieval_limit": 5, "memory_budget_tokens": 700, "history_turns": 15,
                            "idle": timedelta(minutes=30), "default_timezone": default_timezone}
    return ConversationConfig(**{**base, **fields})


PER_TURN_CONFIG = conversation_config(personality="a friend", extraction=PER_TURN)
"""The hot path of the tests of the worker's jobs: each turn owes its knowledge-monitor job at once."""


def chat_model(llm: FakeOpenAI, *, timeout_seconds: float = 10, model: str = "fake-chat",
               **options: Any) -> ChatModel:
    """The real client, pointed at the fake server."""
    return ChatModel(base_url=llm.base_url, api_key="test", model=model, timeout_seconds=timeout_seconds, **options)


def conversation(uow_factory: Callable[[], Any], config: ConversationConfig | Settings,
                 llm: FakeOpenAI | ChatModel | None = None, **wiring: Any) -> ConversationService:
    """The conversation service as a front-end wires it: on ``llm`` (a fake server, or a client already
    made), or offline without one; ``wiring`` passes the rest (clock, embedder, limits …)."""
    if isinstance(config, Settings):
        config = ConversationConfig.from_settings(config)
    model = chat_model(llm) if isinstance(llm, FakeOpenAI) else llm
    return ConversationService(uow_factory, config, chat_model=model, **wiring)


def clean_settings(monkeypatch: pytest.MonkeyPatch, **fields: Any) -> Settings:
    """Settings of ``fields`` alone: no ``.env`` file, and no variable of the test's own environment."""
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    return Settings(_env_file=None, **fields)  # type: ignore[call-arg]


def telegram_settings(telegram: FakeTelegram, monkeypatch: pytest.MonkeyPatch, *,
                      default_timezone: str = "Asia/Shanghai", **fields: Any) -> Settings:
    """Settings of a Telegram bot on the fake Bot API."""
    return clean_settings(monkeypatch, telegram_token=SecretStr(telegram.token),
                          telegram_api_base_url=telegram.base_url, default_timezone=default_timezone, **fields)


def model_turn(response: str = "好的", *, emotion: str = "neutral", confidence: float = 0.9,
               entries: Iterable[tuple[str, str, str, str]] = (), todos: Iterable[tuple[Any, ...]] = (),
               topic: str | None = None, variables: Iterable[tuple[str, str]] = (), **extra: Any) -> dict[str, Any]:
    """The model's JSON answer to a turn: ``entries`` are (type, subject, predicate, content) memories to
    store for long, ``todos`` (content, due[, kind]) reminders, ``variables`` (key, value) context."""
    entries = list(entries)
    category = CATEGORIES.get(emotion, "neutral")
    return {"emotion": {**NEUTRAL, "primary": emotion, "category": category, "confidence": confidence},
            "response": response,
            "memory_update": {"should_store": bool(entries), "entries": [
                {"type": t, "subject": s, "predicate": p, "content": c, "tier": "long"} for t, s, p, c in entries]},
            "todos": [{"content": todo[0], "due": todo[1], **({"kind": todo[2]} if len(todo) > 2 else {})}
                      for todo in todos],
            "topic": topic, "context_variables": [{"key": k, "value": v} for k, v in variables], **extra}


def message(text: str, *, user: str = "u1", chat: str | None = None, sent: datetime | None = None,
            platform: str = "telegram", name: str | None = "Alice", **fields: Any) -> IncomingMessage:
    """A message ``user`` sends (in a private chat of the same id unless ``chat`` says otherwise)."""
    return IncomingMessage(platform=platform, chat_id=chat or user, user_id=user, text=text,
                           sent_at=sent or datetime.now(UTC), display_name=name, **fields)


def said(service: ConversationService, caller: Caller, words: str, sent: datetime, *,
         message_id: str | None = None) -> Reply:
    """One message of ``caller``'s, in their private chat, through the hot path."""
    incoming = message(words, user=caller.platform_user_id, sent=sent, platform=caller.platform,
                       name=caller.display_name, message_id=message_id, locale=caller.locale)
    return asyncio.run(service.handle_message(incoming))


def monitor_adds(content: str, *, predicate: str = "hobby", type_: str = "fact") -> dict[str, Any]:
    """The knowledge monitor's answer that adds one lasting memory of the user's."""
    return {"operations": [{"op": "ADD", "type": type_, "subject": "user", "predicate": predicate,
                            "content": content, "tier": "long"}]}


def asks_for_a_turn(request: dict[str, Any]) -> bool:
    """Hot-path turns ask for the json_schema; the knowledge monitor (and other background jobs) for a JSON object."""
    return (request.get("response_format") or {}).get("type") == "json_schema"


def turn_or_monitor(turn: dict[str, Any], monitor: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A responder for the fake server: ``turn`` to the hot path, ``monitor`` to the background jobs."""
    return lambda request: turn if asks_for_a_turn(request) else monitor


@contextmanager
def units_of_work(database_url: str) -> Iterator[Callable[[], UnitOfWork]]:
    """Units of work that really commit, on a database of the test's own (its engine disposed after)."""
    engine = make_engine(database_url)
    sessions = session_factory(engine)
    try:
        yield lambda: UnitOfWork(sessions)
    finally:
        engine.dispose()


@contextmanager
def worker_units_of_work(database_url: str, monkeypatch: pytest.MonkeyPatch, workdir: Path,
                         **environment: str) -> Iterator[Callable[[], UnitOfWork]]:
    """Units of work on ``database_url``, in the environment a worker process would see for the same database
    (``DATABASE_URL`` and ``environment``, nothing of the test's own, ``workdir`` as the working directory),
    so that a task run in this process builds its own context from it; that context is disposed of after."""
    from worker import context as worker_context

    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("DATABASE_URL", database_url)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(worker_context, "_context", None)
    with units_of_work(database_url) as units:
        yield units
        if worker_context._context is not None:
            worker_context._context.engine.dispose()


def stored_memory(uow_factory: Callable[[], UnitOfWork], memory_id: int) -> Memory | None:
    """The memory's row as it is now, or None once it is gone."""
    with uow_factory() as uow:
        return uow.session.get(Memory, memory_id)


def audit_actions(uow_factory: Callable[[], UnitOfWork], user_id: int, memory_id: int) -> list[tuple[str, str]]:
    """(action, actor) of each event in the memory's audit trail, oldest first."""
    with uow_factory() as uow:
        return [(e.action, e.actor) for e in audit_of(uow, user_id, memory_id)]


def memory(user_id: int, content: str, *, type_: str = "fact", **fields: Any) -> Memory:
    """A memory row of the user's, stated by them unless ``fields`` say otherwise (the columns a test leaves
    out take the table's defaults)."""
    fields.setdefault("source", "user_stated")
    return Memory(user_id=user_id, type=type_, content=content, **fields)


def remember(uow_factory: Callable[[], UnitOfWork], user: str, content: str, *, platform: str = "telegram",
             **fields: Any) -> tuple[int, int]:
    """Store a memory of the platform user ``user`` (made if new) in a unit of work of its own:
    (their user id, the memory's id). ``fields`` as for :func:`memory` (``type_`` included)."""
    with uow_factory() as uow:
        user_id = uow.users.identify(platform, user).user_id
        row = uow.memories.add(memory(user_id, content, **fields))
        uow.commit()
    return user_id, row.id


@contextmanager
def database_with_redis(admin_url: str, template: str, redis_url: str) -> Iterator[str]:
    """A migrated database of the test's own (copied from ``template``) and the Redis database ``redis_url``
    emptied before and after: what a worker process of the test runs on."""
    import redis

    from bench.databases import create_database, drop_database

    url = create_database(admin_url, template=template)
    redis.Redis.from_url(redis_url).flushdb()
    try:
        yield url
    finally:
        drop_database(admin_url, url)
        redis.Redis.from_url(redis_url).flushdb()


def typed(lines: Iterable[str]) -> Callable[[str], str]:
    """A console's ``read_line`` that gives ``lines`` one by one, then the end of input."""
    script = iter(lines)

    def read_line(_prompt: str) -> str:
        try:
            return next(script)
        except StopIteration:
            raise EOFError from None

    return read_line
