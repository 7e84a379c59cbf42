"""Telling "the database is away" (refused, restarting, the connection dropped) from other database errors.

A unit of work turns the first kind into :class:`shared.errors.DatabaseUnavailable`, so the hot path
can keep a message and try again, the worker can retry its job, and the front-ends can tell the user
in words instead of a traceback. Everything else (a constraint, a bad query) stays what it was.
"""

from __future__ import annotations

import psycopg
from sqlalchemy.exc import DBAPIError

UNREACHABLE_STATES = ("57P01", "57P02", "57P03")
"""admin_shutdown, crash_shutdown, cannot_connect_now; and every state of class 08 (connection exception)."""


def database_unreachable(exc: BaseException) -> bool:
    """True when ``exc`` says the server could not be reached or dropped the connection."""
    if isinstance(exc, DBAPIError):
        if exc.connection_invalidated:
            return True
        exc = exc.orig if exc.orig is not None else exc
    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = exc.sqlstate
    return state is None or state.startswith("08") or state in UNREACHABLE_STATES
