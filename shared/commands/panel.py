"""What the memory API and the web panel can do for one user, known by id.

The API resolves every request to a ``user_id`` (a panel session, or an operator naming the user)
and calls one method here. The rules are the memory-command service's: the same text checks, the
same forgetting (tombstones in the audit), the same export and import, the same reminder states.
Another user's id of anything is :class:`~shared.errors.NotFound`, exactly like a missing one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from shared.accounts import panel_access, user_data
from shared.accounts.panel_access import PanelSession, SignedIn
from shared.accounts.user_data import ExportFile, ImportReport
from shared.commands import editing as memory_editing
from shared.commands.editing import MAX_BATCH_IDS, MemoryDraft, WorkingMemory
from shared.commands.followups import followup_settings
from shared.commands.memories import forget_long_term, forget_rounds
from shared.commands.service import (
    MAX_SEARCH_CHARS,
    ReminderItem,
    change_reminder,
    command_text,
    record_id,
    reminder_item,
    type_filter,
    zone_named,
)
from shared.db.kinds import TodoStatus
from shared.db.memory_models import Memory
from shared.errors import AccessRefused, InvalidCommand, NotFound
from shared.followups.texts import FollowupSettings
from shared.followups.timing import DEFAULT_QUIET_HOURS
from shared.memory import recycle_bin
from shared.reminders.user_zone import UserZone, ZoneChange, set_user_zone, user_zone
from shared.repositories.round_records import RoundRecord
from shared.repositories.uow import UnitOfWork
from shared.speech.keys import key_texts
from shared.usage.policy import UsagePolicy
from shared.usage.report import DEFAULT_TOP_USERS, OperatorUsage, UserUsage, operator_usage, user_usage

if TYPE_CHECKING:
    from shared.access.service import AccessService

MAX_PAGE_LIMIT = 100
T = TypeVar("T")


@dataclass(frozen=True)
class MemoryRecord:
    """A memory as the API shows it; ``key`` is the memory's predicate (``likes_drink``), ``key_label`` how
    it reads in each language (:func:`shared.speech.keys.key_texts`)."""

    id: int
    type: str
    key: str | None
    subject: str | None
    content: str
    value: Any
    confidence: float
    access_count: int
    source: str
    created_at: datetime
    updated_at: datetime
    last_accessed: datetime | None
    key_label: dict[str, str] | None = None


@dataclass(frozen=True)
class MemoryListing:
    items: tuple[MemoryRecord, ...]
    total: int
    limit: int
    offset: int


@dataclass(frozen=True)
class RoundListing:
    """A page of the user's rounds: what they said, when, and what the bot answered."""

    items: tuple[RoundRecord, ...]
    total: int
    limit: int
    offset: int


@dataclass(frozen=True)
class Account:
    """Who a session belongs to, for the page's header."""

    user_id: int
    display_name: str | None
    locale: str | None


