"""The access lists in force, and the operators' changes to them.

The lists are the settings' (the baseline every process starts from) plus the ``access_entries``
table that ``/access`` changes. Every bot process reads the table again when its copy is older than
``ACCESS_REFRESH_SECONDS`` (10 s), so a change made in one process holds in all of them within that
time, without a restart; the process that made it sees it at once. If the database cannot be read,
the last copy read stays in force (the settings alone before any was read).

Front-ends call :meth:`AccessService.admit` before anything else a message or command does (it may
read the database: call it off the event loop) and :meth:`AccessService.run` for ``/access``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NoReturn

from shared.access.config import DEFAULT_REFRESH_SECONDS, setting_of
from shared.access.requests import LIST, REMOVE, AccessRequest, parse_request
from shared.access.rule import ALLOW, BLOCK, KINDS, Decision, Entry, Facts, Policy, decide, may_use_command
from shared.db.access_models import AccessEntryRow
from shared.errors import DatabaseUnavailable, InvalidCommand, NotFound
from shared.repositories.uow import UnitOfWork

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Admission:
    """May it go ahead; the decision behind it; and, for a refused user, whether the bot holds data of theirs."""

    allowed: bool
    decision: Decision
    known: bool = False


@dataclass(frozen=True)
class ListedEntry:
    """An entry in force and where it comes from: a setting (its variable) or an operator's ``/access``."""

    entry: Entry
    setting: str | None = None
    added_by: str | None = None
    added_at: datetime | None = None


@dataclass(frozen=True)
class AccessListing:
    """What ``/access list`` shows."""

    entries: tuple[ListedEntry, ...]
    operators: tuple[str, ...]
    restricted: tuple[str, ...]
    """The platforms where only the allow lists get in (the others are open to all but the block list)."""


@dataclass(frozen=True)
class AccessChange:
    """What ``/access allow|block|remove`` did to one target."""

    action: str
    entry: Entry
    changed: bool
    """False when it was already so."""
    overruled_by: str | None = None
    """A setting that keeps the target as it was (a block in the settings outranks an allow), by its variable."""
    restricted: bool | None = None
    """The platform became limited to its allow lists (True), or open again (False); None: no change."""


