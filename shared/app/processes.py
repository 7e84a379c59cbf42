"""Running the worker, beat and the web panel's API beside a front-end on the embedded default.

``mnemo chat``, ``mnemo telegram`` and ``mnemo discord`` on the embedded database start them as
separate processes (``mnemo worker`` / ``beat`` / ``api``) given this process's database URL, so the
one process that owns the embedded PostgreSQL hands it to the others. They are stopped with SIGTERM
before the owner stops the database, and each exits by itself within seconds: beat and uvicorn at once,
the worker after giving a running task Celery's soft-shutdown seconds to finish (then the task goes back
to the broker and runs again next time; tasks are acks_late and idempotent). SIGKILL after
:data:`STOP_GRACE_SECONDS` is only for a process that hangs. With ``DATABASE_URL`` set they run as their
own services (docker compose) and nothing is started here. With ``METRICS_PORT`` set, the front-end's
companions serve their operations endpoints on the ports after it, in :data:`COMPANION_ROLES` order (worker
+1, beat +2, api +3; 0 stays 0, any free port); unset, they serve none (whatever ``.env`` says).

A front-end that dies without stopping them (``kill -9``, a crash) leaves none behind: each holds the read
end of a pipe (its *lifeline*) whose write end only the front-end has, and stops itself the usual way when
the pipe closes. They also share a lock on ``companions.lock`` in the log directory for as long as any of
them runs, so a front-end started after a dead one waits for its last companions to go before starting
its own (a second beat would see the first one's lock and exit; a second API would find its port taken).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from shared.app.logs import PRIVATE_DIRECTORY_MODE, open_private_log

STOP_GRACE_SECONDS = 15
LIFELINE_VARIABLE = "MNEMO_LIFELINE_FD"
"""The descriptor of a companion's lifeline: nothing is written to it; it reads end-of-file once the
front-end that started the companion has exited, however it ended."""
COMPANIONS_LOCK = "companions.lock"
"""Held shared by every companion for as long as it runs (its pool children too)."""
FRONT_END_LOCK = "front-end.lock"
"""Held by the front-end whose companions run, for as long as they do."""
EARLIER_COMPANIONS_POLL_SECONDS = 0.2
COMPANION_ROLES = ("worker", "beat", "api")
"""What a front-end starts beside itself on the embedded default."""
ROLE_ENVIRONMENT = {"worker": {"REMAP_SIGTERM": "SIGQUIT"}}
"""SIGTERM is Celery's cold shutdown for a worker started here, not its warm one, which waits for every
running task however long it takes (an extraction waiting on a slow LLM held ``mnemo chat`` until it was
killed). billiard reads this variable once, when the worker imports it, so it is set before the start."""
log = logging.getLogger(__name__)


def companions(database_url: str, log_dir: Path, *, embedded: bool, wanted: bool | None = None,
               roles: tuple[str, ...] = COMPANION_ROLES,
               metrics_port: int | None = None) -> contextlib.AbstractContextManager[list[subprocess.Popen[bytes]]]:
    """:func:`background_processes` for ``roles`` on the embedded database (or when ``wanted``), otherwise
    nothing. On the embedded default a front-end beside another live one (``mnemo telegram`` beside
    ``mnemo chat``) uses the first one's companions instead of starting a second set."""
    start = embedded if wanted is None else wanted
    if start and wanted is None and _front_end_running(log_dir):
        log.info("the worker, beat and API of another front-end in %s serve this one too", log_dir.parent)
        start = False
    if not start:
        return contextlib.nullcontext([])
    return background_processes(database_url, log_dir, roles, metrics_port=metrics_port)


def companion_metrics_port(front_end_port: int | None, role: str) -> str:
    """``METRICS_PORT`` for a companion: the front-end's plus the role's place (1-based); empty (none) when the
    front-end has none, 0 (any free port) when it has 0."""
    if front_end_port is None or role not in COMPANION_ROLES:
        return ""
    if front_end_port == 0:
        return "0"
    return str(front_end_port + 1 + COMPANION_ROLES.index(role))


