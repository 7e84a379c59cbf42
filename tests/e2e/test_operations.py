"""Operations end to end: the real ``mnemo telegram``, ``worker`` (prefork), ``beat`` and ``api`` on one
database and Redis (database 9), each serving ``/metrics``, ``/livez`` and ``/readyz`` on a port of its own.

After real traffic against the fakes (a Telegram Bot API for the bot, another for the worker's reminders, the
fake OpenAI server), every metric of docs/operations.md is scraped with the right type and a plausible value,
and each scrape passes ``promtool check metrics`` (``scripts/services.sh`` installs promtool).
Then the database and the broker are taken away behind loopback relays: ``/readyz`` answers 503 naming
the part that is gone, and 200 again once it is back. The four processes are shared by the file's tests.

Beat scans for reminders only once an hour here, and the test asks for the one scan it needs: a worker
holding a task it has not acknowledged when Redis drops its connection stops with kombu's "Unrecoverable
error" (``restore_unacked`` on a closed connection; docker compose restarts it), which is not what the
readiness test is about, so the worker must be idle when the broker goes away.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import select

from bench.databases import create_database, drop_database
from bench.fakes.openai_server import FakeOpenAI
from bench.fakes.telegram_api import FakeTelegram, user_object
from shared.db.engine import make_engine, session_factory
from shared.db.memory_models import Memory, Todo
from shared.db.models import Chat, Identity
from tests.e2e.api_process import bound_port
from tests.e2e.bot_process import stop_group
from tests.fakes.database_outage import DatabaseOutage
from tests.waiting import wait_for
from worker.celery_app import configure
from worker.tasks import send_task

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = "redis://127.0.0.1:6379/9"
ROLES = ("telegram", "worker", "beat", "api")
ENDPOINT = re.compile(r"mnemo (\w+): metrics and health checks on http://[\d.]+:(\d+)")
ALICE = user_object(4242, "Alice", language_code="en")
SAID = "I keep bees on my balcony in Quxbridge"
FACT = "keeps bees in Quxbridge"
TURN = {"emotion": {"primary": "happy", "category": "positive", "confidence": 0.9, "indicators": []},
        "response": "Bees! How lovely.", "memory_update": {"should_store": False, "entries": []}, "todos": [],
        "topic": "bees", "context_variables": []}
MONITOR = {"operations": [{"op": "ADD", "type": "fact", "subject": "user", "predicate": "hobby",
                           "content": FACT, "tier": "long"}]}
LATE = timedelta(seconds=30)


def answer(request: dict) -> dict:
    """Hot-path turns ask for the json_schema; the knowledge monitor asks for a JSON object."""
    return TURN if (request.get("response_format") or {}).get("type") == "json_schema" else MONITOR


@dataclass
class Deployment:
    database_url: str
    database: DatabaseOutage
    broker: DatabaseOutage
    llm: FakeOpenAI
    telegram: FakeTelegram
    reminders: FakeTelegram
    ports: dict[str, int]
    api_port: int
    logs: Path

    def get(self, role: str, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ports[role]}{path}", timeout=10) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as refused:
            return refused.code, refused.read().decode()

    def log_of(self, role: str) -> str:
        return (self.logs / f"{role}.log").read_text(errors="replace")


def _environment(deployment_env: dict[str, str], role: str, reminders: FakeTelegram,
                 telegram: FakeTelegram) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LOG_", "LLM_", "REDIS_", "TELEGRAM_", "DISCORD_", "METRICS_", "PROMETHEUS_"))}
    env.update(deployment_env, EXTRACTION_BATCH_TURNS="1")  # each turn's own extraction job, at once
    outgoing = reminders if role == "worker" else telegram  # the worker pings through a fake of its own
    env.update(TELEGRAM_TOKEN=outgoing.token, TELEGRAM_API_BASE_URL=outgoing.base_url)
    return env


def _command(role: str) -> list[str]:
    extra = {"worker": ["--pool", "prefork", "--concurrency", "1", "--name", "ops@test"], "api": ["--port", "0"]}
    return [sys.executable, "-m", "shared.app.cli", role, *extra.get(role, [])]


def endpoint_port(log: Path) -> int:
    """The port a process's operations endpoint listens on, from its log line."""
    found = wait_for(lambda: ENDPOINT.search(log.read_text(errors="replace")), 90,
                     lambda: f"the operations endpoint in {log.name}:\n{log.read_text(errors='replace')}")
    return int(found[2])


