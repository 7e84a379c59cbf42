"""The metric catalogue and what records into it: Prometheus's naming conventions, bounded labels, the
classification of failures, the database-state gauges and the readiness verdicts (fakes only)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.parser import text_string_to_metric_families
from telegram.error import BadRequest, Forbidden, NetworkError, RetryAfter, TimedOut

from bot.telegram_bot import api_error_status
from shared.app.processes import companion_metrics_port
from shared.app.readiness import Probe, Readiness
from shared.app.state_metrics import DatabaseStateCollector
from shared.llm.retries import request_status
from shared.llm.sdk import openai
from shared.metrics import catalogue, record
from shared.repositories.operations import OperationalSnapshot

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
FORBIDDEN_LABELS = {"user", "user_id", "chat", "chat_id", "text", "message", "content"}


def catalogue_metrics() -> list:
    return [value for value in vars(catalogue).values() if isinstance(value, MetricWrapperBase)]


@pytest.mark.parametrize("metric", catalogue_metrics(), ids=lambda metric: metric._name)
def test_every_metric_follows_the_prometheus_naming_conventions(metric) -> None:
    assert metric._name.startswith("mnemo_")
    if metric._type == "counter":
        assert not metric._name.endswith("_total")  # prometheus-client adds it
    if metric._type == "histogram":
        assert metric._name.endswith("_seconds"), "histograms here measure time, in seconds"
    assert "_ms" not in metric._name
    assert "milliseconds" not in metric._name
    assert not FORBIDDEN_LABELS & set(metric._labelnames), f"{metric._name} would carry a user's id or words"
    assert metric._documentation


def samples(metric, name: str, **labels: str) -> float:
    registry = CollectorRegistry()
    registry.register(metric)
    families = text_string_to_metric_families(generate_latest(registry).decode())
    return sum(sample.value for family in families for sample in family.samples
               if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()))


def test_a_label_value_off_the_list_is_counted_as_other() -> None:
    before = samples(catalogue.MESSAGES, "mnemo_messages_total", platform="other", outcome="other")
    record.message_handled("matrix", "something new")
    assert samples(catalogue.MESSAGES, "mnemo_messages_total", platform="other", outcome="other") == before + 1


def test_a_message_records_its_outcome_time_and_stages() -> None:
    before = samples(catalogue.STAGE_SECONDS, "mnemo_message_stage_duration_seconds_count", stage="recall")
    record.message_handled("console", "model", 0.5, {"recall": 0.01, "llm": 0.4, "other": 0.09})
    assert samples(catalogue.STAGE_SECONDS, "mnemo_message_stage_duration_seconds_count", stage="recall") == before + 1


def test_tokens_are_counted_by_kind_and_type() -> None:
    before = samples(catalogue.LLM_TOKENS, "mnemo_llm_tokens_total", kind="text", type="completion")
    record.llm_request("text", "text", "ok", 0.2, {"prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127})
    assert samples(catalogue.LLM_TOKENS, "mnemo_llm_tokens_total", kind="text", type="completion") == before + 7


@pytest.mark.parametrize(("status", "reason"), [(429, "rate_limited"), (502, "server_error"), (403, "client_error"),
                                                (None, "network")])
def test_platform_api_errors_are_counted_by_reason(status: int | None, reason: str) -> None:
    before = samples(catalogue.PLATFORM_API_ERRORS, "mnemo_platform_api_errors_total", platform="discord",
                     reason=reason)
    record.platform_api_error("discord", status)
    assert samples(catalogue.PLATFORM_API_ERRORS, "mnemo_platform_api_errors_total", platform="discord",
                   reason=reason) == before + 1


def _status_error(status: int) -> openai.APIStatusError:
    request = httpx.Request("POST", "http://llm/v1/chat/completions")
    return openai.APIStatusError("refused", response=httpx.Response(status, request=request), body=None)


def test_an_llm_failure_is_named_by_what_happened() -> None:
    request = httpx.Request("POST", "http://llm/v1/chat/completions")
    assert request_status(None) == "ok"
    assert request_status(_status_error(429)) == "rate_limited"
    assert request_status(_status_error(503)) == "server_error"
    assert request_status(_status_error(400)) == "client_error"
    assert request_status(openai.APITimeoutError(request=request)) == "timeout"
    assert request_status(openai.APIConnectionError(request=request)) == "connection_error"


def test_a_telegram_error_stands_for_the_status_telegram_answered() -> None:
    assert api_error_status(RetryAfter(3)) == 429
    assert api_error_status(BadRequest("chat not found")) == 400
    assert api_error_status(Forbidden("blocked")) == 403
    assert api_error_status(TimedOut()) is None
    assert api_error_status(NetworkError("reset")) is None


def test_companions_serve_on_the_ports_after_the_front_end() -> None:
    assert [companion_metrics_port(9464, role) for role in ("worker", "beat", "api")] == ["9465", "9466", "9467"]
    assert companion_metrics_port(0, "worker") == "0"
    assert companion_metrics_port(None, "beat") == ""
    assert companion_metrics_port(9464, "doctor") == ""


def state(snapshot_or_error) -> dict:
    def read(_now: datetime) -> OperationalSnapshot:
        if isinstance(snapshot_or_error, Exception):
            raise snapshot_or_error
        return snapshot_or_error

    registry = CollectorRegistry()
    registry.register(DatabaseStateCollector(read, clock=lambda: NOW))
    text = generate_latest(registry).decode()
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def test_the_database_state_becomes_gauges_with_every_tier_and_status() -> None:
    gauges = state(OperationalSnapshot(owed_jobs={"sent": 3}, oldest_owed_at=NOW - timedelta(minutes=5),
                                       memories_by_tier={"long": 7, "core": 1}, overdue_reminders=2,
                                       oldest_overdue_at=NOW - timedelta(seconds=90)))
    assert gauges[("mnemo_database_state_up", ())] == 1
    assert gauges[("mnemo_outbox_jobs", (("status", "sent"),))] == 3
    assert gauges[("mnemo_outbox_jobs", (("status", "pending"),))] == 0
    assert gauges[("mnemo_outbox_oldest_job_age_seconds", ())] == 300
    assert gauges[("mnemo_memories", (("tier", "long"),))] == 7
    assert gauges[("mnemo_memories", (("tier", "transient"),))] == 0
    assert gauges[("mnemo_reminders_overdue", ())] == 2
    assert gauges[("mnemo_reminder_oldest_overdue_seconds", ())] == 90


def test_an_unreadable_database_is_reported_not_raised() -> None:
    gauges = state(ConnectionError("the database is away"))
    assert gauges == {("mnemo_database_state_up", ()): 0}


def test_readiness_names_what_fails_and_what_does_not_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shared.app.readiness.PROBE_TIMEOUT_SECONDS", 0.2)

    def refuse() -> None:
        raise ConnectionRefusedError("connection refused by secret-host-password")

    hung = threading.Event()
    readiness = Readiness([Probe("database", lambda: None), Probe("broker", refuse),
                           Probe("llm", lambda: hung.wait(10))], secrets=["secret-host-password"])
    report = readiness.report()
    hung.set()
    readiness.close()
    assert not report.ready
    assert report.failing == ["broker", "llm"]
    assert report.checks["database"] == "ok"
    assert report.checks["broker"].startswith("ConnectionRefusedError: connection refused by")
    assert "secret-host-password" not in report.checks["broker"]
    assert report.checks["llm"].startswith("no answer within")
