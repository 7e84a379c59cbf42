"""The database schema as SQLAlchemy 2.0 models (DESIGN.md §2).

Alembic migrations are the only way the schema changes; these models must match them (a test
compares the two). The optional ``embedding`` vector columns of memories and episodes are not
mapped here, because they exist only where pgvector is installed: see :mod:`shared.db.vectors`.
"""

from __future__ import annotations

from datetime import datetime
from types import MappingProxyType
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Computed,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    SmallInteger,
    String,
    Text,
    UniqueConstraint,
    func,
)
from sqlalchemy import text as sql_text
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from shared.db.kinds import (  # noqa: F401  (the models' vocabularies, re-exported for the schema)
    CHAT_KINDS,
    EVENT_ACTIONS,
    EVENT_ACTORS,
    MEMORY_SOURCES,
    MEMORY_TIERS,
    MEMORY_TYPES,
    OUTBOX_STATUSES,
    PLATFORMS,
    ROLES,
    TODO_KINDS,
    TODO_STATUSES,
    USAGE_KINDS,
)

TSVECTOR_SQL = "to_tsvector('simple'::regconfig, coalesce(search_tokens, ''))"


def one_of(column: str, values: tuple[str, ...]) -> CheckConstraint:
    allowed = ", ".join(f"'{value}'" for value in values)
    return CheckConstraint(f"{column} IN ({allowed})", name=f"{column}_allowed")


def created_column() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), server_default=func.now(), nullable=False)


def user_fk() -> Mapped[int]:
    return mapped_column(BigInteger, ForeignKey("users.id", ondelete="CASCADE"), nullable=False)


NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    """Declarative base with a naming convention so migrations name constraints predictably."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    __mapper_args__ = MappingProxyType({"eager_defaults": True})  # server defaults come back on INSERT


class User(Base):
    """A person; may own several platform identities."""

    __tablename__ = "users"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    paused_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    quota_lifted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    """Set by an operator: the daily token quota does not apply to this user."""
    timezone: Mapped[str | None] = mapped_column(String(64))
    """The person's time zone (an IANA name, or an offset such as "UTC+05:30"); None: ``DEFAULT_TIMEZONE``."""
    zone_told_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    """When the user was told which zone a reminder used while they had none of their own (only once)."""
    followups_on_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    """When the user turned follow-ups on (``/followups on``); None: off, the default."""
    followups_offered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    """When a reply first offered follow-ups (only once)."""
    quiet_hours: Mapped[str | None] = mapped_column(String(16))
    """The user's quiet hours as "22-9" (local hours, no follow-up from the first until the second); None: the
    operator's ``FOLLOWUP_QUIET_HOURS``."""
    created_at: Mapped[datetime] = created_column()


class Identity(Base):
    """One platform account of a user (a Discord user, a Telegram user, the console)."""

    __tablename__ = "identities"
    __table_args__ = (
        UniqueConstraint("platform", "platform_user_id"),
        one_of("platform", PLATFORMS),
        Index(None, "user_id"),
    )
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    user_id: Mapped[int] = user_fk()
    platform: Mapped[str] = mapped_column(String(16), nullable=False)
    platform_user_id: Mapped[str] = mapped_column(String(64), nullable=False)
    display_name: Mapped[str | None] = mapped_column(Text)
    locale: Mapped[str | None] = mapped_column(String(16))
    created_at: Mapped[datetime] = created_column()


class Chat(Base):
    """A private chat, group or channel the bot talks in."""

    __tablename__ = "chats"
    __table_args__ = (
        UniqueConstraint("platform", "platform_chat_id"),
        one_of("platform", PLATFORMS),
        one_of("kind", CHAT_KINDS),
    )
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    platform: Mapped[str] = mapped_column(String(16), nullable=False)
    platform_chat_id: Mapped[str] = mapped_column(String(64), nullable=False)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    title: Mapped[str | None] = mapped_column(Text)
    settings: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False, server_default=sql_text("'{}'"))
    created_at: Mapped[datetime] = created_column()


