"""What each memory tier allows, and how long a memory's text may be: one table, read by the turn
schema, the knowledge monitor, decay, dedup, reviews, manual edits and import alike. Pure.

Tiers, from fleeting to fixed: ``transient`` (true only today), ``short`` (true for weeks), ``long``
(lasting), ``core`` (promoted: what defines the person) and ``system`` (written by the operator).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

MAX_MEMORY_CHARS = 500
"""A memory's content, however it is written: by the model, a command, the panel or an import."""
MAX_LABEL_CHARS = 100
"""A memory's subject and predicate (key)."""


@dataclass(frozen=True)
class TierPolicy:
    """What the system may do to memories of one tier on its own (a user can always edit or forget)."""

    meaning: str
    """What a memory of this tier is, as the model is told."""
    model_writes: bool
    """The reply's ``memory_update`` may create memories of this tier."""
    model_changes: bool
    """The knowledge monitor may update or delete them (boosting is always allowed)."""
    decays: bool
    """Their importance fades while they go unused."""
    expires: bool
    """Decay deletes them once past ``expires_at``, and evicts them when a user has too many."""
    reviewed: bool
    """The periodic review may promote, keep or retire them."""
    deduplicated: bool
    """The dedup sweep merges near-identical ones."""
    preferred: bool = False
    """When dedup merges, a memory of this tier is the one kept."""


TIER_POLICY: MappingProxyType[str, TierPolicy] = MappingProxyType({
    #                                                model_writes model_changes decays expires reviewed deduplicated
    "transient": TierPolicy("true only today",        True, True, False, True, False, False),
    "short": TierPolicy("true for weeks",             True, True, True, True, True, True),
    "long": TierPolicy("lasting",                     True, True, True, True, True, True),
    "core": TierPolicy("what defines the person",     False, True, False, False, False, True, preferred=True),
    "system": TierPolicy("set by the operator",       False, False, False, False, False, False),
})


def tiers_where(rule: str) -> tuple[str, ...]:
    """The tiers whose policy allows ``rule`` (a :class:`TierPolicy` field), in schema order."""
    return tuple(tier for tier, policy in TIER_POLICY.items() if getattr(policy, rule))


MODEL_WRITTEN_TIERS = tiers_where("model_writes")
MODEL_CHANGED_TIERS = tiers_where("model_changes")
DECAYING_TIERS = tiers_where("decays")
EXPIRING_TIERS = tiers_where("expires")
LASTING_TIERS = tuple(tier for tier in TIER_POLICY if tier not in EXPIRING_TIERS)
REVIEWED_TIERS = tiers_where("reviewed")
DEDUP_TIERS = tiers_where("deduplicated")
PREFERRED_TIERS = tiers_where("preferred")
