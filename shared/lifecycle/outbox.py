"""The jobs outbox relay: owed background work is handed to the broker after commit, and again by
the sweep when it was lost (a broker that dropped its queue, a worker killed mid-task).

``send`` is whatever puts a task on the broker (the Celery app in workers and bots); this module
knows nothing of Celery. A send that cannot reach the broker raises :class:`BrokerUnavailable`: the
job stays owed and the sweep sends it later. Any other error is a bug and propagates. Tasks are
idempotent, so sending a job twice is safe; and a job a worker is running is claimed (:func:`running`), its
claim renewed while the worker lives, so the sweep never sends it again meanwhile and a second delivery does
not run it beside the first (a turn extracted twice at once). Each job is sent within the log context it was owed in
(its turn, platform and user hash), which the Celery app puts in the task's headers.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from shared import log_context
from shared.db.memory_models import OutboxJob
from shared.errors import BrokerUnavailable, DatabaseConflict, DatabaseUnavailable
from shared.metrics import record
from shared.repositories.uow import UnitOfWork

REDISPATCH_AFTER = timedelta(minutes=2)
"""A job sent this long ago and still not done is sent again by the sweep."""
SWEEP_BATCH = 200
JOB_LEASE = timedelta(seconds=60)
"""How long a worker's claim on a job it runs lasts (``OUTBOX_CLAIM_SECONDS``); renewed every third of it while
the worker lives, so a job whose worker died is owed again a lease (and the sweep's age) later."""

Send = Callable[[str, dict[str, Any]], None]
log = logging.getLogger(__name__)


def dispatch_jobs(uow_factory: Callable[[], UnitOfWork], send: Send, job_ids: Iterable[int], now: datetime) -> int:
    """Send the given jobs (those still owed); returns how many were sent."""
    ids = list(job_ids)
    if not ids:
        return 0
    with uow_factory() as uow:
        jobs = uow.outbox.still_owed(ids)
        sent = _send_all(uow, send, jobs, now)
        uow.commit()
    return sent


def sweep_jobs(uow_factory: Callable[[], UnitOfWork], send: Send, now: datetime,
               redispatch_after: timedelta = REDISPATCH_AFTER) -> int:
    """Send again every job not done whose last dispatch is older than ``redispatch_after``."""
    with uow_factory() as uow:
        jobs = uow.outbox.owed(now - redispatch_after, limit=SWEEP_BATCH)
        sent = _send_all(uow, send, jobs, now)
        uow.commit()
    if sent:
        log.info("outbox sweep sent %d owed job(s) again", sent)
    return sent


def finish_job(uow_factory: Callable[[], UnitOfWork], job_id: int | None, now: datetime) -> None:
    """Mark a job done once its task has succeeded (a second run finds it done and changes nothing); the time
    since it was owed is the worker's lag in the metrics."""
    if job_id is None:
        return
    with uow_factory() as uow:
        done = uow.outbox.mark_done(job_id, now)
        uow.commit()
    if done is not None:
        task, owed_at = done
        record.job_done(task, (now - owed_at).total_seconds())


def job_is_done(uow_factory: Callable[[], UnitOfWork], job_id: int | None) -> bool:
    if job_id is None:
        return False
    with uow_factory() as uow:
        return uow.outbox.is_done(job_id)


@contextmanager
def running(uow_factory: Callable[[], UnitOfWork], job_id: int | None, clock: Callable[[], datetime],
            lease: timedelta = JOB_LEASE) -> Iterator[bool]:
    """Yields True when this worker runs the job now: claimed until a ``lease`` from now, renewed from a thread
    while the block runs, released when it ends (done jobs drop their claim). False: another worker's claim still
    runs (a second delivery), and this one leaves the job to it. A task sent without a job (None) just runs."""
    if job_id is None:
        yield True
        return
    with uow_factory() as uow:
        claimed = uow.outbox.claim(job_id, clock(), clock() + lease)
        uow.commit()
    if not claimed:
        log.info("job %s is already running in another worker; leaving it to that one", job_id)
        yield False
        return
    stop = threading.Event()
    renewer = threading.Thread(target=_renew, args=(uow_factory, job_id, clock, lease, stop),
                               name=f"job-{job_id}-lease", daemon=True)
    renewer.start()
    try:
        yield True
    finally:
        stop.set()
        renewer.join()
        with uow_factory() as uow:
            uow.outbox.release_claim(job_id)
            uow.commit()


def _renew(uow_factory: Callable[[], UnitOfWork], job_id: int, clock: Callable[[], datetime], lease: timedelta,
           stop: threading.Event) -> None:
    while not stop.wait(lease.total_seconds() / 3):
        try:
            with uow_factory() as uow:
                uow.outbox.renew_claim(job_id, clock() + lease)
                uow.commit()
        except (DatabaseUnavailable, DatabaseConflict):  # the claim lasts a lease: the next renewal may pass
            log.warning("could not renew the claim on job %s", job_id, exc_info=True)


def _send_all(uow: UnitOfWork, send: Send, jobs: list[OutboxJob], now: datetime) -> int:
    sent = 0
    for job in jobs:
        try:
            with log_context.bound(log_context.carried(job.log_context)):  # the task's headers take them along
                send(job.task, {"job_id": job.id, **job.payload})
        except BrokerUnavailable as exc:  # the job stays owed and the sweep retries
            log.warning("could not send job %s (%s) to the broker, the sweep sends it later: %s", job.id, job.task,
                        exc, exc_info=log.isEnabledFor(logging.DEBUG))
            break
        uow.outbox.mark_sent(job.id, now)
        sent += 1
    return sent
