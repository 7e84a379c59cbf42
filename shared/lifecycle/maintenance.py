"""The daily maintenance, as one run "as of" a moment (DESIGN.md §4): decay, then the reviews, then dedup.

The beat runs it once a day (``mnemo.run_maintenance``); ``mnemo maintenance --now 2027-06-01`` runs it as of any
moment, and so do the tests and ``mnemo bench replay`` (a year of lifecycle in seconds: call it once per simulated
day). Each run's report — faded, put in the recycle bin, purged, expired, evicted, promoted, merged — is logged as
one line, counted in the metrics (``mnemo_maintenance_changes_total``) and kept (``maintenance_runs``) for
``mnemo doctor``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from shared.lifecycle.decay import DecayReport, run_decay
from shared.lifecycle.dedup import DedupReport, run_dedup
from shared.lifecycle.reviews import ReviewReport, run_reviews
from shared.llm.client import ChatModel
from shared.metrics import record
from shared.repositories.uow import UnitOfWork
from shared.usage.policy import QuotaPolicy

log = logging.getLogger(__name__)
UowFactory = Callable[[], UnitOfWork]


@dataclass(frozen=True)
class MaintenanceReport:
    """What one daily run did, every user's memories together."""

    as_of: datetime
    decay: DecayReport
    reviews: ReviewReport
    dedup: DedupReport

    def changes(self) -> dict[str, int]:
        """The headline counts: what became of memories."""
        return {"faded": self.decay.memories_decayed,
                "binned": self.decay.memories_binned + self.reviews.deleted,
                "purged": self.decay.memories_purged, "expired": self.decay.memories_expired,
                "evicted": self.decay.memories_evicted, "promoted": self.reviews.promoted,
                "merged": self.dedup.merged}

    def line(self) -> str:
        """The report as one log line."""
        counts = " ".join(f"{name}={count}" for name, count in self.changes().items())
        return (f"maintenance as of {self.as_of.isoformat()}: {counts} kept={self.reviews.kept} "
                f"episodes_deleted={self.decay.episodes_deleted} rounds_deleted={self.decay.turns_deleted} "
                f"llm_calls={self.reviews.llm_calls + self.dedup.llm_calls}")

    def as_json(self) -> dict[str, Any]:
        return {"as_of": self.as_of.isoformat(), "changes": self.changes(), "decay": asdict(self.decay),
                "reviews": asdict(self.reviews), "dedup": asdict(self.dedup)}


def run_maintenance(uow_factory: UowFactory, now: datetime, *, chat_model: ChatModel | None,
                    eviction_threshold: int | None = None, conversation_retention_days: int | None = None,
                    quota: QuotaPolicy | None = None) -> MaintenanceReport:
    """Every daily job as of ``now``, in order; logged, counted and kept. Idempotent for the same day."""
    report = MaintenanceReport(
        now,
        run_decay(uow_factory, now, eviction_threshold=eviction_threshold,
                  conversation_retention_days=conversation_retention_days),
        run_reviews(uow_factory, chat_model, now, quota=quota),
        run_dedup(uow_factory, now, chat_model=chat_model, quota=quota))
    log.info(report.line())
    record.maintenance_run(report.changes())
    with uow_factory() as uow:
        uow.maintenance.record(now, report.as_json())
        uow.commit()
    return report


def last_report(uow_factory: UowFactory) -> tuple[datetime, dict[str, Any]] | None:
    """When the newest run finished and its report, if any run has."""
    with uow_factory() as uow:
        run = uow.maintenance.latest()
        return None if run is None else (run.finished_at, dict(run.report))
