"""Tasks retry only named transient failures (the database away, a transaction that lost a race, the broker
away, a socket): a bug (a constraint, a bad query) fails once instead of being retried for minutes with its
paid model calls repeated."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import errors
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError, ProgrammingError

from shared.db.availability import database_conflict, named_failure
from shared.errors import DatabaseConflict, DatabaseUnavailable
from worker.tasks import RETRY, TRANSIENT, mnemo_task


def wrapped(kind, error: psycopg.Error) -> DBAPIError:
    return kind("SELECT 1", {}, error)


@pytest.mark.parametrize("error", [errors.SerializationFailure(), errors.DeadlockDetected(),
                                   errors.LockNotAvailable(), errors.QueryCanceled()])
def test_a_lost_race_is_a_conflict_worth_another_try(error):
    assert database_conflict(wrapped(OperationalError, error))
    assert isinstance(named_failure(wrapped(OperationalError, error)), DatabaseConflict)


@pytest.mark.parametrize("failure", [wrapped(IntegrityError, errors.UniqueViolation()),
                                     wrapped(ProgrammingError, errors.UndefinedTable()),
                                     wrapped(ProgrammingError, errors.SyntaxError())])
def test_a_bug_is_named_nothing_and_is_not_retried(failure):
    assert not database_conflict(failure)
    assert named_failure(failure) is failure
    assert not isinstance(failure, TRANSIENT)


def test_a_dropped_connection_is_the_database_away():
    assert isinstance(named_failure(wrapped(OperationalError, psycopg.OperationalError("server closed"))),
                      DatabaseUnavailable)


def probe(name: str, failures: list[BaseException]):
    """A task that raises each of ``failures`` once, in turn, then succeeds; it counts its calls."""
    calls = []

    @mnemo_task(f"test_probe_{name}")
    def task() -> str:
        calls.append(1)
        if failures:
            raise failures.pop(0)
        return "done"
    return task, calls


def test_a_task_tries_again_after_a_deadlock_and_a_dropped_connection():
    task, calls = probe("transient", [wrapped(OperationalError, errors.DeadlockDetected()),
                                      wrapped(OperationalError, psycopg.OperationalError("server closed"))])
    result = task.apply()
    assert result.successful()
    assert result.get() == "done"
    assert len(calls) == 3


def test_a_task_that_breaks_a_constraint_fails_once():
    task, calls = probe("bug", [wrapped(IntegrityError, errors.UniqueViolation()), "never reached"])
    result = task.apply()
    assert result.failed()
    assert isinstance(result.result, IntegrityError)
    assert len(calls) == 1


def test_every_task_retries_the_same_named_failures_only():
    assert RETRY["autoretry_for"] == TRANSIENT
    assert not any(issubclass(kind, DBAPIError) for kind in TRANSIENT)
