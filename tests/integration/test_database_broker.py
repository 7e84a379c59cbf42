"""The PostgreSQL broker when several processes send their first job at once on a fresh database.

A front-end sends its first turn's jobs while the worker beside it is still starting; both reach
kombu's lazily created tables and queue row together. Each round forks processes that configure their
app, wait at a barrier until every one of them has, and then send; every send must get through (before
the fix, about one round in three lost a job to a unique violation and left it for the outbox sweep).
"""

from __future__ import annotations

import multiprocessing
import subprocess
import sys

import psycopg
import pytest

from bench.databases import create_database, drop_database
from shared.db.engine import sqlalchemy_url
from worker.celery_app import configure
from worker.tasks import send_task

PROCESSES = 4
ROUNDS = 4


BARRIER_SECONDS = 60
"""How long a sender waits for the others at the barrier: bounds a hang (a sender that died starting)."""


def send_together(broker_url: str, barrier, results) -> None:
    configure(broker_url)
    try:
        barrier.wait(timeout=BARRIER_SECONDS)  # every sender configured: all send at once
        send_task("extract_knowledge", {"job_id": 0})
        results.put("sent")
    except Exception as exc:  # reported to the test as its text
        results.put(f"{type(exc).__name__}: {exc}")


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_processes_sending_their_first_job_together_all_get_through(system_pg_admin_url, round_):
    url = create_database(system_pg_admin_url)
    try:
        context = multiprocessing.get_context("fork")
        results = context.Queue()
        barrier = context.Barrier(PROCESSES)
        broker = "sqla+" + sqlalchemy_url(url)  # what a deployment without REDIS_URL uses
        senders = [context.Process(target=send_together, args=(broker, barrier, results)) for _ in range(PROCESSES)]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join(timeout=60)
        outcomes = [results.get(timeout=5) for _ in senders]
        assert outcomes == ["sent"] * PROCESSES
        with psycopg.connect(url) as connection:
            assert connection.execute("SELECT count(*) FROM kombu_message").fetchone()[0] == PROCESSES
            assert connection.execute("SELECT count(*) FROM kombu_queue").fetchone()[0] == 1
    finally:
        drop_database(system_pg_admin_url, url)


WAIT_AN_HOUR = """
import socket, sys
from kombu import Connection
from worker.database_broker import database_broker_url
with Connection(database_broker_url(sys.argv[1])) as connection:
    connection.default_channel.queue_declare(queue="idle")
    try:
        connection.drain_events(timeout=3600)
    except socket.timeout:
        print("back to the caller")
"""


def test_a_worker_waiting_for_work_returns_to_check_for_a_stop_however_long_it_was_asked_to_wait(fresh_system_db):
    """Celery's loop asks a polling transport to wait 2 s and looks at its stop flag only in between; this
    transport hands control back after ``STOP_CHECK_SECONDS`` even when asked to wait an hour. (In a process
    of its own: kombu's SQLAlchemy transport inside pytest's process upsets its AST rewriting at exit.)"""
    waited = subprocess.run([sys.executable, "-c", WAIT_AN_HOUR, "sqla+" + sqlalchemy_url(fresh_system_db)],
                            capture_output=True, text=True, timeout=60)
    assert waited.stdout.strip() == "back to the caller", waited.stderr
