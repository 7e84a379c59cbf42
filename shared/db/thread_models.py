"""Open threads: something coming up that the user mentioned ("周五上午面试", "my exam is tomorrow"), which Mnemo
may ask about once it has passed (:mod:`shared.followups`)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Boolean, DateTime, ForeignKey, Index, Integer, String, Text, func
from sqlalchemy import text as sql_text
from sqlalchemy.orm import Mapped, mapped_column

from shared.db.kinds import THREAD_STATUSES
from shared.db.models import Base, created_column, one_of, user_fk


class OpenThread(Base):
    """One thing coming up: what, when (absolute), where it was said, and what became of it."""

    __tablename__ = "open_threads"
    __table_args__ = (
        Index("ix_open_threads_due", "happens_at", postgresql_where=sql_text("status = 'open'")),
        Index(None, "user_id", "status"),
        Index("ix_open_threads_asked_in_chat", "chat_id", "user_id", postgresql_where=sql_text("status = 'asked'")),
        one_of("status", THREAD_STATUSES),
    )
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    user_id: Mapped[int] = user_fk()
    chat_id: Mapped[int | None] = mapped_column(BigInteger, ForeignKey("chats.id", ondelete="SET NULL"))
    what: Mapped[str] = mapped_column(Text, nullable=False)
    """What is coming up, in the user's words or the model's ("面试", "your exam", "job interview at Acme")."""
    happens_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    day_only: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default=sql_text("false"))
    """Only a day was said ("my exam is tomorrow"): ``happens_at`` is that day's default hour."""
    timezone: Mapped[str] = mapped_column(String(64), nullable=False)
    """The user's zone when it was noted: the follow-up names the day in it."""
    language: Mapped[str] = mapped_column(String(8), nullable=False, server_default=sql_text("'en'"))
    """The language of the message that noted it ("zh" or "en"): the offline follow-up's."""
    memory_id: Mapped[int | None] = mapped_column(BigInteger, ForeignKey("memories.id", ondelete="SET NULL"))
    """The memory the thread relates to (stored from the same message), when there is one."""
    source_turn_id: Mapped[int | None] = mapped_column(
        BigInteger, ForeignKey("conversation_turns.id", ondelete="SET NULL"))
    status: Mapped[str] = mapped_column(String(16), nullable=False, server_default=sql_text("'open'"))
    claimed_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, server_default=sql_text("0"))
    asked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    """When the follow-up was sent."""
    followup_turn_id: Mapped[int | None] = mapped_column(
        BigInteger, ForeignKey("conversation_turns.id", ondelete="SET NULL"))
    """The bot's turn that carried the follow-up (the user's answer continues it)."""
    answered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    closed_reason: Mapped[str | None] = mapped_column(Text)
    """Why a closed thread closed: ``cancelled``, ``corrected``, ``refused: …`` (the platform would not deliver)."""
    created_at: Mapped[datetime] = created_column()
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now(), nullable=False)
