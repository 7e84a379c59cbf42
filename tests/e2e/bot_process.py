"""What the e2e tests of processes share: a model that always says the same, and stopping a process as its
supervisor does (SIGTERM, its exit status; for a process group, SIGKILL if it outlives its grace)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from bench.fakes.openai_server import FakeOpenAI

REPLY = "Nice to hear from you."


@contextmanager
def replying_llm(reply: str = REPLY) -> Iterator[FakeOpenAI]:
    """A fake OpenAI server whose every turn answers ``reply`` and stores nothing."""
    with FakeOpenAI(models=("fake-chat",)) as server:
        server.set_responder(lambda _request: {"response": reply, "emotion": None, "memory_update": None,
                                               "todos": [], "topic": None, "context_variables": []})
        yield server


def stop(process: subprocess.Popen) -> int:
    """SIGTERM, then its exit status (0: it stopped cleanly)."""
    if process.poll() is None:
        process.terminate()
    return process.wait(timeout=60)


def stop_group(process: subprocess.Popen, grace: float = 30) -> int:
    """SIGTERM to the process's group (a worker and its children), SIGKILL after ``grace`` seconds; its exit status."""
    os.killpg(process.pid, signal.SIGTERM)
    try:
        return process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        return process.wait()
