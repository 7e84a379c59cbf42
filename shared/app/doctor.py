"""``mnemo doctor``: the effective configuration and a verdict on every service Mnemo depends on."""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

import httpx
from sqlalchemy import pool, text

from shared.app.bootstrap import database_url
from shared.conversation.prompt import PromptInputs, build_turn_prompt
from shared.db import migrate
from shared.db.engine import make_engine
from shared.db.vectors import vector_status
from shared.errors import MnemoError
from shared.llm.client import ChatModel, LLMUnavailable
from shared.llm.turn_answer import PROBLEM_TEXTS
from shared.metrics.record import MAINTENANCE_CHANGES
from shared.redaction import redact
from shared.settings import Settings

CHECK_TIMEOUT_SECONDS = 5.0
VERDICTS = {"ok": "OK  ", "info": "INFO", "warn": "WARN", "fail": "FAIL"}


@dataclass(frozen=True)
class Check:
    """One verdict: ``ok``, ``info`` (fine, worth knowing), ``warn`` (works, should be fixed) or ``fail``."""

    name: str
    verdict: str
    detail: str

    def line(self) -> str:
        return f"[{VERDICTS[self.verdict]}] {self.name}: {self.detail}"


def run_checks(settings: Settings) -> list[Check]:
    """Check the database (and pgvector), the broker and the LLM endpoints."""
    checks: list[Check] = []
    try:
        with database_url(settings) as url:
            checks.extend(_database_checks(settings, url))
            checks.append(_guard("broker", lambda: _broker_check(settings, url)))
    except MnemoError as exc:
        checks.append(Check("database", "fail", str(exc)))
    checks.append(_guard("llm", lambda: _llm_check(settings)))
    checks.append(_guard("embeddings", lambda: _embedding_check(settings)))
    checks.append(_panel_check(settings))
    checks.append(_access_check(settings))
    return checks


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
        return [Check("database", "fail", f"cannot connect to the {where}: {_first_line(exc)}")]
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


def _maintenance_check(connection) -> Check:
    """The last daily maintenance run's report (shared/lifecycle/maintenance.py)."""
    row = connection.execute(text("SELECT finished_at, report FROM maintenance_runs ORDER BY id DESC LIMIT 1")).first()
    if row is None:
        return Check("maintenance", "info", "no daily run yet (the beat runs it daily at DAILY_MAINTENANCE_HOUR_UTC; "
                                            "`mnemo maintenance` runs it now)")
    counts = row.report.get("changes") or {}
    changes = ", ".join(f"{name} {counts[name]}" for name in MAINTENANCE_CHANGES if name in counts)
    return Check("maintenance", "ok", f"last run finished {row.finished_at:%Y-%m-%d %H:%M} UTC, as of "
                                      f"{row.report.get('as_of', '?')[:16]}: {changes}")


def _vector_check(settings: Settings, vectors) -> Check:
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
            return Check("broker", "fail", f"Redis at REDIS_URL does not answer: {_first_line(exc)}")
        finally:
            client.close()
        return Check("broker", "ok", "Redis answers PING")
    engine = make_engine(url, poolclass=pool.NullPool, connect_args={"connect_timeout": 5})
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except Exception as exc:
        return Check("broker", "fail", f"REDIS_URL unset, so the broker is PostgreSQL, which does not answer: "
                     f"{_first_line(exc)}")
    finally:
        engine.dispose()
    return Check("broker", "ok", "REDIS_URL unset: Celery uses the PostgreSQL database as its broker")


def _llm_check(settings: Settings) -> Check:
    if not settings.llm_configured:
        return Check("llm", "info", "LLM_BASE_URL unset: offline mode (rule-based replies and extraction)")
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    models = _list_models(settings.llm_base_url, key, "LLM_BASE_URL")
    if isinstance(models, Check):
        return models
    if models and settings.llm_model not in models:
        return Check("llm", "warn", f"endpoint answers, but LLM_MODEL={settings.llm_model!r} is not among "
                     f"its models ({', '.join(sorted(models)[:8])})")
    return _turn_probe(settings)


