"""One call per fact worth counting, so the code that knows the fact records it in one line.

Every label value is checked against a fixed list (anything else is counted as ``other``), so a
caller's mistake cannot grow a metric without bound or put a user's words in a label.
"""

from __future__ import annotations

from collections.abc import Mapping

from shared.db.kinds import PLATFORMS
from shared.metrics import catalogue as m

MESSAGE_OUTCOMES = ("model", "offline", "fallback", "busy", "limited", "duplicate", "failed")
STAGES = ("recall", "llm", "other")
LLM_KINDS = ("turn", "json", "text")
LLM_STATUSES = ("ok", "rate_limited", "server_error", "client_error", "timeout", "connection_error", "error")
TOKEN_TYPES = {"prompt_tokens": "prompt", "completion_tokens": "completion"}
TASK_OUTCOMES = ("succeeded", "retried", "failed")
DELIVERY_OUTCOMES = ("sent", "retry", "refused", "skipped")
HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
MAINTENANCE_CHANGES = ("faded", "binned", "purged", "expired", "evicted", "promoted", "merged")
TASK_PREFIX = "mnemo."
OTHER = "other"


def _one_of(value: str | None, allowed: tuple[str, ...]) -> str:
    return value if value in allowed else OTHER


def _task(name: str | None) -> str:
    """A Celery task's name without the ``mnemo.`` prefix; anything not Mnemo's is ``other``."""
    return name[len(TASK_PREFIX):] if name and name.startswith(TASK_PREFIX) else OTHER


def message_handled(platform: str, outcome: str, seconds: float | None = None,
                    stages: Mapping[str, float] | None = None) -> None:
    """A message answered (or not: ``failed``), how long it took and where the time went."""
    platform = _one_of(platform, PLATFORMS)
    m.MESSAGES.labels(platform, _one_of(outcome, MESSAGE_OUTCOMES)).inc()
    if seconds is not None:
        m.MESSAGE_SECONDS.labels(platform).observe(seconds)
    for stage, stage_seconds in (stages or {}).items():
        m.STAGE_SECONDS.labels(_one_of(stage, STAGES)).observe(max(stage_seconds, 0.0))


def retrieval(method: str, seconds: float) -> None:
    m.RETRIEVAL_SECONDS.labels(_one_of(method, ("lexical", "hybrid"))).observe(seconds)


def llm_request(kind: str, mode: str, status: str, seconds: float, usage: Mapping[str, int] | None = None) -> None:
    """One chat request to the LLM, answered (``ok``) or failed, with the tokens it reported."""
    kind = _one_of(kind, LLM_KINDS)
    m.LLM_REQUESTS.labels(kind, mode, _one_of(status, LLM_STATUSES)).inc()
    m.LLM_SECONDS.labels(kind).observe(seconds)
    for field, token_type in TOKEN_TYPES.items():
        count = (usage or {}).get(field) or 0
        if count > 0:
            m.LLM_TOKENS.labels(kind, token_type).inc(count)


def job_done(task: str, seconds: float) -> None:
    """An outbox job done ``seconds`` after it was owed."""
    m.WORKER_LAG.labels(_task(TASK_PREFIX + task)).observe(max(seconds, 0.0))


def task_finished(task_name: str | None, outcome: str, seconds: float | None = None) -> None:
    task = _task(task_name)
    m.TASKS.labels(task, _one_of(outcome, TASK_OUTCOMES)).inc()
    if seconds is not None:
        m.TASK_SECONDS.labels(task).observe(seconds)


def reminder_delivery(platform: str | None, outcome: str, lateness_seconds: float | None = None) -> None:
    platform = _one_of(platform, PLATFORMS)
    m.REMINDER_DELIVERIES.labels(platform, _one_of(outcome, DELIVERY_OUTCOMES)).inc()
    if lateness_seconds is not None:
        m.REMINDER_LATENESS.labels(platform).observe(max(lateness_seconds, 0.0))


def followup_delivery(platform: str | None, outcome: str) -> None:
    m.FOLLOWUP_DELIVERIES.labels(_one_of(platform, PLATFORMS), _one_of(outcome, DELIVERY_OUTCOMES)).inc()


def followups_answered(count: int) -> None:
    if count > 0:
        m.FOLLOWUPS_ANSWERED.inc(count)


def platform_api_error(platform: str, status: int | None) -> None:
    """A call to a platform's API that failed: HTTP ``status``, or None when no answer came."""
    if status is None:
        reason = "network"
    elif status == 429:
        reason = "rate_limited"
    elif status >= 500:
        reason = "server_error"
    else:
        reason = "client_error"
    m.PLATFORM_API_ERRORS.labels(_one_of(platform, PLATFORMS), reason).inc()


def http_request(method: str, route: str, status: int, seconds: float) -> None:
    """A request the API answered; ``route`` is its template (``/api/v1/memories/{memory_id}``), never the path."""
    m.HTTP_REQUESTS.labels(_one_of(method, HTTP_METHODS), route, str(status)).inc()
    m.HTTP_SECONDS.labels(route).observe(seconds)


def maintenance_run(changes: Mapping[str, int]) -> None:
    """One daily maintenance run and how many memories each kind of change touched."""
    m.MAINTENANCE_RUNS.inc()
    for change, count in changes.items():
        if count:
            m.MAINTENANCE_CHANGES.labels(_one_of(change, MAINTENANCE_CHANGES)).inc(count)
