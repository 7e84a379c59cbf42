"""The background sweeps over every user's memories: decay, eviction, the reviews and dedup.

:class:`~shared.repositories.memories.MemoryRepository` reads one user's memories; these methods pick
memories by a rule across all users, a batch at a time, in id order. Rows that are then changed are
locked (``FOR UPDATE``; ``SKIP LOCKED`` where two runs should share the work rather than wait). The
rules' numbers and tiers belong to the services and come in as arguments; a method about one user or
one memory still takes its ``user_id``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import ColumnElement, func, literal, or_, select, tuple_, update
from sqlalchemy.orm import Session

from shared.db.memory_models import Memory
from shared.repositories.memories import active

REVIEW_KINDS = ("promotion", "decay")


class DedupRow(NamedTuple):
    """What dedup reads of one memory."""

    user_id: int
    type: str
    id: int
    tier: str
    content: str
    search_tokens: str
    confidence: float
    access_count: int
    created_at: datetime
    updated_at: datetime
    dedup_reviewed_at: datetime | None


_DEDUP_COLUMNS = tuple(getattr(Memory, name) for name in DedupRow._fields)


def _last_used() -> ColumnElement[datetime]:
    """A memory's last access, or when it was made if it was never accessed."""
    return func.coalesce(Memory.last_accessed, Memory.created_at)


def _idle_since(cutoff: datetime) -> ColumnElement[bool]:
    return _last_used() <= cutoff


MemoryFilter = ColumnElement[bool]
"""A condition on memories a service builds here and hands back to a sweep (``may_forget``)."""


def forgettable(*, kept_from: float, low_below: float, inferred: str) -> MemoryFilter:
    """Memories a rule may put in the recycle bin (the rule is :func:`shared.memory.policy.forgettable_by_rule`,
    its numbers come in as arguments): never confirmed by the user, given less than ``kept_from``, and either
    of source ``inferred`` or given less than ``low_below``."""
    return (Memory.verified.is_(False) & (Memory.base_importance < kept_from)
            & or_(Memory.source == inferred, Memory.base_importance < low_below))


def _due_for_review(kind: str, threshold: float, tiers: Sequence[str],
                    may_forget: ColumnElement[bool] | None = None) -> ColumnElement[bool]:
    """Promotion: importance reached ``threshold`` and never promotion-reviewed. Decay: importance under
    ``threshold``, used since the last decay review (or never reviewed), and ``may_forget`` (what a review
    could not forget is not asked about)."""
    reviewable = active() & Memory.tier.in_(tiers)
    if kind == "promotion":
        return reviewable & (Memory.importance >= threshold) & Memory.promotion_reviewed_at.is_(None)
    if kind == "decay":
        used_since = or_(Memory.decay_reviewed_at.is_(None), Memory.last_accessed > Memory.decay_reviewed_at)
        condition = reviewable & (Memory.importance < threshold) & used_since
        return condition if may_forget is None else condition & may_forget
    raise ValueError(f"no review of kind {kind!r}; expected one of {REVIEW_KINDS}")


def _dedupable(tiers: Sequence[str]) -> ColumnElement[bool]:
    return active() & Memory.tier.in_(tiers)


