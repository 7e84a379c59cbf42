"""Is this process able to do its work? Probes of what it depends on: the database, the broker, the LLM.

Each probe runs with a short timeout, all at once, and says ``ok`` or what is wrong in one line (no secret:
lines are redacted). A result is kept for :data:`READINESS_CACHE_SECONDS`, so a burst of health checks costs
one round of probes. ``/readyz`` on the operations endpoint (``shared/app/ops_server.py``) answers with it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

import httpx
from sqlalchemy import pool, text

from shared.db.engine import make_engine
from shared.redaction import redact
from shared.settings import Settings

PROBE_TIMEOUT_SECONDS = 2.0
READINESS_CACHE_SECONDS = 1.0
MAX_REASON_CHARS = 200
OK = "ok"


@dataclass(frozen=True)
class Probe:
    """One dependency: ``check`` returns when it is usable and raises (saying why) when not."""

    name: str
    check: Callable[[], None]


@dataclass(frozen=True)
class ReadinessReport:
    checks: dict[str, str]

    @property
    def ready(self) -> bool:
        return all(verdict == OK for verdict in self.checks.values())

    @property
    def failing(self) -> list[str]:
        return [name for name, verdict in self.checks.items() if verdict != OK]


class Readiness:
    """Runs the probes (at most once every :data:`READINESS_CACHE_SECONDS`) and reports each verdict."""

    def __init__(self, probes: Sequence[Probe], secrets: Sequence[str] = ()) -> None:
        self.probes = tuple(probes)
        self._secrets = list(secrets)
        self._pool = ThreadPoolExecutor(max_workers=max(2 * len(self.probes), 1), thread_name_prefix="readiness")
        self._lock = threading.Lock()
        self._kept: tuple[float, ReadinessReport] | None = None

    def report(self) -> ReadinessReport:
        with self._lock:
            if self._kept is None or time.monotonic() - self._kept[0] >= READINESS_CACHE_SECONDS:
                self._kept = (time.monotonic(), self._probe())
            return self._kept[1]

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _probe(self) -> ReadinessReport:
        futures = {probe.name: self._pool.submit(probe.check) for probe in self.probes}
        wait(futures.values(), timeout=PROBE_TIMEOUT_SECONDS + 0.5)
        return ReadinessReport({name: self._verdict(future) for name, future in futures.items()})

    def _verdict(self, future: Future[None]) -> str:
        if not future.done():
            return f"no answer within {PROBE_TIMEOUT_SECONDS:g} s"
        exc = future.exception()
        if exc is None:
            return OK
        first_line = (str(exc).strip().splitlines() or [""])[0]
        return redact(f"{type(exc).__name__}: {first_line}".rstrip(": "), self._secrets)[:MAX_REASON_CHARS]


def database_probe(database_url: str, name: str = "database") -> Probe:
    """``SELECT 1`` on a connection of its own (never one of the process's pool)."""
    engine = make_engine(database_url, poolclass=pool.NullPool, connect_args={"connect_timeout": 2})

    def check() -> None:
        with engine.connect() as connection:
            connection.execute(text("SET LOCAL statement_timeout = 2000"))
            connection.execute(text("SELECT 1"))

    return Probe(name, check)


def broker_probe(settings: Settings, database_url: str) -> Probe:
    """Redis answers PING; without ``REDIS_URL`` the broker is the PostgreSQL itself."""
    if not settings.redis_url:
        return database_probe(database_url, name="broker")
    import redis

    client = redis.Redis.from_url(settings.redis_url, socket_connect_timeout=PROBE_TIMEOUT_SECONDS,
                                  socket_timeout=PROBE_TIMEOUT_SECONDS)
    def ping() -> None:
        client.ping()

    return Probe("broker", ping)


class EndpointRefused(Exception):
    """The LLM endpoint answered, but not as a usable endpoint does."""


def llm_probe(settings: Settings) -> Probe | None:
    """The LLM endpoint answers ``GET /models`` (any answer but a refused key or a server error); None when
    no LLM is configured (offline mode needs none)."""
    if settings.llm_base_url is None:
        return None
    url = f"{settings.llm_base_url}/models"
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    headers = {"Authorization": f"Bearer {key}"} if key else {}

    def check() -> None:
        response = httpx.get(url, headers=headers, timeout=PROBE_TIMEOUT_SECONDS, follow_redirects=False,
                             trust_env=False)
        if response.status_code in (401, 403):
            raise EndpointRefused(f"the endpoint refuses LLM_API_KEY (HTTP {response.status_code})")
        if response.status_code >= 500:
            raise EndpointRefused(f"the endpoint answers HTTP {response.status_code}")

    return Probe("llm", check)


def process_probes(settings: Settings, database_url: str, *, broker: bool = True, llm: bool = True) -> list[Probe]:
    """The probes of a process that uses the database and, as asked, the broker and the LLM."""
    probes = [database_probe(database_url)]
    if broker:
        probes.append(broker_probe(settings, database_url))
    if llm and (probe := llm_probe(settings)) is not None:
        probes.append(probe)
    return probes
