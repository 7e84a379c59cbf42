"""One-time tokens: confirmations of destructive commands, identity link codes, panel sign-in links.

A token belongs to one user, has a purpose, a JSON payload (what it allows), an expiry and a
``used_at`` that makes it single-use. :class:`OneTimeTokenRepository` takes a token atomically
(``UPDATE … WHERE used_at IS NULL AND expires_at > now RETURNING``), so two presses of the same
button, or two processes, can never both use it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, DateTime, ForeignKey, Index, String, delete, select, update
from sqlalchemy import text as sql_text
from sqlalchemy.dialects.postgresql import JSONB, insert
from sqlalchemy.orm import Mapped, Session, mapped_column

from shared.db.models import Base, created_column, one_of

TOKEN_PURPOSES = ("confirm", "link", "panel")


class OneTimeToken(Base):
    """A secret that allows one action of one user, once, until it expires."""

    __tablename__ = "one_time_tokens"
    __table_args__ = (
        Index(None, "user_id", "purpose"),
        Index(None, "expires_at"),
        one_of("purpose", TOKEN_PURPOSES),
    )
    token: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    purpose: Mapped[str] = mapped_column(String(16), nullable=False)
    payload: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False, server_default=sql_text("'{}'"))
    created_at: Mapped[datetime] = created_column()
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class OneTimeTokenRepository:
    """Issues, looks up and uses one-time tokens."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def issue(self, token: str, user_id: int, purpose: str, payload: dict[str, Any], *, now: datetime,
              expires_at: datetime) -> bool:
        """Store a new token; False when that token string is taken (the caller draws another)."""
        inserted = self.session.execute(
            insert(OneTimeToken)
            .values(token=token, user_id=user_id, purpose=purpose, payload=payload, created_at=now,
                    expires_at=expires_at)
            .on_conflict_do_nothing(index_elements=["token"])
            .returning(OneTimeToken.token)
        ).scalar_one_or_none()
        return inserted is not None

    def valid(self, token: str, purpose: str, now: datetime, *, lock: bool = False) -> OneTimeToken | None:
        """The unused, unexpired token with this purpose, or None."""
        query = select(OneTimeToken).where(OneTimeToken.token == token, OneTimeToken.purpose == purpose,
                                           OneTimeToken.used_at.is_(None), OneTimeToken.expires_at > now)
        if lock:
            query = query.with_for_update()
        return self.session.scalars(query).one_or_none()

    def use(self, token: str, purpose: str, now: datetime, *, user_id: int | None = None) -> OneTimeToken | None:
        """Mark the token used if it is valid (and the user's, when given); the token, or None."""
        statement = (
            update(OneTimeToken)
            .where(OneTimeToken.token == token, OneTimeToken.purpose == purpose,
                   OneTimeToken.used_at.is_(None), OneTimeToken.expires_at > now)
            .values(used_at=now)
            .returning(OneTimeToken)
            .execution_options(synchronize_session=False)
        )
        if user_id is not None:
            statement = statement.where(OneTimeToken.user_id == user_id)
        return self.session.scalars(statement).one_or_none()

    def withdraw(self, user_id: int, purpose: str, now: datetime) -> None:
        """Void the user's unused tokens of this purpose and drop the user's expired ones."""
        self.session.execute(
            update(OneTimeToken)
            .where(OneTimeToken.user_id == user_id, OneTimeToken.purpose == purpose, OneTimeToken.used_at.is_(None))
            .values(used_at=now)
            .execution_options(synchronize_session=False))
        self.drop_expired(user_id, now)

    def drop_expired(self, user_id: int, now: datetime) -> None:
        self.session.execute(delete(OneTimeToken).where(OneTimeToken.user_id == user_id,
                                                        OneTimeToken.expires_at <= now))
