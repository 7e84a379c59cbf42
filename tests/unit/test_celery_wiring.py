"""What a process's wiring does to Celery, and nothing behind its back: a front-end's job dispatcher sends on an
app of its own and leaves the worker's app as it was; Celery's signals are connected by the explicit calls of
worker/signals.py, never by importing a module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from sqlalchemy.orm import sessionmaker

from shared.app import bootstrap
from shared.db.engine import make_engine
from shared.settings import Settings
from worker.celery_app import MODEL_QUEUE, REMINDER_QUEUE, app, publisher

ROOT = Path(__file__).resolve().parents[2]
BROKER = "redis://127.0.0.1:6379/15"  # never connected to: building an app or a dispatcher connects nothing

RECEIVERS = """
import json
import weakref

import celery.signals

import shared.app.bootstrap, shared.app.cli, worker.beat, worker.tasks  # every module that might connect one
from worker import signals


def ours() -> list[str]:
    \"\"\"Mnemo's receivers connected to any Celery signal, as 'signal: module.function'.\"\"\"
    found = []
    for name in celery.signals.__all__:
        for _key, receiver in getattr(celery.signals, name).receivers:
            function = receiver() if isinstance(receiver, weakref.ref) else receiver
            module = getattr(function, "__module__", None) or ""
            if module.split(".")[0] in ("shared", "bot", "worker", "bench"):
                found.append(f"{name}: {module}.{function.__name__}")
    return sorted(found)


steps = [ours()]
signals.connect_publishing_signals()
steps.append(ours())
signals.connect_signals()
signals.connect_signals()  # twice: still one of each
steps.append(ours())
print(json.dumps(steps))
"""


def test_importing_connects_no_signal_and_the_explicit_calls_connect_each_once() -> None:
    done = subprocess.run([sys.executable, "-c", RECEIVERS], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    imported, publishing, worker = json.loads(done.stdout.splitlines()[-1])
    assert imported == []
    assert publishing == ["before_task_publish: worker.correlation.take_the_context_along"]
    assert worker == sorted([
        "before_task_publish: worker.correlation.take_the_context_along",
        "task_prerun: worker.correlation.bind_the_context",
        "task_postrun: worker.correlation.unbind_the_context",
        "task_prerun: worker.metrics.task_started",
        "task_postrun: worker.metrics.task_ended",
        "worker_process_shutdown: worker.metrics.pool_process_ended",
        "worker_process_init: worker.context.forget_inherited_context",
    ])


def test_a_front_ends_job_dispatcher_leaves_the_workers_app_as_it_was() -> None:
    before = (app.conf.broker_url, app.conf.beat_schedule)
    engine = make_engine("postgresql://mnemo@127.0.0.1:9/never")
    rt = bootstrap.Runtime(settings=Settings(_env_file=None, redis_url=BROKER), database_url="postgresql:///never",
                           engine=engine, sessions=sessionmaker(engine))
    bootstrap.job_dispatcher(rt)
    assert (app.conf.broker_url, app.conf.beat_schedule) == before


def test_a_publisher_routes_each_job_as_the_workers_app_does() -> None:
    sender = publisher(BROKER)
    assert sender is not app and sender.conf.broker_url == BROKER
    assert sender.amqp.router.route({}, "mnemo.extract_turn")["queue"].name == MODEL_QUEUE
    assert sender.amqp.router.route({}, "mnemo.deliver_reminder")["queue"].name == REMINDER_QUEUE
    assert sender.conf.task_acks_late and sender.conf.task_serializer == "json"
