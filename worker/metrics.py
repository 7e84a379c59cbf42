"""The worker's own metrics, from Celery's signals: each task's outcome and run time, and the end of a pool
process (marked dead in prometheus-client's multiprocess mode, see ``shared/app/multiprocess_metrics.py``, so
its live gauges go with it while its counters stay counted). Imported by ``worker/tasks.py``.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from celery.signals import task_postrun, task_prerun, worker_process_shutdown

from shared.metrics import record

MULTIPROCESS_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"  # prometheus-client's own
OUTCOMES = {"SUCCESS": "succeeded", "RETRY": "retried", "FAILURE": "failed"}
_started: dict[tuple[str, int], float] = {}
"""When each task running in this process started, by task id and thread (the threads pool runs several)."""


@task_prerun.connect
def _task_started(task_id: str | None = None, **_kwargs: Any) -> None:
    if task_id is not None:
        _started[task_id, threading.get_ident()] = time.perf_counter()


@task_postrun.connect
def _task_ended(task_id: str | None = None, task: Any = None, state: str | None = None, **_kwargs: Any) -> None:
    started = _started.pop((task_id, threading.get_ident()), None) if task_id is not None else None
    if task is not None and state in OUTCOMES:
        record.task_finished(task.name, OUTCOMES[state], time.perf_counter() - started if started else None)


@worker_process_shutdown.connect
def _pool_process_ended(pid: int | None = None, **_kwargs: Any) -> None:
    if os.environ.get(MULTIPROCESS_VARIABLE):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid or os.getpid())