def _stop(process: subprocess.Popen) -> None:
    stop_group(process)


@pytest.fixture(scope="module")
def deployment(system_pg_admin_url, migrated_system_template, tmp_path_factory) -> Iterator[Deployment]:
    logs = tmp_path_factory.mktemp("operations")
    url = create_database(system_pg_admin_url, template=migrated_system_template)
    redis.Redis.from_url(REDIS_URL).flushdb()
    started: list[subprocess.Popen] = []
    with (DatabaseOutage(url) as database, DatabaseOutage(REDIS_URL) as broker,
          FakeOpenAI(models=("fake-chat",)) as llm, FakeTelegram() as telegram, FakeTelegram() as reminders):
        llm.set_responder(answer)
        common = {"DATABASE_URL": database.url, "REDIS_URL": broker.url, "MNEMO_DATA_DIR": str(logs),
                  "PYTHONPATH": str(ROOT), "LOG_LEVEL": "INFO", "LLM_BASE_URL": llm.base_url,
                  "LLM_API_KEY": "key-of-the-fake-llm", "LLM_MODEL": "fake-chat", "METRICS_PORT": "0",
                  "METRICS_HOST": "127.0.0.1", "REMINDER_SCAN_SECONDS": "3600", "DATABASE_PATIENCE_SECONDS": "5"}
        try:
            for role in ROLES:
                with open(logs / f"{role}.log", "wb") as out:
                    started.append(subprocess.Popen(_command(role), env=_environment(common, role, reminders, telegram),
                                                    cwd=logs, stdout=out, stderr=subprocess.STDOUT,
                                                    start_new_session=True))
            ports = {role: endpoint_port(logs / f"{role}.log") for role in ROLES}
            wait_for(lambda: " ready." in (logs / "worker.log").read_text(), 90, "the worker to be ready")
            api_port = wait_for(lambda: bound_port(logs / "api.log"), 60, "the API to listen")
            yield Deployment(url, database, broker, llm, telegram, reminders, ports, api_port, logs)
        finally:
            for process in started:
                _stop(process)
            drop_database(system_pg_admin_url, url)
            redis.Redis.from_url(REDIS_URL).flushdb()


def scrape(deployment: Deployment, role: str) -> tuple[str, dict]:
    status, text = deployment.get(role, "/metrics")
    assert status == 200, f"{role}'s /metrics answered {status}"
    return text, {family.name: family for family in text_string_to_metric_families(text)}


def value(families: dict, name: str, sample: str | None = None, **labels: str) -> float:
    """The sum of the samples of family ``name`` (its ``sample`` series, e.g. a histogram's ``_count``) whose
    labels include ``labels``."""
    wanted = sample or name
    return sum(s.value for s in families[name].samples
               if s.name == wanted and all(s.labels.get(k) == v for k, v in labels.items()))


def passes_promtool(text: str) -> None:
    promtool = shutil.which("promtool")
    assert promtool is not None, "promtool is not installed: run scripts/services.sh (make test does)"
    checked = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, f"promtool check metrics:\n{checked.stdout}{checked.stderr}"


def memories(url: str) -> list[str]:
    engine = make_engine(url)
    try:
        with session_factory(engine)() as session:
            return list(session.scalars(select(Memory.content)))
    finally:
        engine.dispose()


def owe_a_late_reminder(url: str) -> None:
    """A pending reminder for Alice's chat, due ``LATE`` ago (as if the bot had been asked for it)."""
    engine = make_engine(url)
    try:
        with session_factory(engine)() as session:
            chat = session.scalars(select(Chat).where(Chat.platform == "telegram")).one()
            due = datetime.now(UTC) - LATE
            user_id = session.scalars(select(Identity.user_id).where(Identity.platform == "telegram")).one()
            session.add(Todo(user_id=user_id, chat_id=chat.id,
                             content="water the bees", due_at=due, remind_at=due, timezone="UTC"))
            session.commit()
    finally:
        engine.dispose()


def converse(deployment: Deployment, text: str, replies: int) -> None:
    deployment.telegram.push_message(ALICE["id"], ALICE, text)
    wait_for(lambda: len(deployment.telegram.sent) >= replies, 60,
             lambda: f"reply {replies} from the bot:\n{deployment.log_of('telegram')}")


