"""What every unit of work offers: the real one (:mod:`shared.repositories.uow`) and the in-memory fake
(tests/fakes/uow.py) both satisfy :class:`UnitOfWorkProtocol`, checked by mypy (``make test``).

The protocol names the transaction (enter, leave, commit, roll back, flush, forget, ping) and the
repositories that both units of work carry. Which methods each fake repository has, with which
parameters, is held to the real repository by tests/integration/test_fake_uow_parity.py.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, Protocol


class UnitOfWorkProtocol(Protocol):
    """``with factory() as uow: …; uow.commit()``; nothing is kept without ``commit()``."""

    # The repositories the fake carries too (the real unit of work has more).
    users: Any
    chats: Any
    sessions: Any
    turns: Any
    round_records: Any
    memories: Any
    events: Any
    todos: Any
    threads: Any
    outbox: Any
    tokens: Any
    web_sessions: Any
    accounts: Any
    usage: Any

    def __enter__(self) -> UnitOfWorkProtocol: ...

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None: ...

    def commit(self) -> None: ...

    def rollback(self) -> None: ...

    def flush(self) -> None: ...

    def forget_loaded(self, *rows: object) -> None: ...

    def ping(self) -> None: ...
