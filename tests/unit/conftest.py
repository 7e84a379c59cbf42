"""Fixtures of the unit tests that run services on the fake unit of work (tests/fakes/uow.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.fakes.uow import Clock, FakeDatabase

START = datetime(2026, 11, 22, 2, 0, tzinfo=UTC)
"""Where the fake clock starts: 10:00 on a Sunday in Shanghai."""


@pytest.fixture
def clock() -> Clock:
    return Clock(START)


@pytest.fixture
def database(clock: Clock) -> FakeDatabase:
    return FakeDatabase(clock)
