"""Models of what Mnemo remembers: memories, episodes, todos, profiles, the audit and the outbox.

Memories and episodes keep their jieba tokens in ``search_tokens`` (kept in step by
:mod:`shared.db.search_sync`) and a generated ``search_tsv`` with a GIN index.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Computed,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    SmallInteger,
    String,
    Text,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, TSVECTOR
from sqlalchemy.orm import Mapped, mapped_column, validates

from shared.db.kinds import (
    EVENT_ACTIONS,
    EVENT_ACTORS,
    MEMORY_SOURCES,
    MEMORY_TIERS,
    MEMORY_TYPES,
    OUTBOX_STATUSES,
    TODO_KINDS,
    TODO_STATUSES,
)
from shared.db.models import TSVECTOR_SQL, Base, created_column, one_of, user_fk
from shared.text import without_bidi_controls


class Memory(Base):
    """One piece of semantic memory about a user (a preference, fact, event, person, …)."""

    __tablename__ = "memories"
    __table_args__ = (
        Index("ix_memories_search_tsv", "search_tsv", postgresql_using="gin"),
        Index("ix_memories_user_active", "user_id", "type",
              postgresql_where=text("deleted_at IS NULL AND superseded_by IS NULL")),
        Index("ix_memories_user_active_id", "user_id", text("id DESC"),
              postgresql_where=text("deleted_at IS NULL AND superseded_by IS NULL")),
        Index(None, "user_id", "subject", "predicate"),
        Index(None, "user_id", "last_accessed"),
        Index("ix_memories_binned", "user_id", "deleted_at", postgresql_where=text("deleted_at IS NOT NULL")),
        one_of("type", MEMORY_TYPES),
        one_of("source", MEMORY_SOURCES),
        one_of("tier", MEMORY_TIERS),
    )
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    user_id: Mapped[int] = user_fk()
    type: Mapped[str] = mapped_column(String(16), nullable=False)
    subject: Mapped[str | None] = mapped_column(Text)
    predicate: Mapped[str | None] = mapped_column(Text)
    content: Mapped[str] = mapped_column(Text, nullable=False)
    value: Mapped[Any | None] = mapped_column(JSONB)
    entities: Mapped[list[Any]] = mapped_column(JSONB, nullable=False, server_default=text("'[]'"), default=list)
    """What the memory is about as the knowledge monitor read it (people, pets, places, things), searchable."""
    happened_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    """When what the memory tells of happened, when the monitor could tell (else it was noted at ``created_at``)."""
    importance: Mapped[float] = mapped_column(Float, nullable=False, server_default=text("1.0"))
    """How much the memory matters now: given where it is made, raised by use, faded by disuse."""
    base_importance: Mapped[float] = mapped_column(Float, nullable=False, server_default=text("1.0"))
    """The importance it was given where it was made (model, rules, command, import): what a rule may forget
    depends on it (shared/memory/policy.py), however far the memory has faded since."""
    confidence: Mapped[float] = mapped_column(Float, nullable=False, server_default=text("0.5"))
    source: Mapped[str] = mapped_column(String(16), nullable=False)
    verified: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default=text("false"))
    tier: Mapped[str] = mapped_column(String(16), nullable=False, server_default=text("'long'"))
    search_tokens: Mapped[str] = mapped_column(Text, nullable=False, server_default=text("''"))
    search_tsv: Mapped[Any] = mapped_column(TSVECTOR, Computed(TSVECTOR_SQL, persisted=True), deferred=True)
    tokenizer_version: Mapped[int] = mapped_column(SmallInteger, nullable=False, server_default=text("0"))
    embedding_model: Mapped[str | None] = mapped_column(Text)
    source_turn_id: Mapped[int | None] = mapped_column(
        BigInteger, ForeignKey("conversation_turns.id", ondelete="SET NULL"))
    session_id: Mapped[int | None] = mapped_column(BigInteger, ForeignKey("sessions.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = created_column()
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now(), nullable=False)
    last_accessed: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    access_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default=text("0"))
    superseded_by: Mapped[int | None] = mapped_column(BigInteger, ForeignKey("memories.id", ondelete="SET NULL"))
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    """When a rule put the memory in the recycle bin (restorable until purged); None while it is in use."""
    decayed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    promotion_reviewed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    decay_reviewed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    dedup_reviewed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    """When the model last judged this memory's look-alike cluster; it is asked again only after a change."""

    def searchable_parts(self) -> tuple[str | None, ...]:
        """The texts whose tokens go into ``search_tokens``: the key, the words, what it is about and when."""
        when = f"{self.happened_at:%B %Y}" if self.happened_at else None
        return (self.subject, self.predicate, self.content, *(str(entity) for entity in self.entities or ()), when)

    @validates("content", "subject", "predicate", "value")
    def _shown_in_order(self, _name: str, value: Any) -> Any:
        """However a memory is written (a command, the panel, the API, an import, the model), its text, key
        and value keep no bidirectional control that would reorder how they show."""
        return without_bidi_controls(value)


