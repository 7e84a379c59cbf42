"""The access lists an operator changed from chat (``/access``), on top of those the settings give.

One row is one entry of the allow or the block list: what it names (a user, Telegram chat, Discord
server, channel or role, on one platform) and who added it when. A target is on at most one list at a
time: allowing what was blocked moves it.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from shared.db.models import Base, created_column, one_of

ACCESS_EFFECTS = ("allow", "block")
ACCESS_KINDS = ("user", "chat", "guild", "channel", "role")
ACCESS_PLATFORMS = ("discord", "telegram")


class AccessEntryRow(Base):
    """An entry of the allow or block list, added by an operator."""

    __tablename__ = "access_entries"
    __table_args__ = (
        UniqueConstraint("kind", "platform", "value"),
        one_of("effect", ACCESS_EFFECTS),
        one_of("kind", ACCESS_KINDS),
        one_of("platform", ACCESS_PLATFORMS),
    )
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    effect: Mapped[str] = mapped_column(String(8), nullable=False)
    kind: Mapped[str] = mapped_column(String(8), nullable=False)
    platform: Mapped[str] = mapped_column(String(16), nullable=False)
    value: Mapped[str] = mapped_column(String(32), nullable=False)
    added_by: Mapped[str] = mapped_column(String(96), nullable=False)
    created_at: Mapped[datetime] = created_column()
