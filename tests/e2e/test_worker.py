"""Real Celery workers (subprocesses) on real brokers: Redis, and the PostgreSQL itself.

A turn goes in through the conversation service, its job goes through the outbox and the broker,
and the worker's knowledge monitor (a fake LLM on loopback) stores the memory. Then loss and
duplication: a worker killed mid-task, a flushed Redis, every task run twice.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis
from sqlalchemy import func, select

from bench.databases import create_database, drop_database
from bench.fakes.openai_server import FakeOpenAI
from shared.conversation.messages import IncomingMessage
from shared.conversation.service import ConversationService
from shared.db import migrate
from shared.db.memory_models import Memory, MemoryEvent, OutboxJob
from shared.lifecycle import outbox as jobs
from shared.llm.client import ChatModel
from shared.repositories.uow import UnitOfWork
from tests import builders
from tests.waiting import wait_for
from worker.celery_app import MODEL_QUEUE, QUEUE, app, configure
from worker.tasks import send_task

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = "redis://127.0.0.1:6379/15"
FACT = "I keep bees on my balcony"
CLAIM_SECONDS = 3
"""The workers' claim on a job they run (``OUTBOX_CLAIM_SECONDS``): short, so a dead worker's job is owed soon."""
CONFIG = builders.PER_TURN_CONFIG  # each turn owes its extraction at once
TURN = builders.model_turn("Bees! How lovely.", emotion="happy", topic="bees")
MONITOR = builders.monitor_adds(FACT)
answer = builders.turn_or_monitor(TURN, MONITOR)


def asks_the_monitor(request: dict) -> bool:
    """Hot-path turns ask for the json_schema; the knowledge monitor asks for a JSON object."""
    return not builders.asks_for_a_turn(request)


@pytest.fixture
def llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(models=("fake-chat",)) as server:
        server.set_responder(answer)
        yield server


@pytest.fixture(params=["redis", "postgres"])
def broker(request, system_pg_admin_url, tmp_path) -> Iterator[tuple[str, str | None]]:
    """(database URL, REDIS_URL or None): Redis with PostgreSQL 15, or the embedded PostgreSQL as broker."""
    if request.param == "redis":
        admin, url = system_pg_admin_url, create_database(system_pg_admin_url,
                                                          template=request.getfixturevalue("migrated_system_template"))
    else:
        admin = request.getfixturevalue("embedded_admin_url")
        url = create_database(admin)
        migrate.upgrade(url)
    if request.param == "redis":
        redis.Redis.from_url(REDIS_URL).flushdb()
    yield url, REDIS_URL if request.param == "redis" else None
    drop_database(admin, url)


@pytest.fixture
def uow_of(broker) -> Iterator[Callable[[], UnitOfWork]]:
    with builders.units_of_work(broker[0]) as units:
        yield units


def broker_url(database_url: str, redis_url: str | None) -> str:
    from shared.app.bootstrap import broker_url as resolve
    from shared.settings import load_settings

    return resolve(load_settings(redis_url=redis_url, database_url=database_url), database_url)


class Worker:
    """``mnemo worker`` in a subprocess, with its log file."""

    def __init__(self, database_url: str, redis_url: str | None, llm: FakeOpenAI | None, data_dir: Path, name: str,
                 extra_env: dict[str, str] | None = None):
        env = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "LLM_BASE_URL"}}
        env.update(DATABASE_URL=database_url, MNEMO_DATA_DIR=str(data_dir), PYTHONPATH=str(ROOT), LOG_LEVEL="INFO",
                   **(extra_env or {}))
        if llm is not None:
            env.update(LLM_BASE_URL=llm.base_url, LLM_API_KEY="test", LLM_MODEL="fake-chat", LLM_TIMEOUT_SECONDS="30")
        if redis_url:
            env["REDIS_URL"] = redis_url
        self.log = data_dir / f"{name}.log"
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "shared.app.cli", "worker", "--pool", "threads", "--concurrency", "3",
                 "--name", f"{name}@test"], env=env, cwd=data_dir, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True)
        wait_for(lambda: "ready." in self.text(), 60, lambda: f"{name} to start:\n{self.text()}")

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def finish_what_is_queued(self, broker: tuple[str, str | None]) -> None:
        """Queue a task that does nothing here (a reminder scan with nothing due) behind whatever each of the
        broker's queues holds and wait until this worker has run them: everything queued before was delivered."""
        configure(broker_url(*broker))
        markers = [app.send_task("mnemo.scan_reminders", queue=queue) for queue in (QUEUE, MODEL_QUEUE)]
        for marker in markers:  # on the main queue and the model pool's, behind the rest
            wait_for(lambda marker=marker: f"Task mnemo.scan_reminders[{marker.id}] succeeded" in self.text(), 60,
                     lambda: f"the worker to run the marker task:\n{self.text()}")

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture
def workers(broker, llm, tmp_path) -> Iterator[Callable[[str], Worker]]:
    started: list[Worker] = []

    def start(name: str) -> Worker:
        worker = Worker(broker[0], broker[1], llm, tmp_path, name, {"OUTBOX_CLAIM_SECONDS": f"{CLAIM_SECONDS:g}"})
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


