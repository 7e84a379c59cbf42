"""The worker, beat and API a front-end starts beside itself stop by their own hand, none killed.

They are started and stopped through :func:`shared.app.processes.companions`, the path ``mnemo chat``,
``mnemo telegram`` and ``mnemo discord`` take on the embedded default, on real brokers: the embedded
PostgreSQL as its own broker (the default), and PostgreSQL 15 with Redis. A task waiting on a slow
LLM must not hold the stop: it goes back to the broker and runs again when a worker next starts.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis
from sqlalchemy import select

from bench.fakes.openai_server import FakeOpenAI
from shared.app.bootstrap import broker_url
from shared.app.processes import companions
from shared.conversation.config import ConversationConfig
from shared.conversation.messages import IncomingMessage
from shared.conversation.service import ConversationService
from shared.db import migrate
from shared.db.engine import make_engine, session_factory
from shared.db.memory_models import OutboxJob
from shared.lifecycle import outbox as jobs
from shared.repositories.uow import UnitOfWork
from shared.settings import load_settings
from tests.e2e.api_process import api_answers, bound_port
from tests.waiting import wait_for
from worker.celery_app import configure
from worker.tasks import send_task

REDIS_URL = "redis://127.0.0.1:6379/11"
START_SECONDS = 90
STOPPED_BY_ITS_OWN_HAND = {0, 128 + signal.SIGTERM}
"""Celery's and beat's own exit on SIGTERM, or ``mnemo``'s handler (uvicorn raises the signal again). One
still running after ``STOP_GRACE_SECONDS`` is killed (-SIGKILL) and says "did not stop" in the log."""
MONITOR = {"operations": [{"op": "ADD", "type": "fact", "subject": "user", "predicate": "hobby",
                           "content": "I keep bees on my balcony", "tier": "long"}]}


class SlowLLM:
    """A fake LLM that keeps every request waiting until released, as a slow model does."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.asked = 0
        self.server = FakeOpenAI(models=("fake-chat",))
        self.server.set_responder(self._answer)

    def _answer(self, _request: dict) -> dict:
        self.asked += 1
        self.released.wait(60)
        return MONITOR


@pytest.fixture
def slow_llm() -> Iterator[SlowLLM]:
    llm = SlowLLM()
    with llm.server:
        try:
            yield llm
        finally:
            llm.released.set()


@pytest.fixture(params=["embedded", "redis"])
def database_url(request, monkeypatch, tmp_path, slow_llm) -> str:
    """A migrated database, its broker (itself, or Redis) and the companions' environment."""
    if request.param == "embedded":
        url = request.getfixturevalue("fresh_embedded_db")
        migrate.upgrade(url)
    else:
        url = request.getfixturevalue("migrated_system_db")
    if request.param == "redis":
        redis.Redis.from_url(REDIS_URL).flushdb()
        monkeypatch.setenv("REDIS_URL", REDIS_URL)
    else:
        monkeypatch.delenv("REDIS_URL", raising=False)
    for name, value in {"MNEMO_DATA_DIR": str(tmp_path), "API_HOST": "127.0.0.1", "API_PORT": "0",
                        "LOG_LEVEL": "INFO", "LLM_BASE_URL": slow_llm.server.base_url, "LLM_API_KEY": "test",
                        "LLM_MODEL": "fake-chat", "LLM_TIMEOUT_SECONDS": "30"}.items():
        monkeypatch.setenv(name, value)
    return url


@pytest.fixture
def units_of_work(database_url: str) -> Iterator[Callable[[], UnitOfWork]]:
    engine = make_engine(database_url)
    sessions = session_factory(engine)
    yield lambda: UnitOfWork(sessions)
    engine.dispose()


def logs(log_dir: Path) -> str:
    return "\n".join(f"--- {path.name}\n{path.read_text(errors='replace')}" for path in sorted(log_dir.glob("*.log")))


def companions_ready(log_dir: Path, roles: tuple[str, ...]) -> bool:
    marks = {"worker": "ready.", "beat": "beat: Starting"}
    for role in roles:
        log_file = log_dir / f"{role}.log"
        if role in marks and not (log_file.exists() and marks[role] in log_file.read_text(errors="replace")):
            return False
    return "api" not in roles or api_answers(bound_port(log_dir / "api.log"))


def run_companions(url: str, log_dir: Path, roles: tuple[str, ...], while_running: Callable[[], None]) -> None:
    """Start the companions as a front-end does, run ``while_running``, stop them; each must exit by
    its own hand (SIGTERM), none killed."""
    with companions(url, log_dir, embedded=True, roles=roles) as started:
        wait_for(lambda: companions_ready(log_dir, roles), START_SECONDS, lambda: f"the companions:\n{logs(log_dir)}")
        while_running()
    exits = {process.args[3]: process.returncode for process in started}
    assert set(exits.values()) <= STOPPED_BY_ITS_OWN_HAND, f"{exits}\n{logs(log_dir)}"


def say_something(units_of_work: Callable[[], UnitOfWork], url: str) -> None:
    """One user turn, answered offline, whose extraction job goes to the broker as a front-end sends it."""
    settings = load_settings(database_url=url, extraction_batch_turns=1)  # the turn owes its extraction at once
    configure(broker_url(settings, url))
    service = ConversationService(units_of_work, ConversationConfig.from_settings(settings), chat_model=None,
                                  dispatch=lambda ids: jobs.dispatch_jobs(units_of_work, send_task, ids,
                                                                          datetime.now(UTC)))
    message = IncomingMessage(platform="telegram", chat_id="7", user_id="7", text="I keep bees on my balcony.",
                              sent_at=datetime.now(UTC))
    asyncio.run(service.handle_message(message))


def extraction_status(units_of_work: Callable[[], UnitOfWork]) -> list[str]:
    with units_of_work() as uow:
        return list(uow.session.scalars(select(OutboxJob.status).where(OutboxJob.task == "extract_turn")))


def test_worker_beat_and_api_stop_by_their_own_hand_and_nothing_is_killed(database_url, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="shared.app.processes"):
        run_companions(database_url, tmp_path / "logs", ("worker", "beat", "api"), lambda: None)
    assert "did not stop" not in caplog.text


def test_a_task_waiting_on_a_slow_llm_does_not_hold_the_stop_and_runs_again_next_time(
        database_url, units_of_work, slow_llm, tmp_path, caplog):
    def leave_a_task_in_flight() -> None:
        say_something(units_of_work, database_url)
        wait_for(lambda: slow_llm.asked >= 1, 60, lambda: f"the extraction to ask the LLM:\n{logs(tmp_path / 'a')}")

    with caplog.at_level(logging.WARNING, logger="shared.app.processes"):
        run_companions(database_url, tmp_path / "a", ("worker", "beat", "api"), leave_a_task_in_flight)
    assert "did not stop" not in caplog.text
    assert extraction_status(units_of_work) == ["sent"]

    slow_llm.released.set()  # no beat this time: only the broker can hand the job to the new worker
    run_companions(database_url, tmp_path / "b", ("worker",),
                   lambda: wait_for(lambda: extraction_status(units_of_work) == ["done"], 60,
                                    lambda: f"the job to run again:\n{logs(tmp_path / 'b')}"))
    assert slow_llm.asked >= 2  # it ran again, and the LLM was asked again
