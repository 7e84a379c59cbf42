"""The user's turn first on a one-slot model server the bots and the workers share, and a running job never
sent again while its worker lives (issue 30, item 3).

The fake server answers one chat request at a time, in the order they arrived, as llama.cpp with one slot
does; each process (here: each chat model with a gate of its own) counts its calls in the same Redis or
PostgreSQL.
"""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime, timedelta
from itertools import pairwise

import pytest
import redis
from sqlalchemy import select

from bench.fakes.openai_server import FakeOpenAI
from bench.llm_calls import TURN, request_kind
from shared.conversation.prompt import OUTPUT_RULES
from shared.db.engine import make_engine
from shared.db.memory_models import OutboxJob
from shared.db.model_gate import BACKGROUND_KEY, LIVE_KEY, PostgresModelGate, RedisModelGate, server_slots
from shared.lifecycle import outbox as jobs
from shared.llm.client import ChatModel
from shared.llm.gate import GatedCalls
from tests.builders import (
    PER_TURN_CONFIG,
    conversation,
    message,
    model_turn,
    units_of_work,
    worker_units_of_work,
)
from tests.waiting import wait_for
from worker import tasks

GATE_REDIS = "redis://127.0.0.1:6379/7"  # shared with tests/e2e/test_model_pool.py: every other database is taken
pytestmark = pytest.mark.xdist_group("test_model_pool")  # so both run on one test process, one after the other
CALL_SECONDS = 0.5
"""One call's time on the fake server."""
BACKGROUND_CALLERS = 3
SLACK = 0.25
"""What a turn may wait beyond one background call: the gate's poll, the threads, a busy machine."""
TURN_ANSWER = model_turn("Nice to meet you.")
CONFIG = PER_TURN_CONFIG


@pytest.fixture
def one_slot_server():
    with FakeOpenAI(slots=1, latency=CALL_SECONDS) as llm:
        llm.set_responder(lambda body: TURN_ANSWER if request_kind(body) == TURN else {"operations": [{"op": "SKIP"}]})
        yield llm


@pytest.fixture(params=["redis", "postgresql"])
def new_gate(request, migrated_system_db):
    """A gate as a new process would open it on the deployment's shared store."""
    if request.param == "redis":
        client = redis.Redis.from_url(GATE_REDIS)
        client.delete(LIVE_KEY, BACKGROUND_KEY)
        yield lambda: RedisModelGate(GATE_REDIS, slots=1)
        client.delete(LIVE_KEY, BACKGROUND_KEY)
        client.close()
        return
    engine = make_engine(migrated_system_db)
    yield lambda: PostgresModelGate(engine, slots=1)
    engine.dispose()


def model(llm: FakeOpenAI, gate=None) -> ChatModel:
    return ChatModel(llm.base_url, "x", "fake-chat", timeout_seconds=30,
                     gate=GatedCalls(gate) if gate is not None else None)


def turn_waits_behind_background(llm: FakeOpenAI, gate_of, callers: int = BACKGROUND_CALLERS) -> float:
    """Background callers keep the one slot busy; then a user's turn arrives. How long the turn waited for the
    slot on the server."""
    stop = threading.Event()

    def keep_extracting(worker: ChatModel) -> None:
        while not stop.is_set():
            worker.complete_json([{"role": "system", "content": "Answer in JSON."},
                                  {"role": "user", "content": "anything to remember?"}])

    callers = [threading.Thread(target=keep_extracting, args=(model(llm, gate_of()),))
               for _ in range(callers)]
    for caller in callers:
        caller.start()
    try:
        time.sleep(CALL_SECONDS * 1.5)  # the server is busy with background work, and more is queued
        bot = model(llm, gate_of())
        asyncio.run(bot.acomplete_turn([{"role": "system", "content": f"You are Mnemo.\n{OUTPUT_RULES}"},
                                        {"role": "user", "content": "hi"}]))
    finally:
        stop.set()
        for caller in callers:
            caller.join()
    [turn] = [served for served in llm.served if request_kind(served.body) == TURN]
    assert len(llm.served) > 2  # background calls ran before and after the turn
    return turn.started - turn.arrived


def test_without_the_gate_a_turn_waits_behind_every_queued_background_call(one_slot_server):
    # more callers than the gated case: a busy machine leaves gaps between one caller's calls, and the queue the
    # turn meets must still hold more than one
    waited = turn_waits_behind_background(one_slot_server, lambda: None, callers=BACKGROUND_CALLERS + 2)
    assert waited > CALL_SECONDS * 1.5


def test_a_live_turn_behind_background_work_starts_within_one_background_call(one_slot_server, new_gate):
    waited = turn_waits_behind_background(one_slot_server, new_gate)
    assert waited <= CALL_SECONDS + SLACK