def converse(uow_factory, llm: FakeOpenAI, broker, text: str, *, dispatch: bool = True) -> None:
    configure(broker_url(*broker))
    model = ChatModel(llm.base_url, "test", "fake-chat", timeout_seconds=10)
    send = (lambda ids: jobs.dispatch_jobs(uow_factory, send_task, ids, datetime.now(UTC))) if dispatch else None
    service = ConversationService(uow_factory, CONFIG, chat_model=model, dispatch=send)
    message = IncomingMessage(platform="telegram", chat_id="9", user_id="9", text=text, sent_at=datetime.now(UTC))
    asyncio.run(service.handle_message(message))


def facts(uow_factory) -> list[str]:
    with uow_factory() as uow:
        return list(uow.session.scalars(select(Memory.content).where(Memory.superseded_by.is_(None))))


def jobs_done(uow_factory) -> bool:
    with uow_factory() as uow:
        statuses = set(uow.session.scalars(select(OutboxJob.status)))
    return statuses == {"done"}


def sweep_now(uow_factory, broker) -> int:
    configure(broker_url(*broker))
    return jobs.sweep_jobs(uow_factory, send_task, datetime.now(UTC), redispatch_after=timedelta(0))


def test_a_turn_goes_in_and_the_worker_stores_the_memory(uow_of, llm, broker, workers):
    workers("w1")
    converse(uow_of, llm, broker, "We talked about my hobby: I keep bees on my balcony.")
    wait_for(lambda: FACT in facts(uow_of) and jobs_done(uow_of), 60, "the extracted memory")
    with uow_of() as uow:
        assert uow.session.scalar(select(func.count()).select_from(MemoryEvent)) == 1


def test_a_worker_killed_mid_task_loses_nothing_and_doubles_nothing(uow_of, llm, broker, workers):
    held = {"asked": 0}
    first_is_dead = threading.Event()

    def slow_monitor(request: dict) -> dict:
        if asks_the_monitor(request) and held["asked"] == 0:
            held["asked"] += 1
            first_is_dead.wait(60)  # the first worker dies while it waits for this answer
        return answer(request)

    llm.set_responder(slow_monitor)
    first = workers("w1")
    try:
        converse(uow_of, llm, broker, "I keep bees on my balcony, they are calm.")
        wait_for(lambda: held["asked"] == 1, 60, "the task to be in flight")
        first.kill()
        assert sweep_now(uow_of, broker) == 0  # the dead worker's claim holds the job for a moment
    finally:
        first_is_dead.set()
    workers("w2")
    wait_for(lambda: sweep_now(uow_of, broker), CLAIM_SECONDS * 5, "the dead worker's claim to run out")
    wait_for(lambda: jobs_done(uow_of), 60, "the job to be done by the second worker")
    assert facts(uow_of).count(FACT) == 1


@pytest.mark.parametrize("broker", ["redis"], indirect=True)
def test_jobs_lost_by_a_flushed_redis_are_sent_again_by_the_sweep(uow_of, llm, broker, workers):
    converse(uow_of, llm, broker, "I keep bees on my balcony, they are calm.")
    with uow_of() as uow:
        assert set(uow.session.scalars(select(OutboxJob.status))) == {"sent"}
    redis.Redis.from_url(REDIS_URL).flushdb()
    workers("w1").finish_what_is_queued(broker)
    assert FACT not in facts(uow_of) and not any(asks_the_monitor(request) for request in llm.chat_requests())
    assert sweep_now(uow_of, broker) == 1
    wait_for(lambda: FACT in facts(uow_of) and jobs_done(uow_of), 60, "the re-sent job")


def test_a_worker_takes_a_reminder_before_the_backlog_queued_ahead_of_it(broker, tmp_path):
    configure(broker_url(*broker))
    for _ in range(30):  # a backlog: on a busy day, jobs that each wait on the model
        app.send_task("mnemo.close_idle_sessions")
    reminder = app.send_task("mnemo.scan_reminders")  # routed to the reminders' queue
    worker = Worker(broker[0], broker[1], None, tmp_path, "prefers-reminders")
    try:
        wait_for(lambda: f"Task mnemo.scan_reminders[{reminder.id}] succeeded" in worker.text(), 60,
                 lambda: f"the reminder scan to run:\n{worker.text()}")
    finally:
        worker.stop()
    received = [line for line in worker.text().splitlines() if "] received" in line]
    ahead = next(index for index, line in enumerate(received) if reminder.id in line)
    assert ahead <= (0 if broker[1] else 1), received[:3]  # Redis: first; the database broker takes turns
