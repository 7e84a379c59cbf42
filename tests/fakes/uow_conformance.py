"""mypy (``make test``) holds the fake unit of work to :class:`UnitOfWorkProtocol`, as shared/repositories/uow.py
holds the real one; a method the fake lacks, or takes other parameters for, fails the type check."""

from __future__ import annotations

from shared.repositories.protocol import UnitOfWorkProtocol
from tests.fakes.uow import FakeUnitOfWork

FAKE_UNIT_OF_WORK: type[UnitOfWorkProtocol] = FakeUnitOfWork
