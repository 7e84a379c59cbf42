"""Which queue each task travels on: the model's jobs to the thread pool, reminders first, the rest on prefork."""

from __future__ import annotations

import worker.tasks  # noqa: F401  (registers the tasks)
from worker.celery_app import MODEL_QUEUE, MODEL_TASKS, QUEUE, QUEUES, REMINDER_QUEUE, app, configure


def queue_of(task: str) -> str:
    return app.amqp.router.route({}, task)["queue"].name


def test_every_task_travels_on_its_pool_s_queue():
    configure("redis://127.0.0.1:6379/7")
    for task in ("mnemo.extract_turn", "mnemo.close_session", "mnemo.summarise_session", "mnemo.run_reviews",
                 "mnemo.deliver_followup"):  # a follow-up's words are one model call
        assert queue_of(task) == MODEL_QUEUE
    for task in ("mnemo.scan_reminders", "mnemo.deliver_reminder", "mnemo.scan_followups"):
        assert queue_of(task) == REMINDER_QUEUE
    for task in ("mnemo.run_dedup", "mnemo.run_decay", "mnemo.retokenize_search", "mnemo.run_maintenance",
                 "mnemo.sweep_outbox", "mnemo.close_idle_sessions", "mnemo.embed_memory", "mnemo.embed_round"):
        assert queue_of(task) == QUEUE
    assert set(MODEL_TASKS) <= set(app.tasks)
    assert QUEUES[0] == REMINDER_QUEUE  # the prefork slots never wait on the model
    assert MODEL_QUEUE not in QUEUES
