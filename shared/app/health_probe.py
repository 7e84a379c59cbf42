"""``mnemo health``: ask a running Mnemo process on this machine whether it is ready, and say what it answered.

Docker compose's health checks run it inside each container: it prints the process's ``/readyz`` answer
(which names what is failing) and exits 0 when ready, 1 when not or when the process does not answer, so
``docker compose ps`` marks the container and ``docker inspect`` shows why. Standard library only: it runs
every few seconds.
"""

from __future__ import annotations

import urllib.error
import urllib.request

ASK_TIMEOUT_SECONDS = 4.0
ANY_ADDRESS = ("", "0.0.0.0", "::")


def ask_health(port: int, host: str = "127.0.0.1", *, live: bool = False) -> int:
    """0 when the process on ``host:port`` answers 200 to ``/readyz`` (``/livez`` with ``live``), else 1."""
    host = "127.0.0.1" if host in ANY_ADDRESS else host
    url = f"http://{host}:{port}/{'livez' if live else 'readyz'}"
    try:
        with urllib.request.urlopen(url, timeout=ASK_TIMEOUT_SECONDS) as response:
            print(response.read().decode(errors="replace"))
            return 0
    except urllib.error.HTTPError as answer:  # 503: not ready, and the body says why
        print(answer.read().decode(errors="replace"))
        return 1
    except OSError as exc:
        print(f"no answer from {url}: {exc}")
        return 1
