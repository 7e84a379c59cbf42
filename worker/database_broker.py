"""The PostgreSQL broker: kombu's SQLAlchemy transport, looking for work every 0.1 s when idle.

kombu's default of 1 s held a worker to about one job a second: with late acks and a prefetch of 1
the consumer finds nothing to take while its only job runs, and then sleeps for the whole interval
(measured with ``mnemo bench worker``). The interval cannot go through ``broker_transport_options``,
which this transport hands to ``create_engine``, so it is a class attribute of a subclass that
broker URLs name by the alias ``mnemo-sqla+postgresql://…``.
"""

from __future__ import annotations

from kombu.transport import TRANSPORT_ALIASES
from kombu.transport.sqlalchemy import Transport as SQLAlchemyTransport

ALIAS = "mnemo-sqla"
IDLE_POLL_SECONDS = 0.1


class Transport(SQLAlchemyTransport):
    polling_interval = IDLE_POLL_SECONDS


def database_broker_url(broker_url: str) -> str:
    """``sqla+<url>`` as this transport's URL (registering the alias); any other URL unchanged."""
    if not broker_url.startswith("sqla+"):
        return broker_url
    TRANSPORT_ALIASES.setdefault(ALIAS, f"{__name__}:Transport")
    return f"{ALIAS}+{broker_url.removeprefix('sqla+')}"