def test_background_calls_share_the_servers_slots_across_processes(one_slot_server, new_gate):
    def extract(worker: ChatModel) -> None:
        worker.complete_json([{"role": "user", "content": "JSON please"}])

    callers = [threading.Thread(target=extract, args=(model(one_slot_server, new_gate()),)) for _ in range(3)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    served = sorted(one_slot_server.served, key=lambda s: s.started)
    assert len(served) == 3
    assert all(later.arrived >= earlier.finished - 0.05 for earlier, later in pairwise(served))


def test_a_gate_forgets_a_hold_whose_process_died(new_gate):
    gate = new_gate()
    gate.enter_live("dead-process-turn", seconds=0.2)
    assert not gate.try_background("worker", 5, yield_to_live=True)
    time.sleep(0.3)
    assert gate.try_background("worker", 5, yield_to_live=True)
    assert not new_gate().try_background("other-worker", 5, yield_to_live=False)  # the one slot is taken
    gate.leave("worker")
    assert new_gate().try_background("other-worker", 5, yield_to_live=False)


def test_a_server_on_this_machine_gets_one_slot_unless_told_and_a_hosted_one_none():
    assert server_slots(None, "http://127.0.0.1:8080/v1") == 1
    assert server_slots(None, "http://localhost:11434/v1") == 1
    assert server_slots(4, "http://127.0.0.1:8080/v1") == 4
    assert server_slots(0, "http://127.0.0.1:8080/v1") == 0
    assert server_slots(None, "https://api.openai.com/v1") == 0
    assert server_slots(None, None) == 0


@pytest.fixture
def worker_on(migrated_system_db, monkeypatch, tmp_path, one_slot_server):
    """Units of work, and a worker process's environment on the same database and the one-slot server."""
    with worker_units_of_work(migrated_system_db, monkeypatch, tmp_path, LLM_BASE_URL=one_slot_server.base_url,
                              LLM_MODEL="fake-chat") as units:
        yield units


def test_a_job_running_past_the_sweeps_age_is_not_sent_again_while_its_worker_lives(worker_on, one_slot_server):
    service = conversation(worker_on, CONFIG, model(one_slot_server))
    asyncio.run(service.handle_message(message("I live in Lisbon", user="9", platform="console", name=None,
                                               message_id="1")))
    with worker_on() as uow:
        [(job_id, task, payload)] = [(job.id, job.task, dict(job.payload)) for job in uow.session.scalars(
            select(OutboxJob).where(OutboxJob.task == "extract_turn"))]
    one_slot_server.queue_reply({"operations": [{"op": "SKIP"}]}, delay=12 * CALL_SECONDS)
    running = threading.Thread(target=getattr(tasks, task).run, kwargs={"job_id": job_id, **payload})
    running.start()

    def claimed() -> bool:
        with worker_on() as uow:
            return uow.session.get(OutboxJob, job_id).running_until is not None

    wait_for(claimed, 30, "the first delivery to claim the job")  # not a fixed sleep: a loaded machine is slow
    resent: list[tuple[str, dict]] = []
    swept = jobs.sweep_jobs(worker_on, lambda name, kwargs: resent.append((name, kwargs)), datetime.now(UTC),
                            redispatch_after=timedelta(0))
    tasks.extract_turn.run(job_id=job_id, **payload)  # the broker delivers it again: it is left to the first
    running.join()
    assert swept == 0
    assert resent == []
    with worker_on() as uow:
        job = uow.session.get(OutboxJob, job_id)
        assert (job.status, job.running_until) == ("done", None)
    extractions = [served for served in one_slot_server.served if request_kind(served.body) != TURN]
    assert len(extractions) == 1


def test_a_job_whose_worker_died_is_owed_again_once_its_claim_runs_out(uow_factory_committed):
    now = datetime.now(UTC)
    with uow_factory_committed() as uow:
        job_id = uow.outbox.add("extract_turn", {"turn_id": 1})
        uow.outbox.mark_sent(job_id, now - timedelta(minutes=10))
        assert uow.outbox.claim(job_id, now, now + timedelta(seconds=30))  # the worker then dies
        uow.commit()
    sent: list[str] = []
    assert jobs.sweep_jobs(uow_factory_committed, lambda name, _: sent.append(name), now) == 0
    later = now + timedelta(seconds=30) + jobs.REDISPATCH_AFTER
    assert jobs.sweep_jobs(uow_factory_committed, lambda name, _: sent.append(name), later) == 1
    assert sent == ["extract_turn"]
    with uow_factory_committed() as uow:
        assert uow.outbox.claim(job_id, later, later + timedelta(seconds=30))


def test_a_claim_is_renewed_while_its_worker_runs_and_released_after(uow_factory_committed):
    with uow_factory_committed() as uow:
        job_id = uow.outbox.add("extract_turn", {"turn_id": 1})
        uow.commit()
    clock = lambda: datetime.now(UTC)  # noqa: E731
    with jobs.running(uow_factory_committed, job_id, clock, lease=timedelta(seconds=0.3)) as mine:
        assert mine
        with jobs.running(uow_factory_committed, job_id, clock, lease=timedelta(seconds=0.3)) as second:
            assert not second
        time.sleep(0.6)  # twice the lease: only the renewals keep it
        with uow_factory_committed() as uow:
            assert not uow.outbox.claim(job_id, clock(), clock())
            assert uow.outbox.owed(clock(), limit=10) == []
    with uow_factory_committed() as uow:
        assert uow.session.get(OutboxJob, job_id).running_until is None


@pytest.fixture
def uow_factory_committed(migrated_system_db):
    with units_of_work(migrated_system_db) as units:
        yield units
