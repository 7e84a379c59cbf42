"""The daily decay (DESIGN.md §4): what fades, what expires and what is forgotten.

- Episodes lose 20 % of their importance once a day after 7 days and are deleted after 14 (their
  turns stay; the foreign key sets ``episode_id`` to null).
- Memories of tier short or long lose 5 % once a day when idle (not accessed) for 7 days, unless their importance
  is 3.0 or more (high importance never decays). Fading lowers a memory's importance, never deletes it.
- What the user stated or asked to remember is never forgotten by a rule. What a rule may forget (low importance
  as given, or inferred by a model: :func:`shared.memory.policy.forgettable_by_rule`) goes to the recycle bin once
  unused for 90 days (:mod:`shared.memory.recycle_bin`), and what has been in the bin for 30 days is purged.
  Under importance 0.5 the decay review may bin a forgettable memory sooner (:mod:`shared.lifecycle.reviews`).
  Core and system memories never decay and are never binned.
- Transient memories expire 24 hours after they were made, or when their ``expires_at`` has passed.
- Only when an eviction threshold is set: a user keeps at most that many active memories; the
  lowest confidence goes first, then the oldest access (core and system are never evicted).
- Rounds of conversation (the user's lines and the bot's replies) are kept while the account lives, unless
  the operator sets ``CONVERSATION_RETENTION_DAYS``: then those said before that many days ago are deleted,
  both sides; memories made from them stay (their link to the turn is cleared).
- The audit keeps the daily ``decay`` events of a memory for 30 days; how a memory was added,
  changed, superseded or forgotten is kept for good. Expired one-time tokens (confirmations, link
  codes, panel links) and expired web panel sessions are deleted.

"Once a day" means once per UTC calendar day (``decayed_at`` is the guard), so running twice the
same day changes nothing the second time. Purging, expiry and eviction are real deletions, together with the older
rows the memory had replaced (which would otherwise come back to life), each audited with its last
picture. Work goes in batches of :data:`BATCH_SIZE` rows, one short transaction each.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from shared.db.memory_models import Memory
from shared.memory.policy import (
    BIN_LIFETIME,
    DECAYING_TIERS,
    FORGET_AFTER_IDLE,
    FORGET_RULE,
    LASTING_TIERS,
    NEVER_DECAYS_FROM,
    TRANSIENT_LIFETIME,
)
from shared.memory.recycle_bin import put_in_bin
from shared.repositories.memories import snapshot
from shared.repositories.memory_sweeps import forgettable
from shared.repositories.uow import UnitOfWork

EPISODE_DECAY_AFTER = timedelta(days=7)
EPISODE_DECAY_FACTOR = 0.8
EPISODE_LIFETIME = timedelta(days=14)
MEMORY_IDLE_BEFORE_DECAY = timedelta(days=7)
MEMORY_DECAY_FACTOR = 0.95
DECAY_AUDIT_RETENTION = timedelta(days=30)
BATCH_SIZE = 500
ID_BATCH_SIZE = 5000
USER_PAGE = 200

UowFactory = Callable[[], UnitOfWork]
Pick = Callable[[UnitOfWork, int], list[Memory]]
"""The next batch of memories (locked) after the given id."""
Step = Callable[[UnitOfWork, int], list[int]]
"""Act on the next batch of rows after the given id; returns their ids."""


@dataclass
class DecayReport:
    """How many rows each rule changed in one run."""

    memories_expired: int = 0
    memories_decayed: int = 0
    memories_binned: int = 0
    """Put in the recycle bin: forgettable and unused for ``FORGET_AFTER_IDLE``."""
    memories_purged: int = 0
    """Deleted for real after ``BIN_LIFETIME`` in the bin."""
    memories_evicted: int = 0
    episodes_decayed: int = 0
    episodes_deleted: int = 0
    turns_deleted: int = 0
    """Turns past ``CONVERSATION_RETENTION_DAYS`` (the replies to them go too, uncounted)."""
    decay_events_pruned: int = 0
    expired_sign_ins_deleted: int = 0


def run_decay(uow_factory: UowFactory, now: datetime, *, eviction_threshold: int | None,
              conversation_retention_days: int | None = None) -> DecayReport:
    """Apply every decay rule as of ``now``; idempotent for the same day. Rounds are deleted only when
    ``conversation_retention_days`` is set."""
    report = DecayReport()
    report.memories_expired = _each_memory(uow_factory, _transient_over(now), _forgetting(
        "expire", "transient memory past its lifetime"))
    report.memories_decayed = _each_memory(uow_factory, _decay_due(now), _decaying(now))
    report.memories_binned = _each_memory(uow_factory, _bin_due(now), _binning(now))
    report.memories_purged = _each_memory(uow_factory, _purge_due(now), _forgetting(
        "purge", f"in the recycle bin for {BIN_LIFETIME.days} days"))
    if eviction_threshold is not None:
        report.memories_evicted = _evict_over(uow_factory, eviction_threshold)
    report.episodes_deleted = _each_batch(uow_factory, lambda uow, after: uow.retention.delete_episodes(
        ended_before=now - EPISODE_LIFETIME, after_id=after, limit=ID_BATCH_SIZE))
    report.episodes_decayed = _each_batch(uow_factory, lambda uow, after: uow.retention.fade_episodes(
        EPISODE_DECAY_FACTOR, now, ended_before=now - EPISODE_DECAY_AFTER, not_faded_since=day_start(now),
        after_id=after, limit=ID_BATCH_SIZE))
    if conversation_retention_days is not None:
        said_before = now - timedelta(days=conversation_retention_days)
        report.turns_deleted = _each_batch(uow_factory, lambda uow, after: uow.retention.delete_rounds(
            said_before=said_before, after_id=after, limit=ID_BATCH_SIZE))
    report.decay_events_pruned = _each_batch(uow_factory, lambda uow, after: uow.retention.delete_decay_events(
        made_before=now - DECAY_AUDIT_RETENTION, after_id=after, limit=ID_BATCH_SIZE))
    report.expired_sign_ins_deleted = _delete_expired_sign_ins(uow_factory, now)
    return report


def day_start(now: datetime) -> datetime:
    """Midnight UTC of ``now``'s day: what was decayed since then is not decayed again."""
    return now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def forget_with_history(uow: UnitOfWork, memory: Memory, *, action: str, actor: str, reason: str) -> int:
    """Really delete ``memory`` and the rows it replaced, auditing each; returns how many rows went."""
    history = uow.memories.earlier_versions(memory.user_id, memory.id)
    for old in history:
        uow.events.record(old.user_id, old.id, action, actor, before=snapshot(old),
                          reason=f"history of memory {memory.id}, which was removed: {reason}")
    uow.events.record(memory.user_id, memory.id, action, actor, before=snapshot(memory), reason=reason)
    uow.memories.purge(memory.user_id, [memory.id, *(old.id for old in history)])
    return 1 + len(history)


