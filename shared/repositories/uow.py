"""The unit of work: one transaction and the repositories that share it.

It rolls back unless told to commit, so a service that fails half-way leaves nothing behind.
Objects loaded inside stay readable after the block (detached, not expired).
"""

from __future__ import annotations

from types import TracebackType

from sqlalchemy.orm import Session, sessionmaker

from shared.db.token_models import OneTimeTokenRepository
from shared.db.web_session_models import WebSessionRepository
from shared.repositories.conversation import SessionRepository, TurnRepository
from shared.repositories.episodes import EpisodeRepository
from shared.repositories.memories import MemoryEventRepository, MemoryRepository
from shared.repositories.outbox import OutboxRepository
from shared.repositories.people import ChatRepository, UserRepository
from shared.repositories.profiles import ProfileRepository
from shared.repositories.reminders import TodoRepository


class UnitOfWork:
    """``with UnitOfWork(factory) as uow: …; uow.commit()``."""

    session: Session

    def __init__(self, factory: sessionmaker[Session]) -> None:
        self._factory = factory

    def __enter__(self) -> UnitOfWork:
        self.session = self._factory()
        self.users = UserRepository(self.session)
        self.chats = ChatRepository(self.session)
        self.sessions = SessionRepository(self.session)
        self.turns = TurnRepository(self.session)
        self.memories = MemoryRepository(self.session)
        self.events = MemoryEventRepository(self.session)
        self.episodes = EpisodeRepository(self.session)
        self.todos = TodoRepository(self.session)
        self.profiles = ProfileRepository(self.session)
        self.outbox = OutboxRepository(self.session)
        self.tokens = OneTimeTokenRepository(self.session)
        self.web_sessions = WebSessionRepository(self.session)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.session.close()  # rolls back whatever was not committed; loaded objects stay readable

    def commit(self) -> None:
        self.session.commit()

    def rollback(self) -> None:
        self.session.rollback()
