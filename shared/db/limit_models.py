"""What every replica shares when Redis is not there: rate-limit counters (:mod:`shared.db.limit_storage`) and
the model gate's holds (:mod:`shared.db.model_gate`)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, DateTime, String
from sqlalchemy.orm import Mapped, mapped_column

from shared.db.models import Base, one_of

MODEL_CALL_KINDS = ("live", "background")


class RateLimitCounter(Base):
    """The hits of one limit's key (e.g. one address's failed sign-ins) in the window ending ``expires_at``."""

    __tablename__ = "rate_limit_counters"
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    count: Mapped[int] = mapped_column(BigInteger, nullable=False)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)


class ModelCallHold(Base):
    """A live turn or a background call in flight on the shared model server, until ``expires_at`` at the latest
    (a process that died leaves a row that simply runs out)."""

    __tablename__ = "model_call_holds"
    __table_args__ = (one_of("kind", MODEL_CALL_KINDS),)
    holder: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
