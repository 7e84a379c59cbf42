"""What each memory tier allows, and how long a memory's text may be: one table, read by the turn
schema, the knowledge monitor, decay, dedup, reviews, manual edits and import alike. Pure.

Tiers, from fleeting to fixed: ``transient`` (true only today), ``short`` (true for weeks), ``long``
(lasting), ``core`` (promoted: what defines the person) and ``system`` (written by the operator).

Importance (the three-layer seed's scale) is given once, where the memory is made: 0.6 for a passing remark,
1.0 for an ordinary fact, 2.0 for a lasting one (home, job, long-held likes), 3.0 for what defines the person
(identity, family, health, the dates of people). From 3.0 a memory never decays (the seed's core line). What the
user stated or asked to remember is never forgotten by a rule; only what is of low importance (under 1.0 as
given) or was inferred by a model goes, after :data:`FORGET_AFTER_IDLE` unused, to the recycle bin, from which
it is purged after :data:`BIN_LIFETIME` unless the user restores it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from types import MappingProxyType
from typing import Final, TypedDict

MAX_MEMORY_CHARS = 500
"""A memory's content, however it is written: by the model, a command, the panel or an import; and a reminder's
(the model's todo, an imported one)."""
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
TRANSIENT_LIFETIME = timedelta(hours=24)
"""How long a ``transient`` memory ("true only today") lives: its ``expires_at`` when written, and the age at which
decay deletes one written without it."""


# --- importance and what a rule may forget ------------------------------------------------------------

IMPORTANCE: MappingProxyType[str, float] = MappingProxyType({
    "passing": 0.6,     # a passing like or mood: "I liked that song"
    "ordinary": 1.0,    # a plain fact
    "lasting": 2.0,     # where they live, their job, a long-held like
    "defining": 3.0,    # name, family, health, birthdays and other dates of people
})
"""The importance given where a memory is made (the seeds' scale; the model answers with a level's name)."""
IMPORTANCE_LEVELS = tuple(IMPORTANCE)
DEFAULT_IMPORTANCE = IMPORTANCE["ordinary"]
NEVER_DECAYS_FROM = IMPORTANCE["defining"]
"""A memory at or above this importance never fades (the three-layer seed: importance ≥ 3.0 never decays)."""
LOW_IMPORTANCE_BELOW = IMPORTANCE["ordinary"]
"""A memory given less than this where it was made is of low importance: a rule may forget it."""
MIN_IMPORTANCE, MAX_IMPORTANCE = 0.1, 5.0
FORGET_AFTER_IDLE = timedelta(days=90)
"""How long a forgettable memory goes unused before a rule sends it to the recycle bin (the seeds' 90 days)."""
BIN_LIFETIME = timedelta(days=30)
"""How long a memory stays in the recycle bin, restorable, before it is purged."""

SOURCE_INFERRED = "inferred"
"""What a model concluded rather than what the user said: a rule may forget it, whatever its importance."""


class ForgetRule(TypedDict):
    """:func:`forgettable_by_rule`'s numbers, as the sweeps' query takes them (its keyword arguments)."""

    kept_from: float
    low_below: float
    inferred: str


FORGET_RULE: Final[ForgetRule] = {
    "kept_from": NEVER_DECAYS_FROM, "low_below": LOW_IMPORTANCE_BELOW, "inferred": SOURCE_INFERRED}


FAMILY_WORDS = frozenset((
    "wife", "husband", "partner", "girlfriend", "boyfriend", "fiance", "fiancee", "mother", "father", "mom", "mum",
    "dad", "parent", "parents", "son", "daughter", "child", "children", "kid", "kids", "baby", "brother", "sister",
    "sibling", "grandmother", "grandfather", "grandma", "grandpa", "aunt", "uncle", "cousin", "niece", "nephew",
    "family"))
DEFINING_KEYS = ("name", "birthday", "born", "age", "anniversary", "allergic_to", "allergy", "health", "illness",
                 "condition", "diagnosis", "medication", "disability", "died", "passed_away", "gender", "pronouns")
"""Identity, health and the dates of people: what defines the person (a key starting with one of these)."""
LASTING_KEYS = ("lives_in", "home", "from", "grew_up_in", "hometown", "job", "works_at", "occupation", "studies",
                "major", "school", "has", "pet", "hobby", "diet", "favourite", "favorite", "language", "religion",
                "values", "goal")
PASSING_KEYS = ("likes", "eats", "does", "mood", "feels", "watched", "listened", "played", "trait")
"""Passing likes and doings ("likes_jazz", "eats_hotpot"): of low importance unless said to matter."""
STRONG_FEELING = ("love", "adore", "passionate", "hate", "can't stand", "cannot stand", "obsessed", "big fan",
                  "huge fan", "favourite", "favorite", "热爱", "最喜欢", "特别喜欢", "非常喜欢", "超喜欢", "爱", "讨厌",
                  "受不了")
"""Words that say a like or dislike matters ("I love traveling", "我热爱画画"): then it is no passing remark."""


def importance_for(type_: str, predicate: str | None, content: str = "") -> float:
    """The importance the rules give a memory by its kind, when nobody said how much it matters: family, identity,
    health and dates high; home, work, study, pets and hobbies lasting; passing likes lower (a like said with
    feeling, ordinary); the rest ordinary."""
    key = (predicate or "").lower()
    words = set(key.split("_"))
    if words & FAMILY_WORDS or _starts(key, DEFINING_KEYS):
        return IMPORTANCE["defining"]
    if type_ == "person" or _starts(key, LASTING_KEYS):
        return IMPORTANCE["lasting"]
    if _starts(key, PASSING_KEYS):
        felt = any(word in content.lower() for word in STRONG_FEELING)
        return DEFAULT_IMPORTANCE if felt else IMPORTANCE["passing"]
    return DEFAULT_IMPORTANCE


def _starts(key: str, prefixes: tuple[str, ...]) -> bool:
    return any(key == prefix or key.startswith(prefix + "_") for prefix in prefixes)


def importance_of(level: object, default: float | None = DEFAULT_IMPORTANCE) -> float | None:
    """The importance a model or a rule gave: a level's name ("lasting") or a number (clamped), else ``default``."""
    if isinstance(level, str):
        return IMPORTANCE.get(level.strip().lower(), default)
    if isinstance(level, int | float) and not isinstance(level, bool) and level == level:
        return min(MAX_IMPORTANCE, max(MIN_IMPORTANCE, float(level)))
    return default


def forgettable_by_rule(source: str, base_importance: float, verified: bool) -> bool:
    """Whether a rule may send the memory to the recycle bin once long unused: never what the user confirmed
    (``/remember``), nor high-importance memories; otherwise what a model inferred, or anything of low importance."""
    if verified or base_importance >= NEVER_DECAYS_FROM:
        return False
    return source == SOURCE_INFERRED or base_importance < LOW_IMPORTANCE_BELOW
