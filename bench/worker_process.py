"""A real ``mnemo worker`` for the benchmarks: started in its own process group, stopped with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from bench.fakes.openai_server import FakeOpenAI
from bench.hot_path import ROOT

WORKER_START_SECONDS = 90
POLL_SECONDS = 0.25
STOP_SECONDS = 20


@contextmanager
def running_worker(database_url: str, redis_url: str | None, llm: FakeOpenAI, concurrency: int) -> Iterator[None]:
    """``mnemo worker --concurrency N`` in its own process group, stopped (and its group killed) on exit."""
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-worker-") as data_dir:
        env = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "LLM_BASE_URL", "EMBEDDING_BASE_URL"}}
        env.update(DATABASE_URL=database_url, MNEMO_DATA_DIR=data_dir, PYTHONPATH=str(ROOT), LOG_LEVEL="INFO",
                   LLM_BASE_URL=llm.base_url, LLM_API_KEY="bench", LLM_MODEL="fake-chat", LLM_TIMEOUT_SECONDS="30",
                   LLM_SERVER_SLOTS="0",  # a hosted model's many slots, not a local one's
                   **({"REDIS_URL": redis_url} if redis_url else {}))
        log = Path(data_dir) / "worker.log"
        with open(log, "wb") as out:
            process = subprocess.Popen([sys.executable, "-m", "shared.app.cli", "worker", "--concurrency",
                                        str(concurrency), "--name", f"bench-{concurrency}@%h"], env=env,
                                       cwd=data_dir, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_for(lambda: "ready." in log.read_text(errors="replace") or process.poll() is not None,
                     WORKER_START_SECONDS, "the worker to start")
            if process.poll() is not None:
                raise RuntimeError(f"the worker exited with {process.returncode}: {_tail(log)}")
            yield
        finally:
            stop_group(process)


def _tail(log: Path, lines: int = 20) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def stop_group(process: subprocess.Popen) -> None:
    """SIGTERM to the process and its children; SIGKILL to what is left after ``STOP_SECONDS``."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # a pool child that outlived its parent


def wait_for(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(POLL_SECONDS)
