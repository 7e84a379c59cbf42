"""The Celery app. Created without connecting anything; ``configure`` points it at the broker."""

from __future__ import annotations

from celery import Celery

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
    """Settings for at-least-once work: late acks, redelivery when a worker dies, one task at a time."""
    _forget_broker_connections()
    app.conf.update(
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
        beat_schedule=beat_schedule(reminder_scan_seconds, daily_hour_utc),
    )
    return app


def _transport_options(broker_url: str) -> dict:
    if broker_url.startswith("redis"):
        # A task not acknowledged within this time is delivered again (long LLM jobs finish well within it);
        # the queues are read in the order a worker names them (reminders first), not in turn.
        return {"visibility_timeout": 3600, "queue_order_strategy": "priority"}
    return {}


def _forget_broker_connections() -> None:
    """Reconfiguring (tests, or a process that switched brokers) must not reuse the old broker's pools."""
    app.close()
    app.amqp._producer_pool = None