class PanelService:
    """One instance per API process."""

    def __init__(self, uow_factory: Callable[[], UnitOfWork], *, session_lifetime: timedelta,
                 clock: Callable[[], datetime] | None = None, embeddings_wanted: bool = False,
                 usage_policy: UsagePolicy | None = None, access: AccessService | None = None,
                 default_timezone: str = "UTC", followup_quiet_hours: str = DEFAULT_QUIET_HOURS) -> None:
        self.uow_factory = uow_factory
        self.default_timezone = default_timezone
        self.followup_quiet_hours = followup_quiet_hours
        """The zone of users who have not set theirs (``DEFAULT_TIMEZONE``)."""
        self.access = access
        """The access lists: a blocked user's session keeps reading, exporting and deleting, and adds nothing."""
        self.session_lifetime = session_lifetime
        self.clock = clock or (lambda: datetime.now(UTC))
        self.embeddings_wanted = embeddings_wanted
        self.usage_policy = usage_policy or UsagePolicy()

    # Signing in

    def sign_in(self, token: object) -> SignedIn:
        return self._write(lambda uow: panel_access.sign_in(uow, token, self.clock(), lifetime=self.session_lifetime))

    def session(self, secret: object) -> PanelSession | None:
        with self.uow_factory() as uow:
            return panel_access.session_for(uow, secret, self.clock())

    def sign_out(self, secret: object) -> None:
        self._write(lambda uow: panel_access.sign_out(uow, secret))

    def account(self, user_id: int) -> Account:
        """The user's name and language (from their first identity); NotFound for an unknown user."""
        with self.uow_factory() as uow:
            if not isinstance(user_id, int) or uow.users.get(user_id) is None:
                raise NotFound("user_not_found")
            identities = uow.users.identities_of(user_id)
        first = identities[0] if identities else None
        return Account(user_id, first.display_name if first else None, first.locale if first else None)

    def check_may_add(self, user_id: int) -> None:
        """:class:`AccessRefused` when a block entry names any of the user's accounts: what adds or costs
        (a memory written, an import) is refused to their panel session, as the bots refuse it in chat."""
        if self.access is None:
            return
        with self.uow_factory() as uow:
            identities = [(found.platform, found.platform_user_id) for found in uow.users.identities_of(user_id)]
        if self.access.blocks_any(identities):
            raise AccessRefused()

    # Memories

    def list_memories(self, user_id: int, *, type_: str | None = None, search: str | None = None,
                      limit: int = 20, offset: int = 0) -> MemoryListing:
        kind = type_filter(type_)
        words = None if not search or not search.strip() else command_text(search, MAX_SEARCH_CHARS, "search_empty")
        if not 1 <= limit <= MAX_PAGE_LIMIT or offset < 0:
            raise InvalidCommand("bad_page")
        with self.uow_factory() as uow:
            rows, total = uow.memories.page(user_id, type_=kind, search=words, limit=limit, offset=offset)
            return MemoryListing(tuple(record(m) for m in rows), total, limit, offset)

    def list_forgotten(self, user_id: int, *, limit: int = 20, offset: int = 0) -> MemoryListing:
        """A page of the user's recycle bin (what the rules set aside after long disuse), latest first."""
        if not 1 <= limit <= MAX_PAGE_LIMIT or offset < 0:
            raise InvalidCommand("bad_page")
        with self.uow_factory() as uow:
            rows, total = uow.memories.binned(user_id, limit=limit, offset=offset)
            return MemoryListing(tuple(record(m) for m in rows), total, limit, offset)

    def restore_memory(self, user_id: int, memory_id: int) -> MemoryRecord:
        """A memory out of the recycle bin, in use again with its history."""
        wanted = record_id(memory_id, "memory_not_in_bin")
        return self._write(lambda uow: record(recycle_bin.restore(uow, user_id, wanted, self.clock())))

    def get_memory(self, user_id: int, memory_id: int) -> MemoryRecord:
        wanted = record_id(memory_id, "memory_not_found")
        with self.uow_factory() as uow:
            return record(memory_editing.get_memory(uow, user_id, wanted))

    def create_memory(self, user_id: int, draft: MemoryDraft) -> MemoryRecord:
        return self._write(lambda uow: record(memory_editing.create_memory(
            uow, user_id, draft, self.clock(), embeddings_wanted=self.embeddings_wanted)))

    def update_memory(self, user_id: int, memory_id: int, draft: MemoryDraft) -> MemoryRecord:
        wanted = record_id(memory_id, "memory_not_found")
        return self._write(lambda uow: record(memory_editing.update_memory(
            uow, user_id, wanted, draft, self.clock(), embeddings_wanted=self.embeddings_wanted)))

    def forget(self, user_id: int, memory_ids: list[int]) -> tuple[list[int], list[int]]:
        """Forget the ids that are the user's memories: (deleted, not found)."""
        if not 1 <= len(memory_ids) <= MAX_BATCH_IDS:
            raise InvalidCommand("too_many_ids", limit=MAX_BATCH_IDS)
        wanted = [i for i in memory_ids if isinstance(i, int) and not isinstance(i, bool) and 1 <= i < 2**63]
        deleted, missing = self._write(lambda uow: memory_editing.forget_by_ids(uow, user_id, wanted))
        return deleted, missing + [i for i in memory_ids if i not in wanted]

    def forget_all(self, user_id: int) -> int:
        return self._write(lambda uow: forget_long_term(uow, user_id))

    def export_data(self, user_id: int) -> ExportFile:
        with self.uow_factory() as uow:
            return user_data.export_user_data(uow, user_id, self.clock())

    def import_data(self, user_id: int, data: bytes) -> ImportReport:
        document = user_data.read_export(data)  # a bad file is refused before anything is opened

        def load(uow: UnitOfWork) -> ImportReport:
            identities = uow.users.identities_of(user_id)
            if not identities:
                raise NotFound("user_not_found")
            chat = uow.chats.get_or_create(identities[0].platform, identities[0].platform_user_id, "private")
            return user_data.import_user_data(uow, user_id, document, now=self.clock(), chat_id=chat.id,
                                              embeddings_wanted=self.embeddings_wanted)

        return self._write(load)

    # Rounds of conversation

    def list_rounds(self, user_id: int, *, search: str | None = None, limit: int = 20,
                    offset: int = 0) -> RoundListing:
        """A page of the user's rounds, newest first; ``search``: words the line or the reply contains."""
        words = None if not search or not search.strip() else command_text(search, MAX_SEARCH_CHARS, "search_empty")
        if not 1 <= limit <= MAX_PAGE_LIMIT or offset < 0:
            raise InvalidCommand("bad_page")
        with self.uow_factory() as uow:
            rows, total = uow.round_records.page(user_id, search=words, limit=limit, offset=offset)
        return RoundListing(tuple(rows), total, limit, offset)

    def forget_round(self, user_id: int, round_id: int) -> None:
        """Delete one of the user's rounds, both sides; NotFound when it is not theirs."""
        wanted = record_id(round_id, "round_not_found")
        if not self._write(lambda uow: forget_rounds(uow, user_id, [wanted])):
            raise NotFound("round_not_found")

    # Working memory and reminders

    def working_memories(self, user_id: int) -> list[WorkingMemory]:
        with self.uow_factory() as uow:
            return memory_editing.working_memories(uow, user_id)

    def working_memory(self, user_id: int, session_id: int) -> WorkingMemory:
        wanted = record_id(session_id, "session_not_found")
        with self.uow_factory() as uow:
            return memory_editing.working_memory(uow, user_id, wanted)

    def reminders(self, user_id: int) -> tuple[ReminderItem, ...]:
        with self.uow_factory() as uow:
            return tuple(reminder_item(t) for t in uow.todos.for_user(user_id))

    def cancel_reminder(self, user_id: int, reminder_id: int) -> ReminderItem:
        wanted = record_id(reminder_id, "reminder_not_found")
        return self._write(lambda uow: change_reminder(uow, user_id, wanted, (TodoStatus.PENDING,), self.clock(),
                                                       status=TodoStatus.CANCELLED))

    # Settings

    def zone(self, user_id: int) -> UserZone:
        """The user's time zone (their own, or the default); NotFound for an unknown user."""
        self.account(user_id)
        with self.uow_factory() as uow:
            return user_zone(uow, user_id, self.default_timezone)

    def set_zone(self, user_id: int, text: str | None) -> ZoneChange:
        """A new time zone as ``/timezone`` takes it (None or "default": the default again); pending reminders keep
        their clock time (:mod:`shared.reminders.user_zone`)."""
        self.account(user_id)
        name = None if text is None or not text.strip() else zone_named(command_text(text, MAX_SEARCH_CHARS,
                                                                                      "zone_unknown"))
        return self._write(lambda uow: set_user_zone(uow, user_id, name, self.default_timezone, self.clock()))

    # Follow-ups

    def followups(self, user_id: int, *, on: bool | None = None, quiet_hours: str | None = None) -> FollowupSettings:
        """The user's follow-up settings and open threads; with ``on`` or ``quiet_hours`` ("22-9"), changed first,
        as ``/followups on|off|quiet`` does."""
        self.account(user_id)
        words = ([] if on is None else ["on" if on else "off"]) + ([] if quiet_hours is None else
                                                                  [f"quiet {quiet_hours}"])

        def apply(uow: UnitOfWork) -> FollowupSettings:
            state = followup_settings(uow, user_id, "", self.clock(), self.followup_quiet_hours)
            for text in words:
                state = followup_settings(uow, user_id, text, self.clock(), self.followup_quiet_hours)
            return state

        return self._write(apply)

    # Usage

    def usage(self, user_id: int) -> UserUsage:
        """The user's usage today, over 7 and 30 days, and what is left of today's allowance."""
        with self.uow_factory() as uow:
            return user_usage(uow, user_id, self.clock(), self.usage_policy)

    def operator_usage(self, *, days: int, user_id: int | None = None, top: int = DEFAULT_TOP_USERS) -> OperatorUsage:
        """For operators only (the caller checks): everyone's usage, or one user's (NotFound for no such user)."""
        if user_id is not None:
            self.account(user_id)
        with self.uow_factory() as uow:
            return operator_usage(uow, self.clock(), self.usage_policy, days=days, user_id=user_id, top=top)

    def _write(self, work: Callable[[UnitOfWork], T]) -> T:
        with self.uow_factory() as uow:
            result = work(uow)
            uow.commit()
        return result


def record(memory: Memory) -> MemoryRecord:
    return MemoryRecord(id=memory.id, type=memory.type, key=memory.predicate, subject=memory.subject,
                        content=memory.content, value=memory.value, confidence=memory.confidence,
                        access_count=memory.access_count, source=memory.source, created_at=memory.created_at,
                        updated_at=memory.updated_at, last_accessed=memory.last_accessed,
                        key_label=key_texts(memory.predicate))
