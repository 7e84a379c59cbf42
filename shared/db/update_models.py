"""Platform updates a bot has received (:mod:`shared.db.update_log`)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, DateTime, Index, SmallInteger, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from shared.db.models import Base, created_column


class PlatformUpdate(Base):
    """One update (Telegram's ``update_id``) that a bot replica received: its body until it is handled, and
    which handling attempt marked it handled (in the transaction of the turn or change it made)."""

    __tablename__ = "platform_updates"
    __table_args__ = (Index("platform_updates_unhandled", "platform", "seen_at",
                            postgresql_where=text("handled_at IS NULL")),)
    platform: Mapped[str] = mapped_column(String(16), primary_key=True)
    update_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    seen_at: Mapped[datetime] = created_column()
    """When it was received, or last claimed again after its replica went silent."""
    body: Mapped[str | None] = mapped_column(Text)
    """The update as Telegram sent it (JSON), until it is handled."""
    handled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    handled_by: Mapped[str | None] = mapped_column(String(36))
    attempts: Mapped[int] = mapped_column(SmallInteger, server_default="1", nullable=False)
