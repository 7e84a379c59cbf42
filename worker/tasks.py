"""Thin Celery tasks: ids in, one service call, idempotent, retried only on transient errors.

Outbox-backed tasks receive ``job_id``: they return at once when the job is already done (it was
sent twice), or put it off to the next UTC day when its user has spent today's token allowance, and
mark it done after the service succeeded. Exceptions listed in ``TRANSIENT`` (named transient failures, a
database error first named by :func:`shared.db.availability.named_failure`) are retried with exponential
backoff and jitter; anything else, a bug (a constraint, a bad query, a type error), fails once, logged with
its traceback: retrying it would only repeat paid model calls for minutes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta

from sqlalchemy.exc import DBAPIError

from shared.db.availability import named_failure
from shared.errors import BrokerUnavailable, DatabaseConflict, DatabaseUnavailable
from shared.followups import delivery as followups
from shared.lifecycle import decay, dedup, embedding, episodes, maintenance, reviews, sitting
from shared.lifecycle import extraction as knowledge
from shared.lifecycle import outbox as jobs
from shared.metrics import record
from shared.recall import reindex as search_reindex
from shared.reminders import service as reminders
from shared.usage import quota
from worker.celery_app import app, send_on
from worker.context import context

TRANSIENT = (DatabaseUnavailable, DatabaseConflict, BrokerUnavailable, ConnectionError, TimeoutError)
"""What a task retries: the database away, a transaction that lost a race, the broker away, a socket that failed."""
RETRY = {"autoretry_for": TRANSIENT, "retry_backoff": 2, "retry_backoff_max": 300, "retry_jitter": True,
         "max_retries": 8}


def mnemo_task(name: str, **options) -> Callable:
    """Registers ``mnemo.<name>`` retried on :data:`TRANSIENT`; a database error raised outside a unit of work
    (which names its own) is named first, so only the transient ones are retried."""
    def register(function: Callable) -> Callable:
        @functools.wraps(function)
        def named(*args, **kwargs):
            try:
                return function(*args, **kwargs)
            except DBAPIError as exc:
                failure = named_failure(exc)
                if failure is exc:
                    raise
                raise failure from exc
        return app.task(name=f"mnemo.{name}", **RETRY, **options)(named)
    return register


def send_task(task: str, payload: dict) -> None:
    """How the worker's outbox relay (``sweep_outbox``, ``close_idle_sessions``) puts a job on the broker, on the
    worker's own app; a front-end sends on an app of its own (:func:`shared.app.bootstrap.job_dispatcher`)."""
    send_on(app, task, payload)


@contextmanager
def _owed(job_id: int | None) -> Iterator[bool]:
    """True inside the block when this worker does the job now: not done yet, its user's allowance not spent
    today, and no other worker running it (claimed while the block runs, :func:`shared.lifecycle.outbox.running`)."""
    ctx = context()
    if jobs.job_is_done(ctx.uow, job_id) or quota.put_off_if_over(ctx.uow, ctx.quota, job_id, ctx.now()):
        yield False
        return
    with jobs.running(ctx.uow, job_id, ctx.now, timedelta(seconds=ctx.settings.outbox_claim_seconds)) as mine:
        yield mine


def _done(job_id: int | None) -> None:
    jobs.finish_job(context().uow, job_id, context().now())


@mnemo_task("extract_turn")
def extract_turn(job_id: int | None = None, turn_id: int = 0, recalled_memory_ids: list[int] | None = None) -> None:
    with _owed(job_id) as owed:
        if not owed:
            return
        ctx = context()  # turns of the same session still waiting go into the same LLM call
        knowledge.extract_waiting_with(ctx.uow, ctx.chat_model, turn_id, list(recalled_memory_ids or []), ctx.now())
        _done(job_id)


@mnemo_task("embed_memory")
def embed_memory(job_id: int | None = None, memory_id: int = 0, user_id: int = 0) -> None:
    ctx = context()
    with _owed(job_id) as owed:
        if not owed:
            return
        if ctx.embedder is not None:
            embedding.embed_memories(ctx.uow, ctx.embedder, ctx.vectors, user_id, [memory_id], now=ctx.now())
        _done(job_id)


@mnemo_task("embed_round")
def embed_round(job_id: int | None = None, turn_id: int = 0, user_id: int = 0) -> None:
    ctx = context()
    with _owed(job_id) as owed:
        if not owed:
            return
        if ctx.embedder is not None:
            embedding.embed_rounds(ctx.uow, ctx.embedder, ctx.vectors, user_id, [turn_id], now=ctx.now())
        _done(job_id)


@mnemo_task("close_session")
def close_session(job_id: int | None = None, session_id: int = 0) -> None:
    with _owed(job_id) as owed:
        if not owed:
            return
        ctx = context()
        sitting.close_sitting(ctx.uow, ctx.chat_model, session_id, ctx.now(),
                              default_timezone=ctx.settings.default_timezone)
        _done(job_id)