@contextmanager
def background_processes(database_url: str, log_dir: Path, roles: tuple[str, ...] = ("worker", "beat"),
                         extra_env: dict[str, str] | None = None,
                         metrics_port: int | None = None) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Start ``mnemo <role>`` for each role, logging to ``log_dir/<role>.log`` (owner-only); stop them on exit."""
    log_dir.mkdir(mode=PRIVATE_DIRECTORY_MODE, parents=True, exist_ok=True)
    front_end = _lock(log_dir / FRONT_END_LOCK, fcntl.LOCK_EX | fcntl.LOCK_NB)
    shared_lock = _wait_for_earlier_companions(log_dir / COMPANIONS_LOCK) if front_end is not None else None
    lifeline, kept_end = os.pipe()
    env = {**os.environ, "DATABASE_URL": database_url, LIFELINE_VARIABLE: str(lifeline), **(extra_env or {})}
    held = tuple(fd for fd in (lifeline, shared_lock) if fd is not None)
    started: list[subprocess.Popen[bytes]] = []
    try:
        try:
            with stop_signals_deferred():  # a Ctrl-C mid-start would lose a companion already running
                for role in roles:
                    role_env = {**env, **ROLE_ENVIRONMENT.get(role, {}),
                                "METRICS_PORT": companion_metrics_port(metrics_port, role)}
                    started.append(_start(role, role_env, log_dir / f"{role}.log", held))
        finally:
            for fd in held:  # from now on only the companions hold them
                os.close(fd)
        yield started
    finally:
        stop_processes(started)
        os.close(kept_end)
        if front_end is not None:
            os.close(front_end)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def stop_signals_deferred() -> Iterator[None]:
    """Hold Ctrl-C, SIGTERM and SIGHUP until the block ends, then act on the first one that came.

    A signal's exception raised inside ``subprocess.Popen`` after the child has started but before
    ``Popen`` returns leaves a running child nobody has a handle on (nothing would stop it). Outside the main
    thread (where Python cannot set handlers) the block runs as is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[signal.Signals] = []

    def note(number: int, _frame: object) -> None:
        came.append(signal.Signals(number))

    previous = {number: signal.signal(number, note) for number in STOP_SIGNALS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    if not came:
        return
    first = came[0]
    if callable(action := previous[first]):
        action(first, None)
    elif action == signal.SIG_DFL:
        signal.raise_signal(first)


def _start(role: str, env: dict[str, str], log_path: Path, fds: tuple[int, ...]) -> subprocess.Popen[bytes]:
    """``mnemo <role>`` in its own session (a front-end's Ctrl-C is not theirs), logging to ``log_path``,
    holding ``fds`` (its lifeline and the companions' lock)."""
    with open_private_log(log_path) as log_file:
        return subprocess.Popen([sys.executable, "-m", "shared.app.cli", role], env=env, stdout=log_file,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                                pass_fds=fds)


def _front_end_running(log_dir: Path) -> bool:
    """Whether a live front-end runs companions in ``log_dir`` (it holds the front-end lock)."""
    log_dir.mkdir(mode=PRIVATE_DIRECTORY_MODE, parents=True, exist_ok=True)
    fd = _lock(log_dir / FRONT_END_LOCK, fcntl.LOCK_EX | fcntl.LOCK_NB)
    if fd is not None:
        os.close(fd)
    return fd is None


def _wait_for_earlier_companions(lock_path: Path, patience: float = 2 * STOP_GRACE_SECONDS) -> int:
    """Wait until no companion of an earlier, dead front-end holds ``lock_path`` (they stop by themselves
    once it is gone), then return a descriptor holding it shared, for the new companions to inherit. One
    still there after ``patience`` is reported and the start goes on."""
    deadline = time.monotonic() + patience
    while (fd := _lock(lock_path, fcntl.LOCK_EX | fcntl.LOCK_NB)) is None:
        if time.monotonic() > deadline:
            log.warning("companions of an earlier front-end are still running (see %s)", lock_path.parent)
            return _hold_shared(lock_path)
        time.sleep(EARLIER_COMPANIONS_POLL_SECONDS)
    fcntl.flock(fd, fcntl.LOCK_SH)
    return fd


def _lock(path: Path, operation: int) -> int | None:
    """A descriptor of ``path`` holding ``flock(operation)`` (not inherited unless passed on), or None if
    a non-blocking lock is held elsewhere."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, operation)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _hold_shared(path: Path) -> int:
    """A descriptor of ``path`` holding ``flock(LOCK_SH)``, waited for while another holds it exclusively."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    fcntl.flock(fd, fcntl.LOCK_SH)
    return fd


def stop_with_front_end() -> None:
    """In a companion: stop the usual way (SIGTERM to itself) once the front-end that started it is gone.

    Does nothing in a process started otherwise (no lifeline in the environment)."""
    lifeline = os.environ.pop(LIFELINE_VARIABLE, None)
    if lifeline is None or not lifeline.isdigit():
        return
    threading.Thread(target=_watch_lifeline, args=(int(lifeline),), name="front-end-lifeline", daemon=True).start()


def _watch_lifeline(fd: int) -> None:
    try:
        while os.read(fd, 1):  # nothing is written; this returns b"" when the front-end's end closes
            pass
    except OSError as exc:
        log.warning("cannot watch the front-end that started this process: %s", exc)
        return
    log.warning("the front-end that started this process is gone; stopping")
    os.kill(os.getpid(), signal.SIGTERM)


def stop_processes(processes: list[subprocess.Popen[bytes]], grace: float = STOP_GRACE_SECONDS) -> None:
    """SIGTERM to each, then wait for each to exit by itself; only one still running after ``grace`` is killed."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            log.warning("%s did not stop within %ss; killing it", _command_of(process), grace)
        _kill_group(process.pid)  # also pool children a stopped worker may have left behind
        process.wait()


def _command_of(process: subprocess.Popen[bytes]) -> str:
    """``mnemo <role>`` for a process :func:`_start` started (``python -m shared.app.cli <role>``)."""
    args = process.args
    if isinstance(args, (list, tuple)):
        return " ".join(["mnemo", *map(str, args[3:])])
    return str(args)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # the whole group is gone already
        os.killpg(pgid, signal.SIGKILL)
