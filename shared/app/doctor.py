"""``mnemo doctor``: the effective configuration and a verdict on every service Mnemo depends on."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from sqlalchemy import Connection, pool, text

from shared.app.bootstrap import database_url
from shared.app.check import Check, first_line
from shared.app.container import is_loopback_host
from shared.app.doctor_compose import compose_check
from shared.app.doctor_llm import DOCTOR_LLM_SECONDS, list_models, llm_check
from shared.db import migrate
from shared.db.engine import make_engine
from shared.db.vectors import VectorStatus, vector_status
from shared.errors import MnemoError
from shared.metrics.record import MAINTENANCE_CHANGES
from shared.redaction import redact
from shared.settings import Settings

CHECK_TIMEOUT_SECONDS = 5.0


def run_checks(settings: Settings, llm_seconds: float | None = None) -> list[Check]:
    """Check the database (and pgvector), the broker, the LLM endpoints (the model within ``llm_seconds``)
    and, under docker compose, the bots its profiles start."""
    checks: list[Check] = []
    try:
        with database_url(settings) as url:
            checks.extend(_database_checks(settings, url))
            checks.append(_guard("broker", lambda: _broker_check(settings, url)))
    except MnemoError as exc:
        checks.append(Check("database", "fail", str(exc)))
    checks.append(_guard("llm", lambda: llm_check(settings, llm_seconds or DOCTOR_LLM_SECONDS)))
    checks.append(_guard("embeddings", lambda: _embedding_check(settings)))
    checks.append(_panel_check(settings))
    checks.append(_access_check(settings))
    compose = compose_check()
    return checks + ([compose] if compose else [])


def report(settings: Settings, checks: list[Check]) -> str:
    """The configuration and the verdicts, with every secret and URL password masked (errors may quote them)."""
    lines = ["Effective configuration (secrets masked):"]
    lines += [f"  {name} = {value}" for name, value in settings.masked().items()]
    lines += ["", "Checks:"] + [f"  {check.line()}" for check in checks]
    failed = [check.name for check in checks if check.verdict == "fail"]
    lines += ["", f"Verdict: {'NOT READY, failing: ' + ', '.join(failed) if failed else 'ready'}"]
    return redact("\n".join(lines), settings.secret_values())


def _guard(name: str, check: Callable[[], Check]) -> Check:
    try:
        return check()
    except Exception as exc:  # a check must report, never crash the doctor
        return Check(name, "fail", f"{type(exc).__name__}: {exc}")


def _database_checks(settings: Settings, url: str) -> list[Check]:
    where = "embedded PostgreSQL" if settings.uses_embedded_database else "DATABASE_URL"
    engine = make_engine(url, poolclass=pool.NullPool, connect_args={"connect_timeout": 5})
    try:
        with engine.connect() as connection:
            version = connection.scalar(text("SHOW server_version"))
            revision = migrate.current_revision_of(connection)
            vectors = vector_status(connection)
            maintenance = _maintenance_check(connection) if revision == migrate.head_revision() else None
    except Exception as exc:
        return [Check("database", "fail", f"cannot connect to the {where}: {first_line(exc)}")]
    finally:
        engine.dispose()
    head = migrate.head_revision()
    checks = [Check("database", "ok", f"{where}, PostgreSQL {version}")]
    if revision == head:
        checks.append(Check("schema", "ok", f"migrated to {head}"))
    else:
        checks.append(Check("schema", "fail", f"at {revision or 'nothing'}, head is {head}: run `mnemo db upgrade`"))
    checks.append(_vector_check(settings, vectors))
    return checks + ([maintenance] if maintenance else [])


def _maintenance_check(connection: Connection) -> Check:
    """The last daily maintenance run's report (shared/lifecycle/maintenance.py)."""
    row = connection.execute(text("SELECT finished_at, report FROM maintenance_runs ORDER BY id DESC LIMIT 1")).first()
    if row is None:
        return Check("maintenance", "info", "no daily run yet (the beat runs it daily at DAILY_MAINTENANCE_HOUR_UTC; "
                                            "`mnemo maintenance` runs it now)")
    counts = row.report.get("changes") or {}
    changes = ", ".join(f"{name} {counts[name]}" for name in MAINTENANCE_CHANGES if name in counts)
    return Check("maintenance", "ok", f"last run finished {row.finished_at:%Y-%m-%d %H:%M} UTC, as of "
                                      f"{row.report.get('as_of', '?')[:16]}: {changes}")


