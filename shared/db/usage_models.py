"""What the language model and the embedder cost: every request, and a daily sum per user, chat and kind.

``llm_usage`` keeps one row per request (tokens as the server reported them, or estimated where it
reported none, latency, model, what it was for, whose it was). ``llm_usage_daily`` is the same,
summed per user, UTC day, kind and chat, and kept in step in the same statement as each insert: every
report and quota check reads it, so they stay cheap however many requests there were. ``chat_id`` 0
there means "no chat" (reviews, dedup and embeddings belong to a user, not to a conversation). Neither
table points at ``chats``: accounting outlives whatever it paid for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import BigInteger, Boolean, Date, ForeignKey, Index, Integer, String, text
from sqlalchemy.orm import Mapped, mapped_column

from shared.db.kinds import USAGE_KINDS
from shared.db.models import Base, created_column, one_of

MAX_MODEL_CHARS = 200
NO_CHAT = 0
"""``llm_usage_daily.chat_id`` of work that belongs to no conversation."""


def usage_day(moment: datetime) -> date:
    """The day a moment counts on: quotas and reports count UTC days."""
    return moment.astimezone(UTC).date()


def next_usage_day(moment: datetime) -> datetime:
    """When the day after ``moment``'s begins (a quota resets, a job put off runs)."""
    return datetime.combine(usage_day(moment) + timedelta(days=1), time(0), tzinfo=UTC)


@dataclass(frozen=True)
class UsageTotals:
    """Requests and tokens summed over some days (and kinds, chats or users)."""

    messages: int = 0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    estimated_calls: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: UsageTotals) -> UsageTotals:
        return UsageTotals(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))


SUMMED = tuple(f.name for f in fields(UsageTotals))
"""The daily sums' columns, in :class:`UsageTotals`' order."""
MESSAGE_KIND = "turn"
"""The kind whose daily rows count the messages answered."""


def sums_by_kind(calls: Sequence[Any], messages: int = 0) -> dict[str, UsageTotals]:
    """What ``calls`` (and ``messages`` answered) add to the daily sums, per kind."""
    sums = {MESSAGE_KIND: UsageTotals(messages=messages)} if messages else {}
    for call in calls:
        sums[call.kind] = sums.get(call.kind, UsageTotals()) + UsageTotals(
            0, 1, call.prompt_tokens, call.completion_tokens, call.cached_tokens, int(call.estimated))
    return sums


def _count() -> Mapped[int]:
    return mapped_column(Integer, nullable=False, server_default=text("0"))


def _tokens() -> Mapped[int]:
    return mapped_column(BigInteger, nullable=False, server_default=text("0"))


class UsageCall(Base):
    """One request to the model or the embedder."""

    __tablename__ = "llm_usage"
    __table_args__ = (
        Index(None, "user_id", "created_at"),  # a user's latest requests; the one index written per request
        one_of("kind", USAGE_KINDS),
    )
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    user_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    chat_id: Mapped[int | None] = mapped_column(BigInteger)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    model: Mapped[str] = mapped_column(String(MAX_MODEL_CHARS), nullable=False)
    prompt_tokens: Mapped[int] = mapped_column(Integer, nullable=False)
    completion_tokens: Mapped[int] = mapped_column(Integer, nullable=False)
    cached_tokens: Mapped[int] = _count()
    estimated: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default=text("false"))
    """The server reported no usage: the counts are estimates from the text."""
    latency_ms: Mapped[int] = mapped_column(Integer, nullable=False)
    created_at: Mapped[datetime] = created_column()


class UsageDay(Base):
    """One user's requests of one kind in one chat on one UTC day, summed."""

    __tablename__ = "llm_usage_daily"
    __table_args__ = (
        Index(None, "day"),
        Index(None, "chat_id", "day", postgresql_where=text(f"chat_id <> {NO_CHAT}")),
        one_of("kind", USAGE_KINDS),
    )
    user_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    chat_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, server_default=text(str(NO_CHAT)))
    messages: Mapped[int] = _count()
    """Messages answered (hot-path turns only), whether or not the model was asked."""
    calls: Mapped[int] = _count()
    prompt_tokens: Mapped[int] = _tokens()
    completion_tokens: Mapped[int] = _tokens()
    cached_tokens: Mapped[int] = _tokens()
    estimated_calls: Mapped[int] = _count()
