"""Fixtures of the integration tests: the fake model server, a client on it, and the memory commands,
as most tests use them (a test needing another shape defines its own fixture of the same name).
The fake platforms (``telegram``, ``discord``) and the databases come from tests/conftest.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.fakes.openai_server import FakeOpenAI
from shared.commands.service import MemoryCommands
from shared.llm.client import ChatModel
from tests.builders import chat_model


@pytest.fixture
def llm() -> Iterator[FakeOpenAI]:
    """The fake OpenAI-compatible server, serving the one chat model ``fake-chat``."""
    with FakeOpenAI(models=("fake-chat",)) as server:
        yield server


@pytest.fixture
def model(llm: FakeOpenAI) -> Iterator[ChatModel]:
    """The real client on ``llm``, closed after the test."""
    client = chat_model(llm)
    yield client
    client.close()


@pytest.fixture
def commands(uow_factory) -> MemoryCommands:
    """The memory commands, in Shanghai's time zone, on the real clock."""
    return MemoryCommands(uow_factory, default_timezone="Asia/Shanghai")
