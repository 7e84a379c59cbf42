"""The log context across the broker (:mod:`shared.log_context`).

A task published while a turn's fields are bound (a bot dispatching the jobs of a turn, the outbox
sweep sending a job again within the context its row kept, a task retried) carries them in the
message's ``mnemo_log`` header; the worker binds them, with the task's name, from the moment the task
starts until it ends, so every line logged meanwhile (Celery's "succeeded" line included) has them.
Imported by ``worker/tasks.py``, which every process that publishes or runs tasks imports.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from typing import Any

from celery.signals import before_task_publish, task_postrun, task_prerun

from shared import log_context

HEADER = "mnemo_log"
_running: dict[tuple[str, int], AbstractContextManager[None]] = {}
"""The bound context of each task running in this process (threads pool: several at once), by task id and thread
(a message delivered twice may run twice at once under one id)."""


@before_task_publish.connect
def _take_the_context_along(headers: dict[str, Any] | None = None, **_kwargs: Any) -> None:
    fields = log_context.carried()
    if fields and headers is not None:
        headers[HEADER] = fields


@task_prerun.connect
def _bind_the_context(task_id: str | None = None, task: Any = None, **_kwargs: Any) -> None:
    if task_id is None or task is None:
        return
    request = task.request
    fields = getattr(request, HEADER, None) or (getattr(request, "headers", None) or {}).get(HEADER)
    context = log_context.bound(log_context.carried(fields), task=task.name)
    context.__enter__()
    _running[task_id, threading.get_ident()] = context


@task_postrun.connect
def _unbind_the_context(task_id: str | None = None, **_kwargs: Any) -> None:
    context = _running.pop((task_id, threading.get_ident()), None) if task_id is not None else None
    if context is not None:
        context.__exit__(None, None, None)
