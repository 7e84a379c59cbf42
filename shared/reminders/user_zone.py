"""A user's time zone: the one they set (``/timezone``, the panel, or saying where they are), else the
operator's ``DEFAULT_TIMEZONE``; and what happens to their reminders when it changes.

When the zone changes, a pending reminder set for a time on the clock keeps its clock time: "明天早上8点半"
set while Mnemo assumed UTC is 08:30 in the new zone too, so it now pings at the moment the user meant. A
reminder set as an amount of time ("in 10 minutes", ``todos.wall_clock`` false) keeps its moment. Every pending
reminder is shown in the new zone from then on. A clock time that has already passed in the new zone is sent
at the next scan, never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from shared.reminders.timeparse import same_wall_time, zone_of, zone_or_default
from shared.repositories.uow import UnitOfWork


@dataclass(frozen=True)
class UserZone:
    """The zone a user's times are in, and whether it is their own (else the operator's default)."""

    name: str
    own: bool
    default: str


@dataclass(frozen=True)
class ZoneChange:
    """What setting a zone did: the zone before and after, and how many pending reminders kept their clock time
    (``moved``: their moment moved) or their moment (``kept``)."""

    before: UserZone
    after: UserZone
    moved: int = 0
    kept: int = 0


def user_zone(uow: UnitOfWork, user_id: int, default: str) -> UserZone:
    user = uow.users.get(user_id)
    own = user.timezone if user is not None else None
    name = zone_or_default(own, default)
    return UserZone(name, own is not None and name == own, default)


def set_user_zone(uow: UnitOfWork, user_id: int, name: str | None, default: str, now: datetime) -> ZoneChange:
    """Make ``name`` (checked by the caller; None: the default again) the user's zone and move their pending
    reminders to it (see the module's docstring)."""
    before = user_zone(uow, user_id, default)
    uow.users.set_timezone(user_id, name)
    after = user_zone(uow, user_id, default)
    moved = kept = 0
    for todo in uow.todos.for_user(user_id):
        if todo.timezone == after.name:
            continue
        if todo.wall_clock:
            due = same_wall_time(todo.due_at, zone_of(todo.timezone), zone_of(after.name))
            todo.remind_at, todo.due_at = todo.remind_at + (due - todo.due_at), due
            moved += 1
        else:
            kept += 1
        todo.timezone, todo.updated_at = after.name, now
    uow.flush()
    return ZoneChange(before, after, moved, kept)


def zone_notice_owed(uow: UnitOfWork, user_id: int, now: datetime) -> bool:
    """True, once per user, when a reminder of theirs used the default zone because they have none of their own:
    its confirmation then says which zone it used and how to change it."""
    user = uow.users.get(user_id)
    return user is not None and user.timezone is None and uow.users.mark_zone_told(user_id, now)
