"""``mnemo worker`` runs the jobs that wait on the model on a pool of threads beside its prefork slots.

A real worker (the command itself, prefork for reminders and CPU-bound jobs, and the thread pool it starts
beside itself) on Redis, against a fake model that takes 2 s a call: eight extraction jobs with
``WORKER_LLM_CONCURRENCY=4`` take about two calls' time (not eight, as one slot would; not one, as an unbounded
pool would), and a reminder scan and a CPU-bound job sent behind them run at once.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from bench.fakes.openai_server import FakeOpenAI
from shared.db.memory_models import OutboxJob
from shared.lifecycle import outbox as jobs
from tests import builders
from tests.e2e.bot_process import stop_group
from tests.waiting import wait_for
from worker.celery_app import app, configure
from worker.tasks import send_task

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = "redis://127.0.0.1:6379/7"  # shared with tests/integration/test_model_gate.py: the same xdist group
MODEL_SECONDS = 4.0
"""Long beside a worker's own overhead on a loaded machine (three test processes on two cores add about 3 s to the
eight jobs): four threads take two calls' time and some, two would take four."""
JOBS = 8
THREADS = 4
CONFIG = builders.PER_TURN_CONFIG
answer = builders.turn_or_monitor(builders.model_turn("Nice!", emotion="happy", topic="hobbies"),
                                  builders.monitor_adds("I keep bees"))


@pytest.fixture
def database(system_pg_admin_url, migrated_system_template) -> Iterator[str]:
    with builders.database_with_redis(system_pg_admin_url, migrated_system_template, REDIS_URL) as url:
        yield url


@pytest.fixture
def uow_of(database):
    with builders.units_of_work(database) as units:
        yield units


def owe_extractions(uow_of, llm: FakeOpenAI, users: int) -> None:
    """One turn each for ``users`` users; their extraction jobs wait in the outbox, not yet sent."""
    service = builders.conversation(uow_of, CONFIG, llm, dispatch=None)
    for user in range(users):
        incoming = builders.message(f"I keep bees on my balcony, number {user}.", user=str(100 + user), name=None)
        asyncio.run(service.handle_message(incoming))


def extractions(uow_of) -> list[str]:
    with uow_of() as uow:
        return list(uow.session.scalars(select(OutboxJob.status).where(OutboxJob.task == "extract_turn")))


def succeeded_at(log: Path, task_id: str) -> float | None:
    """When the worker's log first said the task succeeded (polled by the caller), or None."""
    return time.monotonic() if f"[{task_id}] succeeded" in log.read_text(errors="replace") else None


def test_model_jobs_wait_together_on_threads_while_cpu_jobs_and_reminders_run(database, uow_of, tmp_path):
    with FakeOpenAI(models=("fake-chat",)) as llm:
        llm.set_responder(answer)
        owe_extractions(uow_of, llm, JOBS)
        assert extractions(uow_of) == ["pending"] * JOBS

        env = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "LLM_BASE_URL", "METRICS_PORT"}}
        env.update(DATABASE_URL=database, REDIS_URL=REDIS_URL, MNEMO_DATA_DIR=str(tmp_path), PYTHONPATH=str(ROOT),
                   LOG_LEVEL="INFO", LLM_BASE_URL=llm.base_url, LLM_API_KEY="test", LLM_MODEL="fake-chat",
                   LLM_TIMEOUT_SECONDS="30", LLM_SERVER_SLOTS="0",  # a hosted model: no gate between the calls
                   WORKER_CONCURRENCY="2", WORKER_LLM_CONCURRENCY=str(THREADS))
        log = tmp_path / "worker.log"
        with open(log, "wb") as out:
            worker = subprocess.Popen([sys.executable, "-m", "shared.app.cli", "worker", "--name", "pool@test"],
                                      env=env, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT,
                                      start_new_session=True)
        try:
            text = lambda: log.read_text(errors="replace")  # noqa: E731
            wait_for(lambda: text().count("ready.") == 2, 90, lambda: f"both pools to start:\n{text()}")
            assert re.search(r"concurrency:\s+2 \(prefork\)", text()), text()
            assert re.search(rf"concurrency:\s+{THREADS} \(thread\)", text()), text()

            configure(REDIS_URL)
            warm = [app.send_task(name) for name in ("mnemo.scan_reminders", "mnemo.retokenize_search")]
            wait_for(lambda: all(succeeded_at(log, task.id) for task in warm), 60,  # each process's first task
                     lambda: f"the prefork slots' first tasks:\n{text()}")  # builds its context: not timed here
            llm.latency = MODEL_SECONDS
            started = time.monotonic()
            assert jobs.sweep_jobs(uow_of, send_task, datetime.now(UTC), redispatch_after=timedelta(0)) == JOBS
            reminder = app.send_task("mnemo.scan_reminders")  # sent behind the model jobs
            cpu_job = app.send_task("mnemo.retokenize_search")  # a CPU-bound job, behind them too
            finished: dict[str, float] = {}

            def all_done() -> bool:
                for name, task_id in (("reminder", reminder.id), ("cpu", cpu_job.id)):
                    if name not in finished and (at := succeeded_at(log, task_id)) is not None:
                        finished[name] = at
                return extractions(uow_of) == ["done"] * JOBS and len(finished) == 2

            wait_for(all_done, 60, lambda: f"the jobs to finish:\n{text()}")
            elapsed = time.monotonic() - started
        finally:
            stop_group(worker, grace=60)

    calls = JOBS // THREADS
    # four at a time: two calls' time and some, not eight calls (one slot) nor one call (no bound)
    assert calls * MODEL_SECONDS <= elapsed < (calls + 1.5) * MODEL_SECONDS, (elapsed, text())
    # the reminder and the CPU-bound job did not wait behind the model: done before the first call came back
    assert finished["reminder"] - started < MODEL_SECONDS, (finished, text())
    assert finished["cpu"] - started < MODEL_SECONDS, (finished, text())
    assert worker.returncode == 0, text()
    # both pools stopped the warm way (the thread pool told by its parent, and by the group's signal too)
    assert text().count("worker: Warm shutdown") >= 2, text()
    assert "Cold shutdown" not in text(), text()