def test_every_process_exports_its_metrics_after_real_traffic(deployment: Deployment) -> None:
    converse(deployment, SAID, replies=1)
    wait_for(lambda: FACT in memories(deployment.database_url), 60,
             lambda: f"the worker to extract the memory:\n{deployment.log_of('worker')}")
    deployment.llm.queue_error(500)  # retried, then a refusal: the next message is answered offline
    deployment.llm.queue_error(400)
    converse(deployment, "How are my bees?", replies=2)
    deployment.reminders.fail_next(429, retry_after=0)  # the first ping is refused, the retry goes through
    owe_a_late_reminder(deployment.database_url)
    configure(deployment.broker.url)
    send_task("scan_reminders", {})  # what beat does every REMINDER_SCAN_SECONDS (an hour here: see below)
    wait_for(lambda: any("water the bees" in message["text"] for message in deployment.reminders.sent), 60,
             lambda: f"the reminder:\n{deployment.log_of('worker')}")
    for path, status in (("/api/v1/health", 200), ("/api/v1/memory/long-term/123", 401), ("/nowhere", 404)):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{deployment.api_port}{path}", timeout=10).close()
        except urllib.error.HTTPError as refused:
            assert refused.code == status

    bot_text, bot = scrape(deployment, "telegram")
    assert bot["mnemo_messages"].type == "counter"
    assert value(bot, "mnemo_messages", "mnemo_messages_total", platform="telegram", outcome="model") == 1
    assert value(bot, "mnemo_messages", "mnemo_messages_total", platform="telegram", outcome="fallback") == 1
    assert bot["mnemo_message_duration_seconds"].type == "histogram"
    assert value(bot, "mnemo_message_duration_seconds", "mnemo_message_duration_seconds_count") == 2
    assert bot["mnemo_message_stage_duration_seconds"].type == "histogram"
    for stage in ("recall", "llm", "other"):
        assert value(bot, "mnemo_message_stage_duration_seconds", "mnemo_message_stage_duration_seconds_count",
                     stage=stage) == 2
    recall = value(bot, "mnemo_message_stage_duration_seconds", "mnemo_message_stage_duration_seconds_sum",
                   stage="recall")
    assert 0 < recall < value(bot, "mnemo_message_duration_seconds", "mnemo_message_duration_seconds_sum")
    assert bot["mnemo_retrieval_duration_seconds"].type == "histogram"
    assert value(bot, "mnemo_retrieval_duration_seconds", "mnemo_retrieval_duration_seconds_count",
                 method="lexical") == 2
    assert bot["mnemo_llm_requests"].type == "counter"
    assert value(bot, "mnemo_llm_requests", "mnemo_llm_requests_total", kind="turn", mode="json_schema",
                 status="ok") == 1
    assert value(bot, "mnemo_llm_requests", "mnemo_llm_requests_total", kind="turn", status="server_error") == 1
    assert value(bot, "mnemo_llm_requests", "mnemo_llm_requests_total", kind="turn", status="client_error") == 1
    assert bot["mnemo_llm_request_duration_seconds"].type == "histogram"
    assert bot["mnemo_llm_tokens"].type == "counter"
    assert value(bot, "mnemo_llm_tokens", "mnemo_llm_tokens_total", kind="turn", type="prompt") > 100
    assert value(bot, "mnemo_llm_tokens", "mnemo_llm_tokens_total", kind="turn", type="completion") > 10
    assert bot["mnemo_platform_api_errors"].type == "counter"
    passes_promtool(bot_text)

    worker_text, worker = scrape(deployment, "worker")  # counted in the pool process, served by the main one
    assert worker["mnemo_worker_lag_seconds"].type == "histogram"
    assert value(worker, "mnemo_worker_lag_seconds", "mnemo_worker_lag_seconds_count", task="extract_turn") >= 1
    assert value(worker, "mnemo_worker_lag_seconds", "mnemo_worker_lag_seconds_sum", task="extract_turn") > 0
    assert value(worker, "mnemo_llm_requests", "mnemo_llm_requests_total", kind="json", status="ok") >= 1
    assert value(worker, "mnemo_llm_tokens", "mnemo_llm_tokens_total", kind="json", type="prompt") > 0
    assert worker["mnemo_reminder_lateness_seconds"].type == "histogram"
    assert value(worker, "mnemo_reminder_lateness_seconds", "mnemo_reminder_lateness_seconds_count",
                 platform="telegram") == 1
    assert value(worker, "mnemo_reminder_lateness_seconds", "mnemo_reminder_lateness_seconds_sum",
                 platform="telegram") >= LATE.total_seconds()
    assert value(worker, "mnemo_reminder_deliveries", "mnemo_reminder_deliveries_total", platform="telegram",
                 outcome="retry") == 1
    assert value(worker, "mnemo_platform_api_errors", "mnemo_platform_api_errors_total", platform="telegram",
                 reason="rate_limited") == 1
    assert worker["mnemo_worker_tasks"].type == "counter"
    assert value(worker, "mnemo_worker_tasks", "mnemo_worker_tasks_total", task="extract_turn",
                 outcome="succeeded") >= 1
    assert value(worker, "mnemo_worker_tasks", "mnemo_worker_tasks_total", task="deliver_reminder",
                 outcome="retried") == 1
    passes_promtool(worker_text)

    beat_text, beat = scrape(deployment, "beat")
    assert value(beat, "mnemo_database_state_up") == 1
    assert beat["mnemo_outbox_jobs"].type == "gauge"
    assert {s.labels["status"] for s in beat["mnemo_outbox_jobs"].samples} == {"pending", "sent"}
    assert beat["mnemo_outbox_oldest_job_age_seconds"].type == "gauge"
    assert value(beat, "mnemo_outbox_oldest_job_age_seconds") >= 0
    assert beat["mnemo_memories"].type == "gauge"
    assert value(beat, "mnemo_memories", tier="long") >= 1
    assert beat["mnemo_reminders_overdue"].type == "gauge"
    assert beat["mnemo_reminder_oldest_overdue_seconds"].type == "gauge"
    passes_promtool(beat_text)

    api_text, api = scrape(deployment, "api")
    assert api["mnemo_http_requests"].type == "counter"
    assert value(api, "mnemo_http_requests", "mnemo_http_requests_total", route="/api/v1/health", status="200") >= 1
    assert value(api, "mnemo_http_requests", "mnemo_http_requests_total", method="GET",
                 route="/api/v1/memory/long-term/{memory_id}", status="401") == 1  # the template, not the path
    assert value(api, "mnemo_http_requests", "mnemo_http_requests_total", route="unmatched", status="404") == 1
    assert api["mnemo_http_request_duration_seconds"].type == "histogram"
    passes_promtool(api_text)
    for text in (bot_text, worker_text, beat_text, api_text):
        series = "\n".join(line if line.startswith("#") else line.rsplit(" ", 1)[0]  # a value may be 4242
                            for line in text.splitlines())
        assert SAID not in text  # no user id, no words
        assert "4242" not in series
        assert "Quxbridge" not in text


