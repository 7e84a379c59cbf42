"""The daily maintenance runs' reports: one row per run, the newest read by ``mnemo doctor``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from shared.db.maintenance_models import MaintenanceRun


class MaintenanceRunRepository:
    """Deployment-wide: a run's report counts every user's memories, never names one."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def record(self, as_of: datetime, report: dict[str, Any]) -> None:
        self.session.add(MaintenanceRun(as_of=as_of, report=report))

    def latest(self) -> MaintenanceRun | None:
        return self.session.scalars(select(MaintenanceRun).order_by(MaintenanceRun.id.desc()).limit(1)).first()
