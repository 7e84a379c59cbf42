"""How many reminders a user may have waiting, and what an imported one becomes: the one rule for
/remind, reminders the model sets from a conversation, and an imported file (the bot's or the API's).

Each user has at most :data:`MAX_PENDING_REMINDERS` pending reminders, however they were made (a snoozed
one made pending again included), whatever runs at once: :func:`room_for_reminders` holds the user's row
in the database until the reminders are added. An
imported pending reminder that was due more than :data:`MISSED_AFTER` before the import is not sent
late: it is kept as ``cancelled`` with ``last_error`` ``"missed: …"`` (the schema has no ``missed``
status; the prefix tells it apart from one the user cancelled or a platform refused).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from shared.db.kinds import TodoStatus
from shared.repositories.uow import UnitOfWork

MAX_PENDING_REMINDERS = 100
"""Pending reminders per user."""
MISSED_AFTER = timedelta(hours=1)
"""An imported reminder due longer ago than this is recorded as missed, never sent."""


def room_for_reminders(uow: UnitOfWork, user_id: int) -> int:
    """How many more pending reminders the user may have. The user's row is held until the caller's
    transaction ends, so that the count and the reminders added after it are one step: concurrent
    ``/remind``, model reminders and imports of one user (on any process) wait for each other."""
    uow.todos.hold_pending_count(user_id)
    return max(0, MAX_PENDING_REMINDERS - uow.todos.count_pending(user_id))


def missed_on_import(status: str, due_at: datetime, now: datetime) -> str | None:
    """The ``last_error`` of an imported reminder that is too late to send, or None when it may be sent."""
    if status != TodoStatus.PENDING or due_at >= now - MISSED_AFTER:
        return None
    return f"missed: due {due_at:%Y-%m-%d %H:%M} UTC, before it was imported"
