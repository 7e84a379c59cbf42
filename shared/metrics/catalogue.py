"""Every metric Mnemo exposes, in one table: name, type, labels and buckets (docs/operations.md lists them).

Names follow Prometheus's conventions: a ``mnemo_`` prefix, base units in the name (``_seconds``),
``_total`` on counters. They are registered in the default registry when this module is imported; a
Celery worker imports it after choosing multiprocess mode (``PROMETHEUS_MULTIPROC_DIR``), so its pool
processes write to shared files that the worker's main process reads when scraped.

The database's state (outbox depth, memories per tier, overdue reminders) is not here: it is read at
scrape time by ``shared/app/state_metrics.py`` in beat, the one process there is exactly one of.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from prometheus_client import Counter, Gauge, Histogram

DISTRIBUTION = "mnemo-companion"

FAST_SECONDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
"""Database work and retrieval: milliseconds normally, seconds when something is wrong."""
TURN_SECONDS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 120.0)
"""A whole message, or a stage of it: the LLM dominates and may take up to LLM_TIMEOUT_SECONDS."""
BACKGROUND_SECONDS = (0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0)
"""Background delays: a job waiting for a worker, a reminder sent late."""

MESSAGES = Counter(
    "mnemo_messages_total", "Messages handled by the conversation service, by how they were answered "
    "(model, offline: no LLM configured, fallback: the LLM failed or gave nothing usable, busy: answered offline "
    "because every model slot was taken too long (TURN_LLM_CONCURRENCY), limited: answered offline because the "
    "user was over MESSAGE_RATE_PER_USER, duplicate, failed).",
    ["platform", "outcome"])
MESSAGE_SECONDS = Histogram(
    "mnemo_message_duration_seconds", "Time to answer one message (duplicates excluded), from receipt to the "
    "reply recorded.", ["platform"], buckets=TURN_SECONDS)
STAGE_SECONDS = Histogram(
    "mnemo_message_stage_duration_seconds", "The hot path split: recall (retrieval of memories, episodes, "
    "profile), llm (the one model call, retries included), other (everything else: identify, record, apply).",
    ["stage"], buckets=TURN_SECONDS)
RETRIEVAL_SECONDS = Histogram(
    "mnemo_retrieval_duration_seconds", "One recall over a user's memories (lexical, or hybrid with vectors).",
    ["method"], buckets=FAST_SECONDS)

LLM_REQUESTS = Counter(
    "mnemo_llm_requests_total", "Chat requests sent to the LLM endpoint, by kind (turn, json, text), output mode "
    "and status (ok, rate_limited, server_error, client_error, timeout, connection_error, error).",
    ["kind", "mode", "status"])
LLM_SECONDS = Histogram(
    "mnemo_llm_request_duration_seconds", "One chat request to the LLM endpoint, answered or failed.",
    ["kind"], buckets=TURN_SECONDS)
LLM_TOKENS = Counter(
    "mnemo_llm_tokens_total", "Tokens the LLM endpoint reported, by kind of request and type (prompt, completion).",
    ["kind", "type"])

WORKER_LAG = Histogram(
    "mnemo_worker_lag_seconds", "From a job owed in the outbox (its turn stored) to the job done, by task; "
    "task=extract_turn is a turn's wait for its memories to be extracted.", ["task"], buckets=BACKGROUND_SECONDS)
MAINTENANCE_CHANGES = Counter(
    "mnemo_maintenance_changes_total", "What the daily maintenance did to memories, by change (faded, binned: put in "
    "the recycle bin, purged: deleted after 30 days there, expired, evicted, promoted, merged).", ["change"])
MAINTENANCE_RUNS = Counter("mnemo_maintenance_runs_total", "Daily maintenance runs completed.")
TASKS = Counter(
    "mnemo_worker_tasks_total", "Celery tasks run by the worker, by outcome (succeeded, retried, failed).",
    ["task", "outcome"])
TASK_SECONDS = Histogram(
    "mnemo_worker_task_duration_seconds", "Time a Celery task ran in the worker.", ["task"],
    buckets=BACKGROUND_SECONDS)
REMINDER_LATENESS = Histogram(
    "mnemo_reminder_lateness_seconds", "How long after its time a reminder was sent.", ["platform"],
    buckets=BACKGROUND_SECONDS)
REMINDER_DELIVERIES = Counter(
    "mnemo_reminder_deliveries_total", "Reminder delivery attempts, by outcome (sent, retry, refused, skipped).",
    ["platform", "outcome"])
FOLLOWUP_DELIVERIES = Counter(
    "mnemo_followup_deliveries_total", "Follow-up delivery attempts, by outcome (sent, retry, refused, skipped).",
    ["platform", "outcome"])
FOLLOWUPS_ANSWERED = Counter(
    "mnemo_followups_answered_total", "Follow-ups the user answered (their next message in that chat).")

PLATFORM_API_ERRORS = Counter(
    "mnemo_platform_api_errors_total", "Failed calls to Telegram's or Discord's API, by reason (rate_limited: "
    "HTTP 429; server_error: 5xx; client_error: other 4xx; network: no answer).", ["platform", "reason"])

HTTP_REQUESTS = Counter(
    "mnemo_http_requests_total", "Requests the memory API answered, by route template and status code.",
    ["method", "route", "status"])
HTTP_SECONDS = Histogram(
    "mnemo_http_request_duration_seconds", "Time the memory API took to answer a request.", ["route"],
    buckets=FAST_SECONDS)

BUILD_INFO = Gauge("mnemo_build_info", "Always 1; the running Mnemo version is the label.", ["version"],
                   multiprocess_mode="max")


def _installed_version() -> str:
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"


BUILD_INFO.labels(_installed_version()).set(1)
