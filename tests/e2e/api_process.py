"""``mnemo api`` as the tests see it: it binds port 0 (any free port, chosen by the kernel when it
binds, so no other process can take it first) and the port is read back from uvicorn's log line."""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path

LISTENING = re.compile(r"Uvicorn running on https?://[^\s:]+:(\d+)")
"""What uvicorn logs (at INFO) once it listens, naming the port it was given by the kernel."""


def bound_port(log_file: Path) -> int | None:
    """The port the API in ``log_file`` listens on, once it says so."""
    found = LISTENING.search(log_file.read_text(errors="replace")) if log_file.exists() else None
    return int(found[1]) if found else None


def api_answers(port: int | None) -> bool:
    """Whether the API on ``port`` answers its health check."""
    if port is None:
        return False
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False
