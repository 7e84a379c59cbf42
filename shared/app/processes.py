"""Running the worker, beat and the web panel's API beside a front-end on the embedded default.

``mnemo chat``, ``mnemo telegram`` and ``mnemo discord`` on the embedded database start them as
separate processes (``mnemo worker`` / ``beat`` / ``api``) given this process's database URL, so the
one process that owns the embedded PostgreSQL hands it to the others. They are stopped with SIGTERM
before the owner stops the database, and each exits by itself within seconds: beat and uvicorn at once,
the worker after giving a running task Celery's soft-shutdown seconds to finish (then the task goes back
to the broker and runs again next time; tasks are acks_late and idempotent). SIGKILL after
:data:`STOP_GRACE_SECONDS` is only for a process that hangs. With ``DATABASE_URL`` set they run as their
own services (docker compose) and nothing is started here.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from shared.app.logs import open_private_log

STOP_GRACE_SECONDS = 15
COMPANION_ROLES = ("worker", "beat", "api")
"""What a front-end starts beside itself on the embedded default."""
ROLE_ENVIRONMENT = {"worker": {"REMAP_SIGTERM": "SIGQUIT"}}
"""SIGTERM is Celery's cold shutdown for a worker started here, not its warm one, which waits for every
running task however long it takes (an extraction waiting on a slow LLM held ``mnemo chat`` until it was
killed). billiard reads this variable once, when the worker imports it, so it is set before the start."""
log = logging.getLogger(__name__)


def companions(database_url: str, log_dir: Path, *, embedded: bool, wanted: bool | None = None,
               roles: tuple[str, ...] = COMPANION_ROLES) -> contextlib.AbstractContextManager:
    """:func:`background_processes` for ``roles`` when this process owns the embedded database (or when
    ``wanted``), otherwise nothing."""
    start = embedded if wanted is None else wanted
    return background_processes(database_url, log_dir, roles) if start else contextlib.nullcontext([])


@contextmanager
def background_processes(database_url: str, log_dir: Path, roles: tuple[str, ...] = ("worker", "beat"),
                         extra_env: dict[str, str] | None = None) -> Iterator[list[subprocess.Popen]]:
    """Start ``mnemo <role>`` for each role, logging to ``log_dir/<role>.log`` (owner-only); stop them on exit."""
    env = {**os.environ, "DATABASE_URL": database_url, **(extra_env or {})}
    started: list[subprocess.Popen] = []
    try:
        for role in roles:
            started.append(_start(role, {**env, **ROLE_ENVIRONMENT.get(role, {})}, log_dir / f"{role}.log"))
        yield started
    finally:
        stop_processes(started)


def _start(role: str, env: dict[str, str], log_path: Path) -> subprocess.Popen:
    """``mnemo <role>`` in its own session (a front-end's Ctrl-C is not theirs), logging to ``log_path``."""
    with open_private_log(log_path) as log_file:
        return subprocess.Popen([sys.executable, "-m", "shared.app.cli", role], env=env, stdout=log_file,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)


def stop_processes(processes: list[subprocess.Popen], grace: float = STOP_GRACE_SECONDS) -> None:
    """SIGTERM to each, then wait for each to exit by itself; only one still running after ``grace`` is killed."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            log.warning("mnemo %s did not stop within %ss; killing it", " ".join(process.args[3:]), grace)
        _kill_group(process.pid)  # also pool children a stopped worker may have left behind
        process.wait()


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # the whole group is gone already
        os.killpg(pgid, signal.SIGKILL)
