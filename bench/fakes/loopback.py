"""What every fake HTTP API shares: a threaded server on 127.0.0.1 (an ephemeral port) and its life.

A fake subclasses :class:`LoopbackFake`, names its request handler and its API root, and may add
``_wake_waiters`` to cut its own long waits short on stop. Handlers reach the fake as
``self.server.fake``. :func:`refusing_port` is the peer that went away: a port that refuses connections.

A fake answers HTTP/1.0 (a connection a request) unless started with ``keep_alive=True``: then it
answers HTTP/1.1 and a client keeps its connection for the next request, as the real APIs let it (the
load benchmark runs so; a connection a request made each client call pay a TCP connection and a server
thread). A handler that ends a request without an answer (a dropped request) or with a body that only
the connection's end delimits sets ``close_connection``; on stop, connections left open are closed.
"""

from __future__ import annotations

import logging
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, Self, TypeVar

FakeT = TypeVar("FakeT", bound="LoopbackFake")
_log = logging.getLogger(__name__)


class LoopbackServer(ThreadingHTTPServer, Generic[FakeT]):
    """The server of one fake; a handler declares ``server: LoopbackServer[ItsFake]`` to reach its fake typed."""

    daemon_threads = False  # so server_close() joins the request threads
    request_queue_size = 128  # bursts of concurrent client calls must not overflow the backlog

    def __init__(self, fake: FakeT, handler: type[BaseHTTPRequestHandler], *, keep_alive: bool = False) -> None:
        if keep_alive:
            # an idle connection is the client's to close first (httpx keeps one 5 s, aiohttp 15 s); a kept
            # connection sends without Nagle's wait, or an answer's body waits ~40 ms for the client's delayed ACK
            # of its headers
            handler = type(handler.__name__, (handler,), {"protocol_version": "HTTP/1.1", "timeout": 30.0,
                                                          "disable_nagle_algorithm": True})
        super().__init__(("127.0.0.1", 0), handler)
        self.fake = fake
        self.connections = 0  # connections accepted
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
            self.connections += 1
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that reset a kept connection is no error of the fake's (socketserver would print a traceback)."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            _log.debug("fake: %s reset its connection", client_address)
            return
        super().handle_error(request, client_address)

    def end_connections(self) -> None:
        """Stop reading every open connection: one waiting for its next request ends; an answer being
        written still goes out."""
        with self._open_lock:
            open_now = list(self._open)
        for connection in open_now:
            with suppress(OSError):
                connection.shutdown(socket.SHUT_RD)


class LoopbackFake:
    """Start, stop and the base URL of a fake API; use it as a context manager."""

    handler: type[BaseHTTPRequestHandler]
    api_root = ""

    def __init__(self, *, keep_alive: bool = False) -> None:
        self.keep_alive = keep_alive
        """HTTP/1.1 with connections kept for the next request; False: HTTP/1.0, a connection a request."""
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
        self._server = LoopbackServer(self, self.handler, keep_alive=self.keep_alive)
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
        server.end_connections()
        server.server_close()
        thread.join()

    @property
    def connections(self) -> int:
        """Connections accepted since start (with ``keep_alive``, fewer than the requests)."""
        return 0 if self._server is None else self._server.connections

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