class MemorySweepRepository:
    """Memories picked by a lifecycle rule, every user's at once."""

    def __init__(self, session: Session) -> None:
        self.session = session

    # --- decay and eviction -------------------------------------------------------------------------

    def expired(self, now: datetime, *, transient_made_before: datetime, spared_tiers: Sequence[str],
                after_id: int, limit: int) -> list[Memory]:
        """Active memories past their lifetime (transient ones made before ``transient_made_before``,
        any whose ``expires_at`` has passed), never of ``spared_tiers``; locked, SKIP LOCKED."""
        over = or_((Memory.tier == "transient") & (Memory.created_at <= transient_made_before),
                   Memory.expires_at <= now)
        return self._locked_batch(active() & Memory.tier.not_in(spared_tiers) & over, after_id, limit)

    def due_to_fade(self, tiers: Sequence[str], *, idle_since: datetime, not_faded_since: datetime,
                    importance_below: float, after_id: int, limit: int) -> list[Memory]:
        """Active memories of ``tiers`` under ``importance_below``, unused since ``idle_since`` and not decayed
        since ``not_faded_since``; locked, SKIP LOCKED."""
        not_yet = or_(Memory.decayed_at.is_(None), Memory.decayed_at < not_faded_since)
        condition = (active() & Memory.tier.in_(tiers) & (Memory.importance < importance_below)
                     & _idle_since(idle_since) & not_yet)
        return self._locked_batch(condition, after_id, limit)

    def due_to_bin(self, tiers: Sequence[str], *, idle_since: datetime, may_forget: ColumnElement[bool],
                   after_id: int, limit: int) -> list[Memory]:
        """Active memories of ``tiers`` unused since ``idle_since`` that ``may_forget`` (see :func:`forgettable`)
        allows a rule to put in the recycle bin; locked, SKIP LOCKED."""
        return self._locked_batch(active() & Memory.tier.in_(tiers) & _idle_since(idle_since) & may_forget,
                                  after_id, limit)

    def binned_before(self, cutoff: datetime, *, after_id: int, limit: int) -> list[Memory]:
        """Memories put in the recycle bin at or before ``cutoff`` (due to be purged); locked, SKIP LOCKED."""
        return self._locked_batch(Memory.deleted_at <= cutoff, after_id, limit)

    def crowded_users(self, more_than: int, *, after_user: int, limit: int) -> list[int]:
        """Users with more than ``more_than`` active memories, in id order after ``after_user``."""
        query = (select(Memory.user_id).where(active(), Memory.user_id > after_user).group_by(Memory.user_id)
                 .having(func.count() > more_than).order_by(Memory.user_id).limit(limit))
        return list(self.session.scalars(query))

    def eviction_victims(self, user_id: int, *, spared_tiers: Sequence[str], limit: int) -> list[Memory]:
        """The user's active memories that go first when there are too many: lowest confidence, then
        the longest unused; never of ``spared_tiers``; locked, SKIP LOCKED."""
        query = (select(Memory).where(Memory.user_id == user_id, active(), Memory.tier.not_in(spared_tiers))
                 .order_by(Memory.confidence, _last_used(), Memory.id)
                 .limit(limit).with_for_update(skip_locked=True))
        return list(self.session.scalars(query))

    # --- the reviews ------------------------------------------------------------------------------

    def due_for_review(self, kind: str, *, threshold: float, tiers: Sequence[str], limit: int,
                       may_forget: ColumnElement[bool] | None = None) -> list[Memory]:
        """Memories of ``tiers`` that need a ``kind`` review (``promotion`` or ``decay``), in id order."""
        query = (select(Memory).where(_due_for_review(kind, threshold, tiers, may_forget)).order_by(Memory.id)
                 .limit(limit))
        return list(self.session.scalars(query))

    def lock_if_due_for_review(self, user_id: int, memory_id: int, kind: str, *, threshold: float,
                               tiers: Sequence[str], may_forget: ColumnElement[bool] | None = None) -> Memory | None:
        """The user's memory, locked, if it still needs that review; None otherwise."""
        query = select(Memory).where(Memory.id == memory_id, Memory.user_id == user_id,
                                     _due_for_review(kind, threshold, tiers, may_forget)).with_for_update()
        return self.session.scalars(query).one_or_none()

    # --- dedup ------------------------------------------------------------------------------------

    def dedup_counts(self, tiers: Sequence[str], *, after_user: int, limit: int) -> list[tuple[int, int]]:
        """``(user id, active memories of tiers)`` of users holding two or more, in id order after ``after_user``."""
        query = (select(Memory.user_id, func.count()).where(_dedupable(tiers), Memory.user_id > after_user)
                 .group_by(Memory.user_id).having(func.count() > 1).order_by(Memory.user_id).limit(limit))
        return [(user_id, count) for user_id, count in self.session.execute(query)]

    def dedup_window(self, user_ids: Sequence[int], tiers: Sequence[str], *, after: tuple[int, str, int],
                     limit: int) -> list[DedupRow]:
        """The next ``limit`` active memories of ``tiers`` of these users after ``after``, ordered by
        user, type and id."""
        query = (select(*_DEDUP_COLUMNS)
                 .where(_dedupable(tiers), Memory.user_id.in_(user_ids),
                        tuple_(Memory.user_id, Memory.type, Memory.id) > tuple_(*map(literal, after)))
                 .order_by(Memory.user_id, Memory.type, Memory.id).limit(limit))
        return [DedupRow._make(row) for row in self.session.execute(query)]

    def lock_for_merge(self, memory_ids: Sequence[int], tiers: Sequence[str]) -> list[Memory]:
        """Those of the memories still active and of ``tiers`` (each row says whose it is), locked in id order."""
        query = (select(Memory).where(Memory.id.in_(memory_ids), _dedupable(tiers)).order_by(Memory.id)
                 .with_for_update())
        return list(self.session.scalars(query))

    def mark_dedup_reviewed(self, memory_ids: Sequence[int], now: datetime) -> None:
        """Remember that the model judged these memories' cluster (loaded rows are not updated)."""
        self.session.execute(update(Memory).where(Memory.id.in_(memory_ids)).values(dedup_reviewed_at=now)
                             .execution_options(synchronize_session=False))

    def _locked_batch(self, condition: ColumnElement[bool], after_id: int, limit: int) -> list[Memory]:
        query = (select(Memory).where(condition, Memory.id > after_id).order_by(Memory.id).limit(limit)
                 .with_for_update(skip_locked=True))
        return list(self.session.scalars(query))
