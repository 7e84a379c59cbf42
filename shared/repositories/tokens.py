"""One-time tokens: issued, looked up and used atomically (``UPDATE … WHERE used_at IS NULL AND
expires_at > now RETURNING``), so two presses of the same button, or two processes, never both use one.

The table holds only each token's SHA-256 (as for web sessions): a token is found by hashing what is
presented, so a copy of the database signs no one in and confirms nothing."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from shared.db.token_models import OneTimeToken
from shared.repositories.web_sessions import secret_hash


class OneTimeTokenRepository:
    """Issues, looks up and uses one-time tokens."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def issue(self, token: str, user_id: int, purpose: str, payload: dict[str, Any], *, now: datetime,
              expires_at: datetime) -> bool:
        """Store a new token; False when that token string is taken (the caller draws another)."""
        inserted = self.session.execute(
            insert(OneTimeToken)
            .values(token=secret_hash(token), user_id=user_id, purpose=purpose, payload=payload, created_at=now,
                    expires_at=expires_at)
            .on_conflict_do_nothing(index_elements=["token"])
            .returning(OneTimeToken.token)
        ).scalar_one_or_none()
        return inserted is not None

    def valid(self, token: str, purpose: str, now: datetime, *, lock: bool = False) -> OneTimeToken | None:
        """The unused, unexpired token with this purpose, or None."""
        query = select(OneTimeToken).where(OneTimeToken.token == secret_hash(token), OneTimeToken.purpose == purpose,
                                           OneTimeToken.used_at.is_(None), OneTimeToken.expires_at > now)
        if lock:
            query = query.with_for_update()
        return self.session.scalars(query).one_or_none()

    def use(self, token: str, purpose: str, now: datetime, *, user_id: int | None = None) -> OneTimeToken | None:
        """Mark the token used if it is valid (and the user's, when given); the token, or None."""
        statement = (
            update(OneTimeToken)
            .where(OneTimeToken.token == secret_hash(token), OneTimeToken.purpose == purpose,
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
