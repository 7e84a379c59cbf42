"""The PostgreSQL broker: kombu's SQLAlchemy transport, made safe for several processes starting at once.

Two changes to kombu's transport, which broker URLs name by the alias ``mnemo-sqla+postgresql://…``:

- It looks for work every 0.1 s when idle. kombu's default of 1 s held a worker to about one job a
  second: with late acks and a prefetch of 1 the consumer finds nothing to take while its only job
  runs, and then sleeps for the whole interval (measured with ``mnemo bench worker``). The interval
  cannot go through ``broker_transport_options``, which this transport hands to ``create_engine``.
- A worker notices a stop within 0.2 s. Celery's loop for a polling transport waits up to 2 s for
  a message before it looks at its stop flag again, so stopping an idle worker took over 4 s (and
  ``mnemo chat``'s /quit waited for it); each wait here ends after :data:`STOP_CHECK_SECONDS`.
- Its tables and queue rows are created once, whichever process comes first. kombu creates them
  lazily and guards that with a lock of its own process only, so a front-end sending its first job
  while the worker beside it starts could both run ``CREATE TABLE`` and one of them failed with a
  unique violation: the job then waited for the outbox sweep. Here the tables are created under a
  PostgreSQL advisory lock and a queue row by ``INSERT … ON CONFLICT DO NOTHING``.
"""

from __future__ import annotations

from kombu.transport import TRANSPORT_ALIASES
from kombu.transport.sqlalchemy import Channel as SQLAlchemyChannel
from kombu.transport.sqlalchemy import Transport as SQLAlchemyTransport
from kombu.transport.sqlalchemy import metadata
from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.engine import Engine

ALIAS = "mnemo-sqla"
IDLE_POLL_SECONDS = 0.1
STOP_CHECK_SECONDS = 0.2
TABLES_LOCK = 0x6D6E656D6F6B6F  # "mnemoko": the advisory lock key under which kombu's tables are created


class Channel(SQLAlchemyChannel):
    def _engine_from_config(self) -> Engine:
        engine = super()._engine_from_config()
        with engine.begin() as connection:
            connection.execute(select(func.pg_advisory_xact_lock(TABLES_LOCK)))
            metadata.create_all(connection)
        return engine

    def _get_or_create(self, queue: str):
        table = self.queue_cls.__table__
        found = self.session.query(self.queue_cls).filter(self.queue_cls.name == queue).first()
        if found is None:
            self.session.execute(insert(table).values(name=queue).on_conflict_do_nothing(index_elements=["name"]))
            self.session.commit()
            found = self.session.query(self.queue_cls).filter(self.queue_cls.name == queue).one()
        return found


class Transport(SQLAlchemyTransport):
    Channel = Channel
    polling_interval = IDLE_POLL_SECONDS

    def drain_events(self, connection, timeout: float | None = None) -> None:  # type: ignore[override]  # kombu passes timeout= only
        """Wait for one message at most :data:`STOP_CHECK_SECONDS` (the caller loops; a timeout is normal)."""
        wait = STOP_CHECK_SECONDS if timeout is None else min(timeout, STOP_CHECK_SECONDS)
        super().drain_events(connection, timeout=wait)


def database_broker_url(broker_url: str) -> str:
    """``sqla+<url>`` as this transport's URL (registering the alias); any other URL unchanged."""
    if not broker_url.startswith("sqla+"):
        return broker_url
    TRANSPORT_ALIASES.setdefault(ALIAS, f"{__name__}:Transport")
    return f"{ALIAS}+{broker_url.removeprefix('sqla+')}"
