"""Web panel sessions: who a browser is signed in as, until when, and its CSRF token.

The cookie holds a random secret; the table holds only its SHA-256, so a copy of the database
cannot be used to sign in. A session belongs to one user and ends when it expires, when the user
signs out, or when the user is deleted.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, DateTime, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from shared.db.models import Base, created_column


class WebSession(Base):
    """A signed-in browser."""

    __tablename__ = "web_sessions"
    __table_args__ = (
        Index(None, "user_id"),
        Index(None, "expires_at"),
    )
    secret_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    csrf_token: Mapped[str] = mapped_column(String(64), nullable=False)
    created_at: Mapped[datetime] = created_column()
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