def _vector_check(settings: Settings, vectors: VectorStatus) -> Check:
    if not vectors.available:
        return Check("pgvector", "info", "not installed: lexical search only (install pgvector for hybrid search)")
    if not vectors.enabled:
        return Check("pgvector", "warn", "available but the vector columns are missing: run `mnemo db upgrade`")
    dims = vectors.dimensions["memories"]
    if dims != settings.embedding_dimensions:
        return Check("pgvector", "warn", f"columns have {dims} dimensions, EMBEDDING_DIMENSIONS is "
                     f"{settings.embedding_dimensions}: run `mnemo db upgrade` to re-create the embeddings")
    return Check("pgvector", "ok", f"enabled, {dims} dimensions, HNSW index")


def _broker_check(settings: Settings, url: str) -> Check:
    """Redis answers PING, or (no REDIS_URL) the PostgreSQL that kombu's SQLAlchemy transport uses answers."""
    if settings.redis_url:
        import redis

        client = redis.Redis.from_url(settings.redis_url, socket_connect_timeout=CHECK_TIMEOUT_SECONDS,
                                      socket_timeout=CHECK_TIMEOUT_SECONDS)
        try:
            client.ping()
        except redis.RedisError as exc:
            return Check("broker", "fail", f"Redis at REDIS_URL does not answer: {first_line(exc)}")
        finally:
            client.close()
        return Check("broker", "ok", "Redis answers PING")
    engine = make_engine(url, poolclass=pool.NullPool, connect_args={"connect_timeout": 5})
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except Exception as exc:
        return Check("broker", "fail", f"REDIS_URL unset, so the broker is PostgreSQL, which does not answer: "
                     f"{first_line(exc)}")
    finally:
        engine.dispose()
    return Check("broker", "ok", "REDIS_URL unset: Celery uses the PostgreSQL database as its broker")


def _embedding_check(settings: Settings) -> Check:
    if settings.embedding_base_url:
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
        models = list_models(settings.embedding_base_url, key, "EMBEDDING_BASE_URL")
        if isinstance(models, Check):
            return Check("embeddings", models.verdict, models.detail)
        return Check("embeddings", "ok", f"{settings.embedding_base_url} answers; model {settings.embedding_model}")
    if settings.embedding_model:
        return Check("embeddings", "info", f"local model {settings.embedding_model} (needs the local-embeddings extra)")
    return Check("embeddings", "info", "no embedder configured: lexical retrieval only")


def _panel_check(settings: Settings) -> Check:
    """The /panel links a bot sends must point where its users' browsers can go, not at this machine."""
    host = urlsplit(settings.panel_public_url).hostname or ""
    platforms = [name for name, token in (("Discord", settings.discord_token), ("Telegram", settings.telegram_token))
                 if token is not None]
    local = is_loopback_host(host)
    if platforms and local:
        return Check("panel", "warn", f"PANEL_PUBLIC_URL={settings.panel_public_url} is this machine, but /panel links "
                     f"go to {' and '.join(platforms)} users: set it to the HTTPS address of your reverse proxy")
    if not settings.panel_public_url.startswith("https://") and not local:
        return Check("panel", "warn", f"PANEL_PUBLIC_URL={settings.panel_public_url} is not https: sign-in links "
                     "and the session cookie travel in the clear")
    return Check("panel", "ok", f"/panel links point at {settings.panel_public_url}")


def _access_check(settings: Settings) -> Check:
    """A bot that anyone who finds it may talk to spends its operator's budget on them: worth a warning."""
    policy = settings.access_policy()
    bots = [name for name, token in (("discord", settings.discord_token), ("telegram", settings.telegram_token))
            if token is not None]
    open_bots = [name for name in bots if not policy.restricts(name)]
    if open_bots:
        return Check("access", "warn", f"the {' and '.join(open_bots)} bot answers anyone who finds it (no allow list "
                     "in the settings; entries added with /access are not counted here): set an allow list or "
                     "ACCESS_DEFAULT=closed, and ACCESS_OPERATORS, unless it is meant to be public")
    if bots and not policy.operators:
        return Check("access", "info", "no ACCESS_OPERATORS: the lists change only in the settings or from the console")
    return Check("access", "ok", f"operators {', '.join(sorted(':'.join(op) for op in policy.operators)) or 'none'}")