def readiness(deployment: Deployment, role: str) -> tuple[int, dict]:
    status, body = deployment.get(role, "/readyz")
    return status, json.loads(body)


def all_ready(deployment: Deployment) -> bool:
    return all(readiness(deployment, role)[0] == 200 for role in ROLES)


def test_readiness_names_the_database_or_the_broker_that_is_gone(deployment: Deployment) -> None:
    for role in ROLES:
        status, body = readiness(deployment, role)
        assert (status, body["status"], body["role"]) == (200, "ok", role), body
        assert deployment.get(role, "/livez")[0] == 200
    assert set(readiness(deployment, "worker")[1]["checks"]) == {"database", "broker", "llm"}
    assert set(readiness(deployment, "beat")[1]["checks"]) == {"database", "broker"}
    assert set(readiness(deployment, "api")[1]["checks"]) == {"database"}

    deployment.database.down()
    try:
        for role in ROLES:
            status, body = wait_for(lambda role=role: (r := readiness(deployment, role))[0] == 503 and r, 30,
                                    f"{role} to report the database gone")
            assert body["failing"] == ["database"], body
            assert body["checks"]["database"] != "ok", body
        health = subprocess.run([*_command("health"), "--port", str(deployment.ports["worker"])], capture_output=True,
                                text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert health.returncode == 1, health
        assert '"failing": ["database"]' in health.stdout, health
    finally:
        deployment.database.up()
    wait_for(lambda: all_ready(deployment), 30, "every process to be ready again")

    deployment.broker.down()
    try:
        for role in ("telegram", "worker", "beat"):
            status, body = wait_for(lambda role=role: (r := readiness(deployment, role))[0] == 503 and r, 30,
                                    f"{role} to report the broker gone")
            assert body["failing"] == ["broker"], body
        assert readiness(deployment, "api")[0] == 200  # the API uses no broker
    finally:
        deployment.broker.up()
    wait_for(lambda: all_ready(deployment), 60, "every process to be ready again")
