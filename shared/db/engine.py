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


def make_engine(url: str, **options: object) -> Engine:
    """A pooled engine for ``url`` that checks connections before use and never shows statement parameters."""
    # No server-side prepared statements: a cached generic plan ignores which user is asked about and
    # was measured 10x slower for the per-user full-text query at 1M memories.
    # Statement parameters hold what users said: kept out of errors, so out of every traceback that is logged.
    defaults: dict[str, object] = {"pool_pre_ping": True, "hide_parameters": True,
                                   "connect_args": {"prepare_threshold": None}}
    if "poolclass" not in options:
        defaults.update(pool_size=5, max_overflow=10)
    given = options.get("connect_args")
    if isinstance(given, Mapping):
        options = {**options, "connect_args": {"prepare_threshold": None, **given}}
    defaults.update(options)
    return create_engine(sqlalchemy_url(url), **defaults)


def session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions that keep loaded objects usable after commit."""
    return sessionmaker(engine, expire_on_commit=False)
