"""The vocabularies of Mnemo's data: platforms, chat kinds, memory types, sources and tiers, statuses,
audit actions and actors. Pure: the database schema (``shared.db.models``) and the pure rules
(the turn schema, the prompt) read them from here.
"""

PLATFORMS = ("discord", "telegram", "console")
CHAT_KINDS = ("private", "group")
ROLES = ("user", "assistant")
MEMORY_TYPES = ("preference", "fact", "event", "person", "todo", "pattern", "rule")
MEMORY_SOURCES = ("user_stated", "inferred", "imported", "operator", "system", "manual")
"""How a memory came: the user said it (or ``/remember``), a model concluded it, an import, the operator;
``system`` and ``manual`` are kept for rows written before ``operator`` and ``user_stated`` said it."""
MEMORY_TIERS = ("transient", "short", "long", "core", "system")
TODO_STATUSES = ("pending", "sent", "done", "cancelled")
TODO_KINDS = ("reminder", "deadline")
"""A ``reminder`` pings at its time; a ``deadline`` ahead of when something is due (``DEADLINE_HEADS_UP_MINUTES``)."""
EVENT_ACTIONS = ("add", "update", "boost", "delete", "supersede", "promote", "decay", "forget", "expire", "bin",
                 "restore", "purge")
"""``bin``: a rule put the memory in the recycle bin; ``restore``: the user took it back; ``purge``: it left the bin."""
EVENT_ACTORS = ("user", "llm", "rule", "admin")
OUTBOX_STATUSES = ("pending", "sent", "done", "failed")
USAGE_KINDS = ("turn", "turn_embedding", "extraction", "episode", "review", "dedup", "embedding")
"""What a model request was for: the hot path's answer and its query embedding, then the background work."""
