"""Telling "the database is away" (refused, restarting, the connection dropped) and "this transaction lost a race"
(serialization failure, deadlock, lock or statement time-out) from other database errors.

A unit of work turns the first kind into :class:`shared.errors.DatabaseUnavailable`, so the hot path
can keep a message and try again, the worker can retry its job, and the front-ends can tell the user
in words instead of a traceback; the second into :class:`shared.errors.DatabaseConflict`, which the worker
retries too. Everything else (a constraint, a bad query) stays what it was: a bug fails once, loudly.
"""

from __future__ import annotations

import psycopg
from sqlalchemy.exc import DBAPIError

from shared.errors import DatabaseConflict, DatabaseUnavailable

UNREACHABLE_STATES = ("57P01", "57P02", "57P03")
"""admin_shutdown, crash_shutdown, cannot_connect_now; and every state of class 08 (connection exception)."""
CONFLICT_STATES = ("40001", "40P01", "55P03", "57014")
"""serialization_failure, deadlock_detected, lock_not_available, query_canceled (a statement time-out)."""


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


def database_conflict(exc: BaseException) -> bool:
    """True when ``exc`` says the transaction lost a race the database settled by cancelling it."""
    if isinstance(exc, DBAPIError):
        exc = exc.orig if exc.orig is not None else exc
    return isinstance(exc, psycopg.Error) and exc.sqlstate in CONFLICT_STATES


def named_failure(exc: BaseException) -> BaseException:
    """``exc`` as :class:`DatabaseUnavailable` or :class:`DatabaseConflict` when it is one of those; else itself."""
    if database_unreachable(exc):
        return DatabaseUnavailable("database_unavailable")
    if database_conflict(exc):
        return DatabaseConflict("database_conflict")
    return exc
