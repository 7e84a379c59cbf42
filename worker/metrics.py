"""The worker's own metrics, from Celery's signals: each task's outcome and run time, and the end of a pool
process (marked dead in prometheus-client's multiprocess mode, see ``shared/app/multiprocess_metrics.py``, so
its live gauges go with it while its counters stay counted). Connected to the signals by :mod:`worker.signals`.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from shared.metrics import record

MULTIPROCESS_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"  # prometheus-client's own
OUTCOMES = {"SUCCESS": "succeeded", "RETRY": "retried", "FAILURE": "failed"}
_started: dict[tuple[str, int], float] = {}
"""When each task running in this process started, by task id and thread (the threads pool runs several)."""


def task_started(task_id: str | None = None, **_kwargs: Any) -> None:
    """``task_prerun``: when the task started."""
    if task_id is not None:
        _started[task_id, threading.get_ident()] = time.perf_counter()


def task_ended(task_id: str | None = None, task: Any = None, state: str | None = None, **_kwargs: Any) -> None:
    """``task_postrun``: the task's outcome and run time counted."""
    started = _started.pop((task_id, threading.get_ident()), None) if task_id is not None else None
    if task is not None and state in OUTCOMES:
        record.task_finished(task.name, OUTCOMES[state], time.perf_counter() - started if started else None)


def pool_process_ended(pid: int | None = None, **_kwargs: Any) -> None:
    """``worker_process_shutdown``: the pool process marked dead for prometheus-client's multiprocess mode."""
    if os.environ.get(MULTIPROCESS_VARIABLE):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid or os.getpid())
