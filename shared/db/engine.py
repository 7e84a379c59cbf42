"""Engines and sessions. Nothing connects at import time; each process wires its own engine."""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import Engine, create_engine
from sqlalchemy.orm import Session, sessionmaker

import shared.db.search_sync  # noqa: F401  (registers the token listeners)


def sqlalchemy_url(url: str) -> str:
    """``url`` with the psycopg 3 driver, whatever spelling of postgres it came with."""
    for prefix in ("postgresql+psycopg://", "postgresql+psycopg2://", "postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


PLANNED_EACH_CALL = "-c plan_cache_mode=force_custom_plan"
"""A prepared statement is still planned for each call's values: a cached generic plan ignores which user is asked
about, and was measured 10x slower for the per-user full-text query at 1M memories."""


def make_engine(url: str, *, prepared_statements: bool = False, **options: object) -> Engine:
    """A pooled engine for ``url`` that checks connections before use and never shows statement parameters.

    With ``prepared_statements`` (``DATABASE_PREPARED_STATEMENTS``, for the long-lived engines of the bots and
    workers), a statement a connection sends for the fifth time is prepared on the server (psycopg's default
    threshold): parsed and analysed once, still planned for each call's values (:data:`PLANNED_EACH_CALL`). The
    two ranking statements of a recall cost PostgreSQL about 0.5 ms less each. Off behind a pooler in
    transaction mode (PgBouncer): it shares server connections, so neither a prepared statement nor the
    connection's plan setting follows the client."""
    # Statement parameters hold what users said: kept out of errors, so out of every traceback that is logged.
    connect_args: dict[str, object] = ({"options": PLANNED_EACH_CALL} if prepared_statements
                                       else {"prepare_threshold": None})
    given = options.pop("connect_args", None)
    if isinstance(given, Mapping):
        connect_args.update(given)
    defaults: dict[str, object] = {"pool_pre_ping": True, "hide_parameters": True, "connect_args": connect_args}
    if "poolclass" not in options:
        defaults.update(pool_size=5, max_overflow=10)
    defaults.update(options)
    return create_engine(sqlalchemy_url(url), **defaults)


def session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions that keep loaded objects usable after commit."""
    return sessionmaker(engine, expire_on_commit=False)
