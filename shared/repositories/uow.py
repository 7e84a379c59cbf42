"""The unit of work: one transaction and the repositories that share it.

It rolls back unless told to commit, so a service that fails half-way leaves nothing behind. A commit
runs inside the ``around_commit`` hook its factory passed, and no other: the Telegram webhook's wiring
passes :func:`shared.db.update_log.marked_in`, so the first commit made while it handles an update marks
that update handled in the same transaction; every other process passes none.
Objects loaded inside stay readable after the block (detached, not expired). A database that cannot
be reached, or drops the connection, leaves the block as :class:`DatabaseUnavailable`; a transaction that lost a
race (serialization failure, deadlock, lock or statement time-out) as :class:`DatabaseConflict`.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from types import TracebackType
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from shared.db.availability import named_failure
from shared.repositories.access import AccessRepository
from shared.repositories.accounts import AccountDataRepository
from shared.repositories.conversation import SessionRepository, TurnRepository
from shared.repositories.episodes import EpisodeRepository
from shared.repositories.maintenance import MaintenanceRunRepository
from shared.repositories.memories import MemoryEventRepository, MemoryRepository
from shared.repositories.memory_sweeps import MemorySweepRepository
from shared.repositories.operations import OperationsRepository
from shared.repositories.outbox import OutboxRepository
from shared.repositories.people import ChatRepository, UserRepository
from shared.repositories.profiles import ProfileRepository
from shared.repositories.protocol import UnitOfWorkProtocol
from shared.repositories.reminders import TodoRepository
from shared.repositories.retention import RetentionRepository
from shared.repositories.round_records import RoundRecordRepository
from shared.repositories.rounds import RoundRepository
from shared.repositories.search_index import SearchIndexRepository
from shared.repositories.threads import ThreadRepository
from shared.repositories.tokens import OneTimeTokenRepository
from shared.repositories.usage import UsageRepository
from shared.repositories.web_sessions import WebSessionRepository

CommitHook = Callable[[Session], AbstractContextManager[None]]
"""Runs around a commit, in its transaction: what it writes before the commit lands with it."""


class UnitOfWork:
    """``with UnitOfWork(factory) as uow: …; uow.commit()``; each commit inside ``around_commit`` when given."""

    session: Session

    def __init__(self, factory: sessionmaker[Session], *, around_commit: CommitHook | None = None) -> None:
        self._factory = factory
        self._around_commit = around_commit

    def __enter__(self) -> UnitOfWork:
        self.session = self._factory()
        self.users = UserRepository(self.session)
        self.chats = ChatRepository(self.session)
        self.sessions = SessionRepository(self.session)
        self.turns = TurnRepository(self.session)
        self.rounds = RoundRepository(self.session)
        self.round_records = RoundRecordRepository(self.session)
        self.memories = MemoryRepository(self.session)
        self.events = MemoryEventRepository(self.session)
        self.memory_sweeps = MemorySweepRepository(self.session)
        self.maintenance = MaintenanceRunRepository(self.session)
        self.search_index = SearchIndexRepository(self.session)
        self.retention = RetentionRepository(self.session)
        self.episodes = EpisodeRepository(self.session)
        self.todos = TodoRepository(self.session)
        self.threads = ThreadRepository(self.session)
        self.profiles = ProfileRepository(self.session)
        self.outbox = OutboxRepository(self.session)
        self.tokens = OneTimeTokenRepository(self.session)
        self.web_sessions = WebSessionRepository(self.session)
        self.accounts = AccountDataRepository(self.session)
        self.operations = OperationsRepository(self.session)
        self.usage = UsageRepository(self.session)
        self.access = AccessRepository(self.session)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.session.close()  # rolls back whatever was not committed; loaded objects stay readable
        if exc is not None and (named := named_failure(exc)) is not exc:
            raise named from exc

    def commit(self) -> None:
        """Commit, inside the factory's ``around_commit`` hook if it gave one."""
        if self._around_commit is None:
            self.session.commit()
            return
        with self._around_commit(self.session):
            self.session.commit()

    def flush(self) -> None:
        """Send pending changes (ids become known) without committing."""
        self.session.flush()

    def forget_loaded(self, *rows: object) -> None:
        """Reload ``rows`` (all loaded objects when none is named) from the database on next access,
        after a bulk statement changed them behind the identity map."""
        if rows:
            for row in rows:
                self.session.expire(row)
        else:
            self.session.expire_all()

    def ping(self) -> None:
        """Ask the database for an answer (readiness checks); raises when it gives none."""
        self.session.execute(text("SELECT 1"))

    def rollback(self) -> None:
        self.session.rollback()


if TYPE_CHECKING:  # mypy holds the real unit of work to the protocol the fake one keeps too
    _conforms: type[UnitOfWorkProtocol] = UnitOfWork
