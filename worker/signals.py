"""Every Celery signal Mnemo listens to, connected here by an explicit call and never by importing a module.

Celery's signals belong to the process, not to an app, so whoever starts a process says which it needs:

- :func:`connect_publishing_signals`, for a process that sends jobs: the log context bound where a job is sent
  travels in its headers (:mod:`worker.correlation`). A front-end's wiring calls it
  (:func:`shared.app.bootstrap.job_sender`).
- :func:`connect_signals`, for a worker (``mnemo worker``, shared/app/cli.py, before ``worker_main``): the
  above (its tasks send jobs and retry themselves), the log context bound while a task runs, each task's
  outcome and time counted (:mod:`worker.metrics`), and a forked pool process that forgets its parent's
  database connections (:mod:`worker.context`).

Connecting twice changes nothing (Celery keeps one connection per receiver). A receiver runs in the order it
was connected: the log context is bound before a task's clock starts and unbound before its outcome is counted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celery.signals import before_task_publish, task_postrun, task_prerun, worker_process_init, worker_process_shutdown
from celery.utils.dispatch import Signal

from worker import context, correlation
from worker import metrics as task_metrics

Receivers = tuple[tuple[Signal, Callable[..., Any]], ...]

PUBLISHING: Receivers = ((before_task_publish, correlation.take_the_context_along),)
RUNNING: Receivers = (
    (task_prerun, correlation.bind_the_context),
    (task_postrun, correlation.unbind_the_context),
    (task_prerun, task_metrics.task_started),
    (task_postrun, task_metrics.task_ended),
    (worker_process_shutdown, task_metrics.pool_process_ended),
    (worker_process_init, context.forget_inherited_context),
)


def connect_publishing_signals() -> None:
    """What a process that sends jobs needs: each job carries the log context it was sent in."""
    _connect(PUBLISHING)


def connect_signals() -> None:
    """What a worker needs: the publishing signals, and those of the tasks it runs and of its pool processes."""
    _connect(PUBLISHING + RUNNING)


def _connect(receivers: Receivers) -> None:
    for signal, receiver in receivers:
        signal.connect(receiver, weak=False)