class ConversationSession(Base):
    """Working memory of one user in one chat; closed after the idle timeout."""

    __tablename__ = "sessions"
    __table_args__ = (
        Index("uq_sessions_open_user_chat", "user_id", "chat_id", unique=True,
              postgresql_where=sql_text("closed_at IS NULL")),
        Index(None, "updated_at", postgresql_where=sql_text("closed_at IS NULL")),
    )
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    user_id: Mapped[int] = user_fk()
    chat_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("chats.id", ondelete="CASCADE"), nullable=False)
    current_topic: Mapped[str | None] = mapped_column(Text)
    context_variables: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False, server_default=sql_text("'{}'"))
    turn_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default=sql_text("0"))
    last_emotion: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    next_strategy: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    created_at: Mapped[datetime] = created_column()
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now(), nullable=False)
    closed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class ConversationTurn(Base):
    """One raw message, from the user or the bot; never silently lost."""

    __tablename__ = "conversation_turns"
    __table_args__ = (
        Index("uq_conversation_turns_chat_message", "chat_id", "role", "platform_message_id", unique=True,
              postgresql_where=sql_text("platform_message_id IS NOT NULL")),
        Index(None, "session_id", "id"),
        Index(None, "user_id", "created_at"),
        Index("ix_conversation_turns_unextracted", "created_at",
              postgresql_where=sql_text("NOT extracted AND role = 'user'")),
        Index("ix_conversation_turns_rounds", "user_id", sql_text("id DESC"),
              postgresql_where=sql_text("role = 'user' AND search_tokens <> ''")),
        Index("ix_conversation_turns_round_keys", sql_text("mnemo_user_lexemes(user_id, search_tsv)"),
              postgresql_using="gin", postgresql_where=sql_text("role = 'user' AND search_tokens <> ''")),
        Index("ix_conversation_turns_reply_to", "reply_to_turn_id",
              postgresql_where=sql_text("reply_to_turn_id IS NOT NULL")),
        one_of("role", ROLES),
    )
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    user_id: Mapped[int] = user_fk()
    chat_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("chats.id", ondelete="CASCADE"), nullable=False)
    session_id: Mapped[int | None] = mapped_column(BigInteger, ForeignKey("sessions.id", ondelete="SET NULL"))
    role: Mapped[str] = mapped_column(String(16), nullable=False)
    platform_message_id: Mapped[str | None] = mapped_column(String(64))
    text: Mapped[str] = mapped_column(Text, nullable=False)
    token_estimate: Mapped[int] = mapped_column(Integer, nullable=False, server_default=sql_text("0"))
    extracted: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default=sql_text("false"))
    episode_id: Mapped[int | None] = mapped_column(BigInteger, ForeignKey("episodes.id", ondelete="SET NULL"))
    memory_ids: Mapped[list[int] | None] = mapped_column(ARRAY(BigInteger))
    """On a user's turn: the memories the prompt answering it showed (prompt.py's ``PastTurn``)."""
    reply_to_turn_id: Mapped[int | None] = mapped_column(BigInteger)
    """On the bot's turn: the user's turn it answers (None on turns stored before migration 0021: then the
    first bot turn after a message is taken for its answer)."""
    search_tokens: Mapped[str] = mapped_column(Text, nullable=False, server_default=sql_text("''"))
    """On the user's turn: the search keys of its round (the line, the bot's reply, the facts drawn from it);
    empty on the bot's turns and on rounds not kept for recall (a paused user's)."""
    search_tsv: Mapped[Any] = mapped_column(TSVECTOR, Computed(TSVECTOR_SQL, persisted=True), deferred=True)
    tokenizer_version: Mapped[int] = mapped_column(SmallInteger, nullable=False, server_default=sql_text("0"))
    paused: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default=sql_text("false"))
    """On the user's turn: said while remembering was paused; kept out of recall, and deleted with its reply
    when its sitting closes."""
    created_at: Mapped[datetime] = created_column()
