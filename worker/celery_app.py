"""The Celery apps, created without connecting anything.

:data:`app` is the worker's and beat's: ``mnemo worker`` and ``mnemo beat`` point it at the broker with
:func:`configure` when they start. A process that only sends jobs (a front-end's outbox relay) gets an app of
its own from :func:`publisher`, built by its wiring (:func:`shared.app.bootstrap.job_dispatcher`), and leaves
:data:`app` as it was.
"""

from __future__ import annotations

from typing import Any

from celery import Celery
from kombu.exceptions import OperationalError as BrokerConnectionError

from shared.errors import BrokerUnavailable
from worker.database_broker import database_broker_url
from worker.schedule import beat_schedule

QUEUE = "mnemo"
REMINDER_QUEUE = "mnemo-reminders"
"""Reminders travel apart from the rest, and a worker takes from this queue first: a backlog of other jobs
must not make a reminder late."""
MODEL_QUEUE = "mnemo-model"
"""Jobs that spend their time waiting on the language model. A worker runs them on a pool of threads
(``WORKER_LLM_CONCURRENCY`` of them), apart from the prefork slots of the CPU-bound jobs, so a job waiting on
the model holds neither a process nor a core."""
QUEUES = (REMINDER_QUEUE, QUEUE)
"""What a worker's prefork pool consumes, in the order it prefers."""
MODEL_QUEUES = (MODEL_QUEUE,)
"""What a worker's thread pool consumes."""
REMINDER_TASKS = ("mnemo.scan_reminders", "mnemo.deliver_reminder", "mnemo.scan_followups")
MODEL_TASKS = ("mnemo.extract_turn", "mnemo.close_session", "mnemo.summarise_session", "mnemo.run_reviews",
               "mnemo.deliver_followup")
"""The knowledge monitor, episode summaries, reviews and follow-ups: one model call (or a few) and little else.
Dedup, decay, reindexing and the daily maintenance (mostly database work) stay on :data:`QUEUE`."""
SOFT_SHUTDOWN_SECONDS = 2.0
"""How long a cold shutdown lets running tasks finish before it stops them and puts their messages back on
the broker (they are acks_late and idempotent, so they simply run again). The worker a front-end starts
beside itself answers SIGTERM this way (``REMAP_SIGTERM=SIGQUIT``), so a task waiting on a slow LLM cannot
hold the front-end's exit; elsewhere SIGTERM stays Celery's warm shutdown, which waits for every task."""

app = Celery("mnemo", include=["worker.tasks"])


def configure(broker_url: str, *, reminder_scan_seconds: float = 60.0, daily_hour_utc: int = 3) -> Celery:
    """:data:`app` for at-least-once work: late acks, redelivery when a worker dies, one task at a time."""
    _forget_broker_connections()
    app.conf.update(**_settings(broker_url), beat_schedule=beat_schedule(reminder_scan_seconds, daily_hour_utc))
    return app


def publisher(broker_url: str) -> Celery:
    """An app of its own that sends jobs to ``broker_url`` by name, routed and serialised as :data:`app` would
    (no task registered, no schedule); :data:`app` is left untouched."""
    sender = Celery("mnemo-publisher", set_as_current=False)
    sender.conf.update(**_settings(broker_url))
    return sender


def send_on(sender: Celery, task: str, payload: dict[str, Any]) -> None:
    """Put ``mnemo.<task>`` on ``sender``'s broker (the outbox relay's one send).

    Celery raises kombu's ``OperationalError`` for a broker it cannot reach (the Redis or SQL
    driver's connection error is its cause); that, or a socket error on the way, is an outage.
    """
    try:
        sender.send_task(f"mnemo.{task}", kwargs=payload, retry=False)
    except (BrokerConnectionError, ConnectionError, TimeoutError) as exc:
        raise BrokerUnavailable(f"the broker did not take {task}: {exc}") from exc


def _settings(broker_url: str) -> dict[str, Any]:
    """What every Mnemo app is configured with: the broker, the queues and routes, at-least-once delivery."""
    return dict(
        broker_url=database_broker_url(broker_url),
        broker_connection_retry_on_startup=True,
        broker_transport_options=_transport_options(broker_url),
        task_default_queue=QUEUE,
        task_routes={**{name: {"queue": REMINDER_QUEUE} for name in REMINDER_TASKS},
                     **{name: {"queue": MODEL_QUEUE} for name in MODEL_TASKS}},
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_ignore_result=True,
        task_serializer="json",
        accept_content=["json"],
        worker_prefetch_multiplier=1,
        worker_hijack_root_logger=False,
        worker_soft_shutdown_timeout=SOFT_SHUTDOWN_SECONDS,
        timezone="UTC",
        enable_utc=True,
    )


def _transport_options(broker_url: str) -> dict:
    if broker_url.startswith("redis"):
        # A task not acknowledged within this time is delivered again (long LLM jobs finish well within it);
        # the queues are read in the order a worker names them (reminders first), not in turn.
        return {"visibility_timeout": 3600, "queue_order_strategy": "priority"}
    return {}


def _forget_broker_connections() -> None:
    """Reconfiguring :data:`app` (tests, a benchmark switching brokers) must not reuse the old broker's pools.
    ``close()`` drops the connection pool but not the producer pool (Celery 5.7, ``Celery.close``), which would
    keep publishing to the old broker: dropped as Celery's own ``_after_fork`` does."""
    app.close()
    app.amqp._producer_pool = None