def _transient_over(now: datetime) -> Pick:
    return lambda uow, after: uow.memory_sweeps.expired(
        now, transient_made_before=now - TRANSIENT_LIFETIME, spared_tiers=LASTING_TIERS,
        after_id=after, limit=BATCH_SIZE)


def _decay_due(now: datetime) -> Pick:
    return lambda uow, after: uow.memory_sweeps.due_to_fade(
        DECAYING_TIERS, idle_since=now - MEMORY_IDLE_BEFORE_DECAY, not_faded_since=day_start(now),
        importance_below=NEVER_DECAYS_FROM, after_id=after, limit=BATCH_SIZE)


def _bin_due(now: datetime) -> Pick:
    return lambda uow, after: uow.memory_sweeps.due_to_bin(
        DECAYING_TIERS, idle_since=now - FORGET_AFTER_IDLE, may_forget=forgettable(**FORGET_RULE),
        after_id=after, limit=BATCH_SIZE)


def _purge_due(now: datetime) -> Pick:
    return lambda uow, after: uow.memory_sweeps.binned_before(now - BIN_LIFETIME, after_id=after, limit=BATCH_SIZE)


Change = Callable[[UnitOfWork, Memory], None]


def _decaying(now: datetime) -> Change:
    def decay(uow: UnitOfWork, memory: Memory) -> None:
        before = snapshot(memory)
        memory.importance *= MEMORY_DECAY_FACTOR
        memory.decayed_at = now
        uow.events.record(memory.user_id, memory.id, "decay", "rule", before=before, after=snapshot(memory),
                          reason=f"idle for {MEMORY_IDLE_BEFORE_DECAY.days} days: importance ×{MEMORY_DECAY_FACTOR}")
    return decay


def _binning(now: datetime) -> Change:
    reason = f"unused for {FORGET_AFTER_IDLE.days} days and of low importance, or inferred: in the recycle bin"
    return lambda uow, memory: put_in_bin(uow, memory, now, actor="rule", reason=reason)


def _forgetting(action: str, reason: str) -> Change:
    def forget(uow: UnitOfWork, memory: Memory) -> None:
        forget_with_history(uow, memory, action=action, actor="rule", reason=reason)
    return forget


def _each_memory(uow_factory: UowFactory, pick: Pick, change: Change) -> int:
    """``change`` every memory ``pick`` finds, in id order, a batch per transaction."""
    done, after = 0, 0
    while True:
        with uow_factory() as uow:
            batch = pick(uow, after)
            for memory in batch:
                change(uow, memory)
            uow.commit()
        done += len(batch)
        if len(batch) < BATCH_SIZE:
            return done
        after = batch[-1].id


def _evict_over(uow_factory: UowFactory, threshold: int) -> int:
    """Per user over ``threshold`` active memories, delete the excess (never core or system)."""
    evicted, after_user = 0, 0
    while True:
        with uow_factory() as uow:
            crowded = uow.memory_sweeps.crowded_users(threshold, after_user=after_user, limit=USER_PAGE)
        if not crowded:
            return evicted
        for user_id in crowded:
            evicted += _evict_user(uow_factory, user_id, threshold)
        after_user = crowded[-1]


def _evict_user(uow_factory: UowFactory, user_id: int, threshold: int) -> int:
    evicted = 0
    reason = f"evicted: more than {threshold} memories (lowest confidence, then oldest access, go first)"
    while True:
        with uow_factory() as uow:
            excess = uow.memories.count_active(user_id) - threshold
            victims = [] if excess <= 0 else uow.memory_sweeps.eviction_victims(
                user_id, spared_tiers=LASTING_TIERS, limit=min(excess, BATCH_SIZE))
            for memory in victims:
                forget_with_history(uow, memory, action="delete", actor="rule", reason=reason)
            uow.commit()
        evicted += len(victims)
        if not victims:
            return evicted


def _delete_expired_sign_ins(uow_factory: UowFactory, now: datetime) -> int:
    with uow_factory() as uow:
        deleted = uow.retention.delete_expired_tokens(now) + uow.web_sessions.drop_expired(now)
        uow.commit()
    return deleted


def _each_batch(uow_factory: UowFactory, step: Step) -> int:
    """Run ``step`` batch after batch, in id order, one transaction each, until a batch is not full."""
    done, after = 0, 0
    while True:
        with uow_factory() as uow:
            ids = step(uow, after)
            if ids:
                uow.commit()
        done += len(ids)
        if len(ids) < ID_BATCH_SIZE:
            return done
        after = ids[-1]
