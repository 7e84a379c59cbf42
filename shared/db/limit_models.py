"""Rate-limit counters shared by every replica when Redis is not there (:mod:`shared.db.limit_storage`)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, DateTime, String
from sqlalchemy.orm import Mapped, mapped_column

from shared.db.models import Base


class RateLimitCounter(Base):
    """The hits of one limit's key (e.g. one address's failed sign-ins) in the window ending ``expires_at``."""

    __tablename__ = "rate_limit_counters"
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    count: Mapped[int] = mapped_column(BigInteger, nullable=False)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
