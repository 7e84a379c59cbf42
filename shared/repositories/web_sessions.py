"""Web panel sessions, found by the cookie's secret; the table holds only its SHA-256."""

from __future__ import annotations

import hashlib
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from shared.db.results import rows_changed
from shared.db.web_session_models import WebSession


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

    def end_for_user(self, user_id: int) -> None:
        """End every session of the user: signed out everywhere."""
        self.session.execute(delete(WebSession).where(WebSession.user_id == user_id))

    def drop_expired(self, now: datetime) -> int:
        return rows_changed(self.session.execute(delete(WebSession).where(WebSession.expires_at <= now)))
