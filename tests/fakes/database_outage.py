"""A TCP relay on loopback in front of the real PostgreSQL, which a test can take down and bring back.

``down()`` does to Mnemo what a stopped server does: every open connection is cut, and each new one is
closed as soon as it is accepted ("server closed the connection unexpectedly"), until ``up()``. What
goes through is the real server's protocol, unchanged. ``refused`` counts the connections turned away,
so a test can wait until Mnemo has really tried (and failed) before it brings the database back.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType

from sqlalchemy.engine import make_url

CHUNK = 65536


class DatabaseOutage:
    def __init__(self, database_url: str) -> None:
        self.target = make_url(database_url)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._down = False
        self._closing = False
        self.refused = 0

    @property
    def url(self) -> str:
        """The database's URL through the relay."""
        return self.target.set(host="127.0.0.1", port=self.port).render_as_string(hide_password=False)

    def __enter__(self) -> DatabaseOutage:
        threading.Thread(target=self._accept, name="database-outage", daemon=True).start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._closing = True
        self._listener.close()
        self._cut_all()

    def down(self) -> None:
        """The database goes away: open connections are cut, new ones refused (one being opened as it goes down
        too: it is checked again once its server side is open)."""
        with self._lock:
            self._down = True
        self._cut_all()

    def up(self) -> None:
        self._down = False

    def _accept(self) -> None:
        while not self._closing:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self._down:
                with self._lock:
                    self.refused += 1
                client.close()
                continue
            try:
                server = socket.create_connection((self.target.host or "127.0.0.1", self.target.port or 5432))
            except OSError:
                client.close()
                continue
            with self._lock:
                going_down = self._down
                if going_down:
                    self.refused += 1
                else:
                    self._open.update((client, server))
            if going_down:  # down() came while the server side was opened: it must not outlive the outage
                client.close()
                server.close()
                continue
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(CHUNK):
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            self._close(source, sink)

    def _cut_all(self) -> None:
        with self._lock:
            sockets = list(self._open)
        self._close(*sockets)

    def _close(self, *sockets: socket.socket) -> None:
        for sock in sockets:
            with self._lock:
                self._open.discard(sock)
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
