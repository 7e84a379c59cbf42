"""What every fake HTTP API shares: a threaded server on 127.0.0.1 (an ephemeral port) and its life.

A fake subclasses :class:`LoopbackFake`, names its request handler and its API root, and may add
``_wake_waiters`` to cut its own long waits short on stop. Handlers reach the fake as
``self.server.fake``. :func:`refusing_port` is the peer that went away: a port that refuses connections.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Generic, Self, TypeVar

FakeT = TypeVar("FakeT", bound="LoopbackFake")


class LoopbackServer(ThreadingHTTPServer, Generic[FakeT]):
    """The server of one fake; a handler declares ``server: LoopbackServer[ItsFake]`` to reach its fake typed."""

    daemon_threads = False  # so server_close() joins the request threads
    request_queue_size = 128  # bursts of concurrent client calls must not overflow the backlog

    def __init__(self, fake: FakeT, handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.fake = fake


class LoopbackFake:
    """Start, stop and the base URL of a fake API; use it as a context manager."""

    handler: type[BaseHTTPRequestHandler]
    api_root = ""

    def __init__(self) -> None:
        self._stopping = threading.Event()
        self._server: LoopbackServer[Self] | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` followed by the API root."""
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not running; call start() first")
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.api_root}"

    def start(self) -> Self:
        """Bind an ephemeral port and serve from a daemon thread."""
        if self._server is not None:
            raise RuntimeError(f"{type(self).__name__} is already running")
        self._stopping.clear()
        self._server = LoopbackServer(self, self.handler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"{type(self).__name__}:{self._server.server_address[1]}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Shut down, cut waits short, close the socket and join the threads (idempotent)."""
        server, thread, self._server, self._thread = self._server, self._thread, None, None
        if server is None or thread is None:
            return
        self._stopping.set()
        self._wake_waiters()
        server.shutdown()
        server.server_close()
        thread.join()

    def _wake_waiters(self) -> None:
        """Subclasses wake their own waiting requests (long polls) here."""

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()


@contextmanager
def refusing_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses every connection while the block runs: a socket is bound to it
    but never listens (the kernel answers a connection attempt with a reset), and holding it keeps
    another process from taking the port, as a port merely closed again could be."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]
