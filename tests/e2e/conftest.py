"""Fixtures of the end-to-end tests (the fake platforms and the databases come from tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.fakes.openai_server import FakeOpenAI
from tests.e2e.bot_process import replying_llm


@pytest.fixture
def llm() -> Iterator[FakeOpenAI]:
    """A fake OpenAI server whose every turn answers the same and stores nothing (tests/e2e/bot_process.py)."""
    with replying_llm() as server:
        yield server