@mnemo_task("summarise_session")
def summarise_session(job_id: int | None = None, session_id: int = 0, part: int | None = None) -> None:
    with _owed(job_id) as owed:
        if not owed:
            return
        ctx = context()
        episodes.summarise_session(ctx.uow, ctx.chat_model, session_id, ctx.now(), part=part,
                                   default_timezone=ctx.settings.default_timezone)
        _done(job_id)


@mnemo_task("close_idle_sessions")
def close_idle_sessions() -> None:
    ctx = context()
    owed = episodes.close_idle_sittings(ctx.uow, ctx.now(), timedelta(minutes=ctx.settings.session_idle_minutes))
    jobs.dispatch_jobs(ctx.uow, send_task, owed, ctx.now())


@mnemo_task("sweep_outbox")
def sweep_outbox() -> None:
    ctx = context()
    jobs.sweep_jobs(ctx.uow, send_task, ctx.now(), timedelta(seconds=ctx.settings.outbox_redispatch_seconds))


@mnemo_task("scan_reminders")
def scan_reminders() -> None:
    ctx = context()
    lease = timedelta(seconds=ctx.settings.reminder_lease_seconds)
    for claim in reminders.claim_due_reminders(ctx.uow, ctx.now(), lease=lease):
        deliver_reminder.delay(claim.todo_id, claim.attempt)


@mnemo_task("deliver_reminder", bind=True)
def deliver_reminder(self, todo_id: int, attempt: int) -> str:
    ctx = context()
    outcome = reminders.deliver_reminder(ctx.uow, senders(), todo_id, attempt, ctx.now())
    record.reminder_delivery(outcome.platform, outcome.kind, outcome.lateness_seconds)
    if outcome.retry_after is not None:
        raise self.retry(countdown=outcome.retry_after, max_retries=8)
    return outcome.kind


@mnemo_task("scan_followups")
def scan_followups() -> None:
    ctx = context()
    for claim in followups.claim_due_followups(ctx.uow, ctx.now(), followup_rules()):
        deliver_followup.delay(claim.thread_id, claim.attempt)


@mnemo_task("deliver_followup", bind=True)
def deliver_followup(self, thread_id: int, attempt: int) -> str:
    ctx = context()
    outcome = followups.deliver_followup(ctx.uow, senders(), thread_id, attempt, ctx.now(), rules=followup_rules(),
                                         chat_model=ctx.chat_model, quota=ctx.quota, blocked=access().blocks_any)
    record.followup_delivery(outcome.platform, outcome.kind)
    if outcome.retry_after is not None:
        raise self.retry(countdown=outcome.retry_after, max_retries=8)
    return outcome.kind


@mnemo_task("run_maintenance")
def run_maintenance() -> None:
    """The daily run: decay, reviews, dedup as of the worker's clock, its report logged, counted and kept."""
    ctx = context()
    maintenance.run_maintenance(ctx.uow, ctx.now(), chat_model=ctx.chat_model,
                                eviction_threshold=ctx.settings.memory_eviction_threshold,
                                conversation_retention_days=ctx.settings.conversation_retention_days,
                                quota=ctx.quota)


@mnemo_task("run_decay")
def run_decay() -> None:
    ctx = context()
    decay.run_decay(ctx.uow, ctx.now(), eviction_threshold=ctx.settings.memory_eviction_threshold,
                    conversation_retention_days=ctx.settings.conversation_retention_days)


@mnemo_task("run_reviews")
def run_reviews() -> None:
    ctx = context()
    reviews.run_reviews(ctx.uow, ctx.chat_model, ctx.now(), quota=ctx.quota)


@mnemo_task("run_dedup")
def run_dedup() -> None:
    ctx = context()
    dedup.run_dedup(ctx.uow, ctx.now(), chat_model=ctx.chat_model, quota=ctx.quota)


@mnemo_task("retokenize_search")
def retokenize_search() -> int:
    """Search tokens of rows left by an older tokenizer (after an upgrade); nothing when all are current."""
    return search_reindex.retokenize_all_stale(context().uow)


_senders: dict | None = None
_access = None


def senders() -> dict:
    """The platforms' outgoing APIs, built once per process."""
    global _senders
    if _senders is None:
        from shared.delivery.platform_api import senders_from_settings
        from shared.limits import shared_storage

        ctx = context()
        _senders = senders_from_settings(ctx.settings, shared_storage(ctx.settings.redis_url, ctx.engine))
    return _senders


def access():  # -> AccessService, imported late as the senders are
    """Who is blocked (the settings' lists and the stored ones), built once per process."""
    global _access
    if _access is None:
        from shared.access.service import AccessService

        ctx = context()
        _access = AccessService(ctx.uow, ctx.settings.access_policy(),
                                refresh_seconds=ctx.settings.access_refresh_seconds)
    return _access


def followup_rules() -> followups.FollowupRules:
    return followups.FollowupRules.from_settings(context().settings)
