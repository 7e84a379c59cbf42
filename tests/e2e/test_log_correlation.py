"""One turn, two processes, one turn id: the bot's JSON log line and the real worker's (``mnemo worker``,
prefork, ``LOG_FORMAT=json``) carry the same turn id, platform and user hash, whether the job went out
right after the turn or was sent again by the outbox sweep from the row it was owed in. Redis database 8."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from bench.fakes.openai_server import FakeOpenAI
from shared.app.bootstrap import broker_url, job_sender
from shared.db.memory_models import Memory
from shared.lifecycle import outbox as jobs
from shared.repositories.uow import UnitOfWork
from shared.settings import Settings
from tests import builders
from tests.e2e.bot_process import stop_group
from tests.log_capture import json_logs
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = "redis://127.0.0.1:6379/8"
SAID = "I keep bees on my balcony in Quxbridge"
FACT = "keeps bees in Quxbridge"
CONFIG = builders.PER_TURN_CONFIG
answer = builders.turn_or_monitor(builders.model_turn("Bees! How lovely.", emotion="happy", topic="bees"),
                                  builders.monitor_adds(FACT))


@pytest.fixture
def database(system_pg_admin_url, migrated_system_template) -> Iterator[str]:
    with builders.database_with_redis(system_pg_admin_url, migrated_system_template, REDIS_URL) as url:
        yield url


@pytest.fixture
def uow_of(database) -> Iterator[Callable[[], UnitOfWork]]:
    with builders.units_of_work(database) as units:
        yield units


@pytest.fixture
def llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(models=("fake-chat",)) as server:
        server.set_responder(answer)
        yield server


@pytest.fixture
def pool() -> str:
    return "prefork"


@pytest.fixture
def worker_log(database, llm, tmp_path, pool) -> Iterator[Path]:
    """``mnemo worker`` (one child process, or thread) logging JSON at INFO to a file; stopped after the test."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOG_", "LLM_", "REDIS_"))}
    env.update(DATABASE_URL=database, REDIS_URL=REDIS_URL, MNEMO_DATA_DIR=str(tmp_path), PYTHONPATH=str(ROOT),
               LOG_LEVEL="INFO", LOG_FORMAT="json", LLM_BASE_URL=llm.base_url, LLM_API_KEY="key-of-the-fake-llm",
               LLM_MODEL="fake-chat")
    log = tmp_path / "worker.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "shared.app.cli", "worker", "--pool", pool,
                                    "--concurrency", "1", "--name", "logs@test"], env=env, cwd=tmp_path, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for(lambda: " ready." in log.read_text(errors="replace"), 60, lambda: f"the worker:\n{log.read_text()}")
        yield log
    finally:
        stop_group(process)


def send_job(database: str) -> Callable[[str, dict], None]:
    """How the bot's wiring sends a job (:func:`shared.app.bootstrap.job_sender`): its own app, the log context
    in the headers."""
    return job_sender(broker_url(Settings(_env_file=None, redis_url=REDIS_URL, database_url=database), database))


def converse(uow_of, llm: FakeOpenAI, database: str, *, dispatch: bool) -> dict:
    """A turn through the conversation service in this process (the bot); its 'message answered' JSON line."""
    send_task = send_job(database)
    send = (lambda ids: jobs.dispatch_jobs(uow_of, send_task, ids, datetime.now(UTC))) if dispatch else None
    service = builders.conversation(uow_of, CONFIG, llm, dispatch=send)
    message = builders.message(SAID, user="300000000000000009", chat="9", platform="discord", name=None)
    with json_logs(logging.INFO) as out:
        asyncio.run(service.handle_message(message))
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert SAID not in out.getvalue()
    return next(line for line in lines if line["message"].startswith("message answered"))


def extraction_lines(log: Path, turn_id: str) -> list[dict]:
    """The worker's lines logged while it ran the extraction job of this turn."""
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [line for line in lines if line.get("turn") == turn_id and line.get("task") == "mnemo.extract_turn"]


def memories(uow_of) -> list[str]:
    with uow_of() as uow:
        return list(uow.session.scalars(select(Memory.content)))


@pytest.mark.parametrize("pool", ["prefork", "threads"])
def test_the_worker_logs_a_turns_job_with_the_turn_id_the_bot_logged(uow_of, llm, database, worker_log):
    bot = converse(uow_of, llm, database, dispatch=True)
    assert bot["platform"] == "discord"
    assert len(bot["user"]) == 16
    wait_for(lambda: any("succeeded" in line["message"] for line in extraction_lines(worker_log, bot["turn"])), 60,
             lambda: f"the worker's line of turn {bot['turn']}:\n{worker_log.read_text()}")
    worker = extraction_lines(worker_log, bot["turn"])
    assert {(line["platform"], line["user"]) for line in worker} == {("discord", bot["user"])}
    assert any(line["message"].startswith("knowledge monitor: 1 turn(s) read; memories 1 added") for line in worker)
    assert worker[0]["pid"] != bot["pid"]
    assert FACT in memories(uow_of)
    every_line = worker_log.read_text().splitlines()
    assert all(json.loads(line) for line in every_line if line.strip())  # one JSON object a line, banner included
    assert SAID not in worker_log.read_text()
    assert FACT not in worker_log.read_text()


def test_a_job_sent_again_by_the_sweep_still_carries_the_turn_it_was_owed_in(uow_of, llm, database, worker_log):
    bot = converse(uow_of, llm, database, dispatch=False)  # owed, not sent: the sweep sends it
    assert not extraction_lines(worker_log, bot["turn"])
    assert jobs.sweep_jobs(uow_of, send_job(database), datetime.now(UTC), redispatch_after=timedelta(0)) >= 1
    wait_for(lambda: any("succeeded" in line["message"] for line in extraction_lines(worker_log, bot["turn"])), 60,
             lambda: f"the worker's line of turn {bot['turn']}:\n{worker_log.read_text()}")
    assert {line["user"] for line in extraction_lines(worker_log, bot["turn"])} == {bot["user"]}
