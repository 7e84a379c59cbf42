"""The vocabularies of Mnemo's data: platforms, chat kinds, memory types, sources and tiers, statuses,
audit actions and actors. Pure: the database schema (``shared.db.models``) and the pure rules
(the turn schema, the prompt) read them from here. A vocabulary the code compares against is a ``StrEnum`` (its
members are the strings stored); the tuple beside it is what a check constraint or a schema lists.
"""

from enum import StrEnum

PLATFORMS = ("discord", "telegram", "console")
CHAT_KINDS = ("private", "group")
ROLES = ("user", "assistant")
MEMORY_TYPES = ("preference", "fact", "event", "person", "todo", "pattern", "rule")
MEMORY_SOURCES = ("user_stated", "inferred", "imported", "operator", "system", "manual")
"""How a memory came: the user said it (or ``/remember``), a model concluded it, an import, the operator;
``system`` and ``manual`` are kept for rows written before ``operator`` and ``user_stated`` said it."""
MEMORY_TIERS = ("transient", "short", "long", "core", "system")


class TodoStatus(StrEnum):
    """Where a reminder is: waiting for its time, sent, done by the user, or cancelled (by them or a rule)."""

    PENDING = "pending"
    SENT = "sent"
    DONE = "done"
    CANCELLED = "cancelled"


class TodoKind(StrEnum):
    """A ``reminder`` pings at its time; a ``deadline`` ahead of when something is due
    (``DEADLINE_HEADS_UP_MINUTES``)."""

    REMINDER = "reminder"
    DEADLINE = "deadline"


class ThreadStatus(StrEnum):
    """Where an open thread (something coming up the user mentioned) is: waiting for its time and a good moment,
    asked about (the follow-up was sent), answered by the user, or closed (cancelled, corrected, or undeliverable)."""

    OPEN = "open"
    ASKED = "asked"
    ANSWERED = "answered"
    CLOSED = "closed"


class OutboxStatus(StrEnum):
    """A background job owed by a turn: not yet handed to the broker, handed over, done, or given up on."""

    PENDING = "pending"
    SENT = "sent"
    DONE = "done"
    FAILED = "failed"


TODO_STATUSES = tuple(TodoStatus)
TODO_KINDS = tuple(TodoKind)
THREAD_STATUSES = tuple(ThreadStatus)
EVENT_ACTIONS = ("add", "update", "boost", "delete", "supersede", "promote", "decay", "forget", "expire", "bin",
                 "restore", "purge")
"""``bin``: a rule put the memory in the recycle bin; ``restore``: the user took it back; ``purge``: it left the bin."""
EVENT_ACTORS = ("user", "llm", "rule", "admin")
OUTBOX_STATUSES = tuple(OutboxStatus)
USAGE_KINDS = ("turn", "turn_embedding", "extraction", "episode", "review", "dedup", "embedding", "followup")
"""What a model request was for: the hot path's answer and its query embedding, then the background work
(``followup``: the words of a follow-up on an open thread)."""
