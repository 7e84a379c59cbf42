"""The recycle bin (DESIGN.md §4): where the rules put what they forget, restorable by the user for 30 days.

A rule never deletes a memory outright: what may be forgotten (:func:`shared.memory.policy.forgettable_by_rule`)
and went unused for long, or what the decay review judged of no more value, goes to the bin (``deleted_at`` set,
out of recall, lists and dedup, still in the export). ``/memories forgotten`` lists it and ``/memories restore
<id>`` takes it back, with its history and audit; :data:`~shared.memory.policy.BIN_LIFETIME` after it went in,
the daily maintenance purges it for real, with the older values it had replaced. What the user forgets is not
binned: ``/forget`` deletes at once.
"""

from __future__ import annotations

from datetime import datetime

from shared.db.memory_models import Memory
from shared.errors import NotFound
from shared.repositories.memories import snapshot
from shared.repositories.uow import UnitOfWork


def put_in_bin(uow: UnitOfWork, memory: Memory, now: datetime, *, actor: str, reason: str) -> None:
    """Move an active memory to the recycle bin, audited."""
    before = snapshot(memory)
    memory.deleted_at = now
    memory.updated_at = now
    uow.events.record(memory.user_id, memory.id, "bin", actor, before=before, after=snapshot(memory), reason=reason)


def restore(uow: UnitOfWork, user_id: int, memory_id: int, now: datetime) -> Memory:
    """Take one of the user's memories back out of the bin: in use again, its idle clock reset (so the rule
    that binned it waits its full time again), its history and audit as they were."""
    memory = uow.memories.in_bin(user_id, memory_id)
    if memory is None:
        raise NotFound("memory_not_in_bin")
    before = snapshot(memory)
    memory.deleted_at = None
    memory.last_accessed = now
    memory.updated_at = now
    uow.events.record(user_id, memory.id, "restore", "user", before=before, after=snapshot(memory),
                      reason="restored from the recycle bin by the user")
    uow.flush()
    return memory


def binned_page(uow: UnitOfWork, user_id: int, page: int, page_size: int) -> tuple[list[Memory], int]:
    """One page of the user's recycle bin (latest first) and how many memories it holds."""
    return uow.memories.binned(user_id, limit=page_size, offset=(max(page, 1) - 1) * page_size)