class Episode(Base):
    """A summary of one stretch of conversation ("[2026-01-03 18:00] talked about …")."""

    __tablename__ = "episodes"
    __table_args__ = (
        Index("ix_episodes_search_tsv", "search_tsv", postgresql_using="gin"),
        Index(None, "user_id", "ended_at"),
    )
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    user_id: Mapped[int] = user_fk()
    chat_id: Mapped[int | None] = mapped_column(BigInteger, ForeignKey("chats.id", ondelete="SET NULL"))
    session_id: Mapped[int | None] = mapped_column(BigInteger, ForeignKey("sessions.id", ondelete="SET NULL"))
    summary: Mapped[str] = mapped_column(Text, nullable=False)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    ended_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    entities: Mapped[list[Any]] = mapped_column(JSONB, nullable=False, server_default=text("'[]'"))
    importance: Mapped[float] = mapped_column(Float, nullable=False, server_default=text("1.0"))
    decayed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    search_tokens: Mapped[str] = mapped_column(Text, nullable=False, server_default=text("''"))
    search_tsv: Mapped[Any] = mapped_column(TSVECTOR, Computed(TSVECTOR_SQL, persisted=True), deferred=True)
    tokenizer_version: Mapped[int] = mapped_column(SmallInteger, nullable=False, server_default=text("0"))
    embedding_model: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = created_column()

    def searchable_parts(self) -> tuple[str | None, ...]:
        return (self.summary, *(str(entity) for entity in self.entities or ()))


class Todo(Base):
    """A reminder: what to say, when, and in which chat to ping the user."""

    __tablename__ = "todos"
    __table_args__ = (
        Index("ix_todos_due", "remind_at", postgresql_where=text("status = 'pending'")),
        Index(None, "user_id", "status"),
        one_of("status", TODO_STATUSES),
        one_of("kind", TODO_KINDS),
    )
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    user_id: Mapped[int] = user_fk()
    chat_id: Mapped[int | None] = mapped_column(BigInteger, ForeignKey("chats.id", ondelete="SET NULL"))
    content: Mapped[str] = mapped_column(Text, nullable=False)
    due_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    """When it is due: the time asked for, or a deadline."""
    remind_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    """When it pings: ``due_at``, earlier for a deadline's heads-up, later after a snooze."""
    timezone: Mapped[str] = mapped_column(String(64), nullable=False)
    kind: Mapped[str] = mapped_column(String(16), nullable=False, server_default=text("'reminder'"))
    wall_clock: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default=text("true"))
    """A time on the clock ("08:30"), kept on the clock when the user's zone changes; False for "in 10 minutes"."""
    status: Mapped[str] = mapped_column(String(16), nullable=False, server_default=text("'pending'"))
    source: Mapped[str] = mapped_column(String(16), nullable=False, server_default=text("'command'"))
    source_turn_id: Mapped[int | None] = mapped_column(
        BigInteger, ForeignKey("conversation_turns.id", ondelete="SET NULL"))
    claimed_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    sent_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, server_default=text("0"))
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = created_column()
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now(), nullable=False)


class MemoryEvent(Base):
    """Append-only audit of every change to a memory, with who made it and before/after."""

    __tablename__ = "memory_events"
    __table_args__ = (
        Index(None, "user_id", "created_at"),
        Index(None, "memory_id"),
        Index("ix_memory_events_decay_created_at", "created_at", postgresql_where=text("action = 'decay'")),
        one_of("action", EVENT_ACTIONS),
        one_of("actor", EVENT_ACTORS),
    )
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    user_id: Mapped[int] = user_fk()
    memory_id: Mapped[int | None] = mapped_column(BigInteger)
    action: Mapped[str] = mapped_column(String(16), nullable=False)
    actor: Mapped[str] = mapped_column(String(16), nullable=False)
    before: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    after: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = created_column()


class Profile(Base):
    """Per-user core summary and scratchpad (current focus, open threads, next steps)."""

    __tablename__ = "profiles"
    user_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    core_summary: Mapped[str] = mapped_column(Text, nullable=False, server_default=text("''"))
    scratchpad: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False, server_default=text("'{}'"))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now(), nullable=False)


class OutboxJob(Base):
    """Work owed to the workers, written in the same transaction as the turn that caused it."""

    __tablename__ = "jobs_outbox"
    __table_args__ = (
        Index("ix_jobs_outbox_owed", "available_at", postgresql_where=text("status IN ('pending', 'sent')")),
        Index("ix_jobs_outbox_owed_by_user", "user_id", "task", postgresql_where=text("status IN ('pending', 'sent')")),
        Index("uq_jobs_outbox_dedup_key", "dedup_key", unique=True,
              postgresql_where=text("dedup_key IS NOT NULL")),
        one_of("status", OUTBOX_STATUSES),
    )
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    task: Mapped[str] = mapped_column(String(128), nullable=False)
    payload: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False, server_default=text("'{}'"))
    dedup_key: Mapped[str | None] = mapped_column(Text)
    user_id: Mapped[int | None] = mapped_column(BigInteger, ForeignKey("users.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(16), nullable=False, server_default=text("'pending'"))
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, server_default=text("0"))
    available_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now(), nullable=False)
    sent_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    done_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    running_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    """A worker runs the job until then at least (it renews this while it lives): not sent again, not run twice."""
    last_error: Mapped[str | None] = mapped_column(Text)
    log_context: Mapped[dict[str, str] | None] = mapped_column(JSONB(none_as_null=True))
    """The turn, platform and user hash of the work that owed the job (shared/log_context.py), for the worker's logs."""
    created_at: Mapped[datetime] = created_column()