class AccessService:
    """One per process, shared by its front-ends."""

    def __init__(self, uow_factory: Callable[[], UnitOfWork], baseline: Policy, *,
                 refresh_seconds: float = DEFAULT_REFRESH_SECONDS, clock: Callable[[], float] = time.monotonic,
                 now: Callable[[], datetime] | None = None) -> None:
        self.uow_factory = uow_factory
        self.baseline = baseline
        self.refresh_seconds = refresh_seconds
        self.clock = clock
        self.now = now or (lambda: datetime.now(UTC))
        self._lock = threading.Lock()
        self._in_force = baseline
        self._read_at: float | None = None

    def policy(self) -> Policy:
        """The settings' lists with the table's, read again when the copy is older than ``refresh_seconds``."""
        with self._lock:
            if self._read_at is None or self.clock() - self._read_at >= self.refresh_seconds:
                self._read_at = self.clock()
                try:
                    with self.uow_factory() as uow:
                        self._in_force = self._with_stored(uow)
                except DatabaseUnavailable:
                    log.warning("access lists not read (database unavailable): the last ones read stay in force")
            return self._in_force

    def admit(self, facts: Facts, command: str | None = None) -> Admission:
        """May this message (``command`` None) or command go ahead?"""
        decision = decide(facts, self.policy())
        if decision.allowed:
            return Admission(True, decision)
        known = self._holds_data_of(facts)
        return Admission(command is not None and may_use_command(decision, command, known), decision, known)

    def _holds_data_of(self, facts: Facts) -> bool:
        """Whether the bot holds anything of this user. While the database is away, assume it does: their
        own-data commands then go ahead and say honestly that the database cannot be reached."""
        try:
            with self.uow_factory() as uow:
                return uow.users.identity(facts.platform, facts.user_id) is not None
        except DatabaseUnavailable:
            return True

    def blocks_any(self, identities: Iterable[tuple[str, str]]) -> bool:
        """True when a block entry refuses any of a user's accounts (platform, platform user id), wherever
        they write: a blocked person's web-panel session may add nothing either."""
        policy = self.policy()
        return any(decide(Facts(platform, user_id), policy).reason == "blocked" for platform, user_id in identities)

    def blocked(self, facts: Facts) -> bool:
        """True when a block entry now refuses these facts (for answers owed since before it was added)."""
        return decide(facts, self.policy()).reason == "blocked"

    def run(self, operator: Facts, text: str) -> AccessListing | AccessChange:
        """``/access …`` typed by ``operator``: the listing, or the change made."""
        if not self.baseline.is_operator(operator):
            raise InvalidCommand("access_operators_only")
        request = parse_request(text, operator.platform)
        if request.action == LIST:
            return self.listing()
        return self.change(request, added_by=f"{operator.platform}:{operator.user_id}")

    def listing(self) -> AccessListing:
        with self.uow_factory() as uow:
            rows = uow.access.entries()
        settings = [ListedEntry(entry, setting=setting_of(entry)) for entry in sorted(self.baseline.entries)]
        stored = [ListedEntry(_entry(row), added_by=row.added_by, added_at=row.created_at) for row in rows]
        policy = self.baseline.with_entries(listed.entry for listed in stored)
        return AccessListing(tuple(settings + stored), tuple(sorted(":".join(op) for op in policy.operators)),
                             tuple(platform for platform in KINDS["user"] if policy.restricts(platform)))

    def change(self, request: AccessRequest, *, added_by: str) -> AccessChange:
        """Put the target on a list (off the other one) or take it off; the table is changed at once."""
        kind, platform, value = request.kind, request.platform, request.value
        assert kind is not None and platform is not None and value is not None
        with self.uow_factory() as uow:
            before = self._with_stored(uow)
            if request.action == REMOVE:
                removed = uow.access.remove(kind, platform, value)
                if removed is None:
                    self._refuse_removal(request)
                entry, changed = request.entry(removed), True
            else:
                found = uow.access.find(kind, platform, value)
                entry, changed = request.entry(request.action), found is None or found.effect != request.action
                uow.access.put(request.action, kind, platform, value, added_by=added_by, now=self.now())
            after = self._with_stored(uow)
            uow.commit()
        self._read_at = None  # this process sees its own change at once
        return AccessChange(request.action, entry, changed, self._overruled_by_settings(request),
                            _restriction_change(before, after, platform))

    def _with_stored(self, uow: UnitOfWork) -> Policy:
        return self.baseline.with_entries(_entry(row) for row in uow.access.entries())

    def _refuse_removal(self, request: AccessRequest) -> NoReturn:
        """Nothing in the table to remove: the target is the settings' (change it there) or on no list."""
        for effect in (ALLOW, BLOCK):
            if request.entry(effect) in self.baseline.entries:
                raise InvalidCommand("access_in_settings", setting=setting_of(request.entry(effect)))
        raise NotFound("access_not_listed")

    def _overruled_by_settings(self, request: AccessRequest) -> str | None:
        """The setting that keeps the target as it was, whatever the table now says: a block in the settings
        outranks an allow, and a removed target stays on the settings' list it is on."""
        effects = (BLOCK,) if request.action == ALLOW else (ALLOW, BLOCK) if request.action == REMOVE else ()
        for effect in effects:
            if request.entry(effect) in self.baseline.entries:
                return setting_of(request.entry(effect))
        return None


def _entry(row: AccessEntryRow) -> Entry:
    return Entry(row.effect, row.kind, row.platform, row.value)


def _restriction_change(before: Policy, after: Policy, platform: str) -> bool | None:
    was, now = before.restricts(platform), after.restricts(platform)
    return None if was == now else now
