"""What a worker process needs, built once per process after the fork (never inherited), from the parts
:mod:`shared.app.bootstrap` wires for every process."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from shared.app import bootstrap
from shared.db.engine import make_engine, session_factory
from shared.llm.client import ChatModel
from shared.recall.embeddings import Embedder
from shared.repositories.uow import UnitOfWork
from shared.repositories.vectors import VectorIndex
from shared.settings import Settings, load_settings
from shared.usage.policy import QuotaPolicy

log = logging.getLogger(__name__)


@dataclass
class WorkerContext:
    settings: Settings
    engine: Engine
    chat_model: ChatModel | None
    embedder: Embedder | None
    vectors: VectorIndex
    sessions: sessionmaker[Session]
    quota: QuotaPolicy

    def uow(self) -> UnitOfWork:
        return UnitOfWork(self.sessions)

    @staticmethod
    def now() -> datetime:
        return datetime.now(UTC)


_context: WorkerContext | None = None


def context() -> WorkerContext:
    """This process's context, built on first use (DATABASE_URL is always set for workers)."""
    global _context
    if _context is None:
        settings = load_settings()
        if not settings.database_url:
            raise RuntimeError("workers need DATABASE_URL (`mnemo worker` sets it for the embedded database)")
        engine = make_engine(settings.database_url, pool_size=2,
                             prepared_statements=settings.database_prepared_statements)
        parts = bootstrap.background_parts(settings, engine)  # wired where every process is wired
        _context = WorkerContext(settings=settings, engine=engine, chat_model=parts.chat_model,
                                 embedder=parts.embedder, vectors=parts.vectors, sessions=session_factory(engine),
                                 quota=parts.quota)
    return _context


@contextmanager
def running_with(ctx: WorkerContext) -> Iterator[WorkerContext]:
    """The tasks called in this process use ``ctx`` inside the block (a benchmark playing the worker in-process,
    on its own database and clock); the context before is put back afterwards."""
    global _context
    previous, _context = _context, ctx
    try:
        yield ctx
    finally:
        _context = previous


def forget_inherited_context(**_kwargs: object) -> None:
    """``worker_process_init`` (connected by :mod:`worker.signals`): a forked child must not share its parent's
    database connections."""
    global _context
    if _context is not None:
        _context.engine.dispose(close=False)
        _context = None
