"""One-time tokens: confirmations of destructive commands, identity link codes, panel sign-in links.

A token belongs to one user, has a purpose, a JSON payload (what it allows), an expiry and a
``used_at`` that makes it single-use. its repository (``shared/repositories/tokens.py``) takes a token atomically
(``UPDATE … WHERE used_at IS NULL AND expires_at > now RETURNING``), so two presses of the same
button, or two processes, can never both use it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, DateTime, ForeignKey, Index, String
from sqlalchemy import text as sql_text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

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
