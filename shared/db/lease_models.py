"""Leases: which process holds a duty there must be only one of (beat), until when.

A row, not a session-level advisory lock, so that it holds through a connection pooler in
transaction mode (PgBouncer), where a session's lock would stay with a server connection that other
clients go on to use. :mod:`shared.db.leases` takes, renews and gives them back.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, String
from sqlalchemy.orm import Mapped, mapped_column

from shared.db.models import Base


class LeaseRow(Base):
    """A duty (``name``) held by one process (``holder``) until ``expires_at``, unless renewed."""

    __tablename__ = "process_leases"
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    holder: Mapped[str] = mapped_column(String(160), nullable=False)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
