"""What each daily maintenance run did (shared/lifecycle/maintenance.py), kept for ``mnemo doctor`` and the operator."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, DateTime, Index
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from shared.db.models import Base, created_column


class MaintenanceRun(Base):
    """One run of the daily jobs: the moment it ran as of (a replay or a test may set it) and its report."""

    __tablename__ = "maintenance_runs"
    __table_args__ = (Index(None, "finished_at"),)
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    as_of: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    report: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False)
    finished_at: Mapped[datetime] = created_column()