def _turn_probe(settings: Settings) -> Check:
    """One real turn (the product's own prompt) to learn the output mode that works and what a turn costs."""
    model = ChatModel.from_settings(settings)
    assert model is not None  # LLM_BASE_URL is set
    started = time.perf_counter()
    try:
        completion = model.complete_turn(build_turn_prompt(_probe_inputs(settings)).messages)
    except LLMUnavailable as exc:
        return Check("llm", "fail", f"{settings.llm_base_url} lists the model but a turn failed: {exc}")
    seconds = time.perf_counter() - started
    refused = f", refused: {', '.join(sorted(model.endpoint.refused))}" if model.endpoint.refused else ""
    head = (f"{settings.llm_base_url} answers; model {settings.llm_model}; output mode {completion.mode}{refused}; "
            f"one turn took {seconds:.1f} s ({completion.attempts} request(s), finish {completion.finish_reason})")
    if completion.output is None:
        said = f"salvaged reply {completion.reply[:60]!r}" if completion.reply else "nothing usable: offline replies"
        problem = PROBLEM_TEXTS.get(completion.problem or "", completion.problem)
        return Check("llm", "warn", f"{head}; the answer was {problem} ({said}); try a larger model "
                                    "or LLM_MAX_OUTPUT_TOKENS")
    if completion.mode != "json_schema":
        head += f"; set LLM_OUTPUT_MODE={completion.mode.split('+')[0]} to skip the probing at start"
    return Check("llm", "ok", f"{head}; reply {completion.output.response[:60]!r}")


def _probe_inputs(settings: Settings) -> PromptInputs:
    now = datetime.now(ZoneInfo(settings.default_timezone))
    return PromptInputs(bot_name=settings.bot_name, personality=settings.bot_personality, strategy=None,
                        user_name="Doctor", user_message="Hi! I just moved to Lisbon and I love the ocean.",
                        local_now=now, timezone=settings.default_timezone, is_group=False, profile=None, memories=(),
                        episodes=(), history=(), memory_budget_tokens=settings.memory_context_tokens)


def _embedding_check(settings: Settings) -> Check:
    if settings.embedding_base_url:
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
        models = _list_models(settings.embedding_base_url, key, "EMBEDDING_BASE_URL")
        if isinstance(models, Check):
            return Check("embeddings", models.verdict, models.detail)
        return Check("embeddings", "ok", f"{settings.embedding_base_url} answers; model {settings.embedding_model}")
    if settings.embedding_model:
        return Check("embeddings", "info", f"local model {settings.embedding_model} (needs the local-embeddings extra)")
    return Check("embeddings", "info", "no embedder configured: lexical retrieval only")


def _list_models(base_url: str, api_key: str | None, variable: str) -> set[str] | Check:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        response = httpx.get(f"{base_url}/models", headers=headers, timeout=CHECK_TIMEOUT_SECONDS)
    except httpx.HTTPError as exc:
        return Check("llm", "fail", f"{variable}={base_url} does not answer: {_first_line(exc)}")
    if response.status_code in (401, 403):
        return Check("llm", "fail", f"{variable}={base_url} refused the API key (HTTP {response.status_code})")
    if response.status_code >= 400:
        return Check("llm", "fail", f"{variable}={base_url}/models answered HTTP {response.status_code}")
    try:
        return {str(model.get("id")) for model in response.json().get("data", [])}
    except (ValueError, AttributeError):
        return Check("llm", "fail", f"{variable}={base_url}/models did not answer like an OpenAI-compatible API")


def _panel_check(settings: Settings) -> Check:
    """The /panel links a bot sends must point where its users' browsers can go, not at this machine."""
    host = urlsplit(settings.panel_public_url).hostname or ""
    platforms = [name for name, token in (("Discord", settings.discord_token), ("Telegram", settings.telegram_token))
                 if token is not None]
    local = host == "localhost" or host.endswith(".localhost") or _is_loopback(host)
    if platforms and local:
        return Check("panel", "warn", f"PANEL_PUBLIC_URL={settings.panel_public_url} is this machine, but /panel links "
                     f"go to {' and '.join(platforms)} users: set it to the HTTPS address of your reverse proxy")
    if not settings.panel_public_url.startswith("https://") and not local:
        return Check("panel", "warn", f"PANEL_PUBLIC_URL={settings.panel_public_url} is not https: sign-in links "
                     "and the session cookie travel in the clear")
    return Check("panel", "ok", f"/panel links point at {settings.panel_public_url}")


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


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
