"""Web panel sessions: who a browser is signed in as, until when, and its CSRF token.

The cookie holds a random secret; the table holds only its SHA-256, so a copy of the database
cannot be used to sign in. A session belongs to one user and ends when it expires, when the user
signs out, or when the user is deleted.
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from sqlalchemy import BigInteger, DateTime, ForeignKey, Index, String, delete, select
from sqlalchemy.orm import Mapped, Session, mapped_column

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


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


class WebSessionRepository:
    """Starts, finds and ends web sessions by the cookie's secret."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def start(self, secret: str, user_id: int, csrf_token: str, *, now: datetime, expires_at: datetime) -> WebSession:
        row = WebSession(secret_hash=secret_hash(secret), user_id=user_id, csrf_token=csrf_token, created_at=now,
                         expires_at=expires_at)
        self.session.add(row)
        self.session.flush()
        return row

    def find(self, secret: str, now: datetime) -> WebSession | None:
        """The unexpired session of this secret, or None."""
        return self.session.scalars(select(WebSession).where(
            WebSession.secret_hash == secret_hash(secret), WebSession.expires_at > now)).one_or_none()

    def end(self, secret: str) -> None:
        self.session.execute(delete(WebSession).where(WebSession.secret_hash == secret_hash(secret)))

    def drop_expired(self, now: datetime) -> int:
        return self.session.execute(delete(WebSession).where(WebSession.expires_at <= now)).rowcount
