"""Alembic environment: the URL from Mnemo's settings, the metadata from its models."""

from __future__ import annotations

from sqlalchemy import pool

from alembic import context
from shared.db.access_models import AccessEntryRow  # noqa: F401  (puts access_entries in the metadata)
from shared.db.engine import make_engine, sqlalchemy_url
from shared.db.lease_models import LeaseRow  # noqa: F401  (puts process_leases in the metadata)
from shared.db.limit_models import ModelCallHold, RateLimitCounter  # noqa: F401  (puts their tables in the metadata)
from shared.db.maintenance_models import MaintenanceRun  # noqa: F401  (puts maintenance_runs in the metadata)
from shared.db.memory_models import Base
from shared.db.thread_models import OpenThread  # noqa: F401  (puts open_threads in the metadata)
from shared.db.token_models import OneTimeToken  # noqa: F401  (puts one_time_tokens in the metadata)
from shared.db.update_models import PlatformUpdate  # noqa: F401  (puts platform_updates in the metadata)
from shared.db.usage_models import UsageCall  # noqa: F401  (puts the usage tables in the metadata)
from shared.db.web_session_models import WebSession  # noqa: F401  (puts web_sessions in the metadata)
from shared.settings import load_settings

IGNORED_TABLES = frozenset({"kombu_message", "kombu_queue"})
"""Tables of the Celery broker when it lives in the same PostgreSQL (embedded default)."""

config = context.config


def _url() -> str:
    url = config.attributes.get("database_url") or load_settings().database_url
    if not url:
        raise SystemExit("No database URL: run `mnemo db upgrade`, which starts the embedded database.")
    return sqlalchemy_url(url)


def include_name(name: str | None, type_: str, _parent: object) -> bool:
    return not (type_ == "table" and name in IGNORED_TABLES)


def run_migrations_offline() -> None:
    context.configure(url=_url(), target_metadata=Base.metadata, literal_binds=True,
                      include_name=include_name)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_engine(_url(), poolclass=pool.NullPool)
    with engine.connect() as connection:
        _run(connection)
    engine.dispose()


def _run(connection) -> None:
    context.configure(connection=connection, target_metadata=Base.metadata, include_name=include_name,
                      compare_type=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
