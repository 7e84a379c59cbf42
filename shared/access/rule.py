"""May this message be answered? A pure rule over platform-neutral facts and the lists in force.

The order, first match wins:

1. the console is the local operator: always answered;
2. an operator (``ACCESS_OPERATORS``) is always answered: no list can lock the operators out;
3. a block entry that matches the message (its user, chat, server, channel or one of the sender's
   roles) refuses it;
4. an allow entry that matches it lets it in;
5. otherwise the platform is open, unless it has an allow entry of any kind (an allow list in force:
   only what it names gets in) or ``ACCESS_DEFAULT=closed`` (nobody but operators and the allow lists).

Entries of one list combine with "or": ``DISCORD_ALLOW_GUILDS=1`` and ``DISCORD_ALLOW_ROLES=2`` let in
everyone in server 1 and everyone with role 2. A Discord direct message has no server, channel
entry or role: only a user entry matches it.

A refused user may still use the commands that read, export, stop or delete what the bot already
holds about them (:data:`OWN_DATA_COMMANDS`), if it holds anything; everything that would add to it or
cost a model call stays refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

ALLOW, BLOCK = "allow", "block"
EFFECTS = (ALLOW, BLOCK)
KINDS: dict[str, tuple[str, ...]] = {
    "user": ("discord", "telegram"),
    "chat": ("telegram",),
    "guild": ("discord",),
    "channel": ("discord",),
    "role": ("discord",),
}
"""What an entry can name, and on which platforms that exists."""
CONSOLE = "console"
OPEN: Final = "open"
CLOSED: Final = "closed"
OWN_DATA_COMMANDS = frozenset({"memories", "memories_why", "memories_forgotten", "memories_restore", "forget",
                               "export", "reminders", "cancel", "done",
                               "pause", "resume", "unlink"})
"""What a refused user may still do, about what the bot already holds about them: see it (``/memories``,
``/reminders``), take it away (``/export``), delete or stop it (``/forget``, ``/cancel``, ``/done``,
``/pause``, ``/unlink``), and ``/resume``. Nothing here adds a memory or calls the model."""


@dataclass(frozen=True, order=True)
class Entry:
    """One line of a list: ``block user telegram:42``, ``allow guild discord:123``."""

    effect: str
    kind: str
    platform: str
    value: str

    @property
    def target(self) -> tuple[str, str, str]:
        """What the entry names, whichever list it is on."""
        return self.kind, self.platform, self.value


@dataclass(frozen=True)
class Facts:
    """What a front-end knows about a message or a command, as plain ids.

    ``chat_id`` is the Telegram chat or the Discord channel; ``parent_id`` the channel a Discord thread
    belongs to; ``guild_id`` the Discord server; ``role_ids`` the sender's roles there."""

    platform: str
    user_id: str
    chat_id: str | None = None
    private: bool = True
    guild_id: str | None = None
    parent_id: str | None = None
    role_ids: frozenset[str] = frozenset()

    def named_by(self, kind: str) -> frozenset[str]:
        """The ids of this message an entry of ``kind`` can match."""
        if kind == "user":
            return frozenset({self.user_id})
        if kind == "guild":
            return frozenset(found for found in (self.guild_id,) if found is not None)
        if kind == "role":
            return self.role_ids if self.guild_id is not None else frozenset()
        if kind in ("chat", "channel"):
            return frozenset(found for found in (self.chat_id, self.parent_id) if found is not None)
        return frozenset()


@dataclass(frozen=True)
class Policy:
    """The lists in force: entries (the settings' and the table's), the operators and the default.

    The entries are indexed once, by list, platform and kind, so a decision costs the same with ten
    entries or a hundred thousand."""

    entries: frozenset[Entry] = frozenset()
    operators: frozenset[tuple[str, str]] = frozenset()
    default: str = OPEN
    _index: dict[tuple[str, str, str], frozenset[str]] = field(init=False, repr=False, compare=False)
    _restricted: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index: dict[tuple[str, str, str], set[str]] = {}
        for entry in self.entries:
            index.setdefault((entry.effect, entry.platform, entry.kind), set()).add(entry.value)
        object.__setattr__(self, "_index", {key: frozenset(values) for key, values in index.items()})
        object.__setattr__(self, "_restricted", frozenset(e.platform for e in self.entries if e.effect == ALLOW))

    def with_entries(self, more: Iterable[Entry]) -> Policy:
        return Policy(self.entries | frozenset(more), self.operators, self.default)

    def is_operator(self, facts: Facts) -> bool:
        return facts.platform == CONSOLE or (facts.platform, facts.user_id) in self.operators

    def restricts(self, platform: str) -> bool:
        """True when only the allow lists get in on ``platform``."""
        return self.default == CLOSED or platform in self._restricted

    def listed(self, effect: str, platform: str, kind: str) -> frozenset[str]:
        """The ids of ``kind`` on ``platform`` that the ``effect`` list names."""
        return self._index.get((effect, platform, kind), frozenset())


@dataclass(frozen=True)
class Decision:
    """The answer, and why (``console``, ``operator``, ``blocked``, ``allowed``, ``open``, ``not_allowed``)."""

    allowed: bool
    reason: str
    entry: Entry | None = field(default=None, compare=False)


def decide(facts: Facts, policy: Policy) -> Decision:
    """May a message with these facts be answered under ``policy``?"""
    if facts.platform == CONSOLE:
        return Decision(True, "console")
    if policy.is_operator(facts):
        return Decision(True, "operator")
    if (blocked := matching(facts, policy, BLOCK)) is not None:
        return Decision(False, "blocked", blocked)
    if (allowed := matching(facts, policy, ALLOW)) is not None:
        return Decision(True, "allowed", allowed)
    if policy.restricts(facts.platform):
        return Decision(False, "not_allowed")
    return Decision(True, "open")


def matching(facts: Facts, policy: Policy, effect: str) -> Entry | None:
    """The entry of ``effect`` that names these facts, if any (the same one every time: kinds in the order of
    :data:`KINDS`, the smallest id)."""
    for kind in KINDS:
        named = policy.listed(effect, facts.platform, kind) & facts.named_by(kind)
        if named:
            return Entry(effect, kind, facts.platform, min(named))
    return None


def may_use_command(decision: Decision, command: str, known: bool) -> bool:
    """A command goes ahead when the user is let in, or it is about the data the bot already holds of them."""
    return decision.allowed or (known and command in OWN_DATA_COMMANDS)
