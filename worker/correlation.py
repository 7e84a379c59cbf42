"""The log context across the broker (:mod:`shared.log_context`).

A task published while a turn's fields are bound (a bot dispatching the jobs of a turn, the outbox
sweep sending a job again within the context its row kept, a task retried) carries them in the
message's ``mnemo_log`` header; the worker binds them, with the task's name, from the moment the task
starts until it ends, so every line logged meanwhile (Celery's "succeeded" line included) has them.
The handlers below are connected to Celery's signals by :mod:`worker.signals`, never by importing this module.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from typing import Any

from shared import log_context

HEADER = "mnemo_log"
_running: dict[tuple[str, int], AbstractContextManager[None]] = {}
"""The bound context of each task running in this process (threads pool: several at once), by task id and thread
(a message delivered twice may run twice at once under one id)."""


def take_the_context_along(headers: dict[str, Any] | None = None, **_kwargs: Any) -> None:
    """``before_task_publish``: the bound log context into the message's headers."""
    fields = log_context.carried()
    if fields and headers is not None:
        headers[HEADER] = fields


def bind_the_context(task_id: str | None = None, task: Any = None, **_kwargs: Any) -> None:
    """``task_prerun``: the message's log context, and the task's name, bound until the task ends."""
    if task_id is None or task is None:
        return
    request = task.request
    fields = getattr(request, HEADER, None) or (getattr(request, "headers", None) or {}).get(HEADER)
    context = log_context.bound(log_context.carried(fields), task=task.name)
    context.__enter__()
    _running[task_id, threading.get_ident()] = context


def unbind_the_context(task_id: str | None = None, **_kwargs: Any) -> None:
    """``task_postrun``: the task's log context unbound."""
    context = _running.pop((task_id, threading.get_ident()), None) if task_id is not None else None
    if context is not None:
        context.__exit__(None, None, None)
