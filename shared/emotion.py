"""Emotion taxonomy, the deterministic emotion→strategy table, and the offline lexicon detector.

The LLM reports the user's emotion with every reply (``Emotion.from_json`` tolerates whatever it
sends); in the offline mode ``detect_emotion_offline`` stands in for it. ``strategy_for`` maps an
emotion to a fixed ``ResponseStrategy``; the prompt builder renders it with ``TONE_GUIDANCE``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from types import MappingProxyType
from typing import Any, NamedTuple

EMOTION_CATEGORIES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "neutral": ("neutral",),
    "positive": ("happy", "excited", "grateful", "curious"),
    "negative": ("sad", "anxious", "frustrated", "confused"),
    "seeking": ("help_seeking", "info_seeking", "validation_seeking"),
})
ALL_EMOTIONS: tuple[str, ...] = tuple(e for members in EMOTION_CATEGORIES.values() for e in members)
_CATEGORY_OF = MappingProxyType({e: cat for cat, members in EMOTION_CATEGORIES.items() for e in members})

CONFIDENCE_THRESHOLD = 0.5
"""Below this confidence an emotion counts as neutral: a wrong strategy is worse than none."""
MAX_INDICATORS = 5
MAX_INDICATOR_CHARS = 60
BARE_STRING_CONFIDENCE = 0.6
"""Confidence given to an emotion the LLM sent as a bare string ("sad") instead of an object."""


def category_of(primary: str) -> str:
    """The taxonomy's category of ``primary``; "neutral" for anything outside the taxonomy."""
    return _CATEGORY_OF.get(primary, "neutral")


@dataclass(frozen=True)
class Emotion:
    """One turn's emotion: a taxonomy name (or "unknown"), its category, confidence and cues."""

    primary: str
    category: str
    confidence: float
    indicators: tuple[str, ...] = ()

    def effective(self) -> Emotion:
        """``NEUTRAL`` when this emotion is unknown or not confident enough, else itself."""
        if self.primary not in _CATEGORY_OF or self.confidence < CONFIDENCE_THRESHOLD:
            return NEUTRAL
        return self

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict in the LLM's schema."""
        return {**asdict(self), "indicators": list(self.indicators)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | str | None) -> Emotion:
        """Whatever the LLM sent, normalised; never raises (garbage gives ``UNKNOWN``)."""
        if isinstance(data, str):
            data = {"primary": data, "confidence": BARE_STRING_CONFIDENCE}
        if not isinstance(data, Mapping):
            return UNKNOWN
        primary = _normalise_name(data.get("primary"))
        if primary not in _CATEGORY_OF:
            primary = "unknown"
        return cls(primary, category_of(primary), _clamp_confidence(data.get("confidence")),
                   _clean_indicators(data.get("indicators")))


UNKNOWN = Emotion("unknown", "neutral", 0.0)
NEUTRAL = Emotion("neutral", "neutral", 1.0)


_NAME_SEPARATORS = re.compile(r"[\s-]+")


def _normalise_name(value: Any) -> str:
    return _NAME_SEPARATORS.sub("_", value.strip().lower()) if isinstance(value, str) else ""


def _clamp_confidence(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return 0.0
    try:
        number = float(value)
    except ValueError:
        return 0.0
    return 0.0 if math.isnan(number) else min(1.0, max(0.0, number))


def _clean_indicators(value: Any) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value if isinstance(value, list | tuple) else []
    cleaned = (item.strip()[:MAX_INDICATOR_CHARS] for item in items if isinstance(item, str))
    return tuple(item for item in cleaned if item)[:MAX_INDICATORS]


FORMALITIES = ("casual", "formal")


@dataclass(frozen=True)
class ResponseStrategy:
    """How to answer: tone (a ``TONE_GUIDANCE`` key), target length in characters, and switches."""

    emotion: str
    tone: str
    max_length: int
    use_memory: bool
    proactive_question: bool
    formality: str = "casual"
    emoji_allowed: bool = False

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> ResponseStrategy:
        """A stored strategy back; fields missing or invalid come from the table (neutral for garbage)."""
        if not isinstance(data, Mapping):
            return STRATEGY_TABLE["neutral"]
        base = STRATEGY_TABLE.get(_normalise_name(data.get("emotion")), STRATEGY_TABLE["neutral"])
        valid: dict[str, Callable[[Any], bool]] = {
            "tone": lambda v: isinstance(v, str) and v in TONE_GUIDANCE,
            "max_length": lambda v: type(v) is int and v > 0,
            "use_memory": lambda v: isinstance(v, bool),
            "proactive_question": lambda v: isinstance(v, bool),
            "formality": lambda v: isinstance(v, str) and v in FORMALITIES,
            "emoji_allowed": lambda v: isinstance(v, bool),
        }
        return replace(base, **{k: data[k] for k, ok in valid.items() if k in data and ok(data[k])})


_STRATEGY_ROWS = (
    # emotion             tone                 max_length use_memory question formality emoji
    ("neutral",            "professional",      300, True, False, "casual", False),
    ("happy",              "warm",              250, True, True,  "casual", True),
    ("excited",            "enthusiastic",      250, True, True,  "casual", True),
    ("grateful",           "warm",              200, True, False, "casual", True),
    ("curious",            "engaging",          400, True, True,  "casual", True),
    ("sad",                "empathetic",        400, True, False, "casual", False),
    ("anxious",            "calm_reassuring",   350, True, False, "casual", False),
    ("frustrated",         "patient",           350, True, False, "casual", False),
    ("confused",           "clear_explanatory", 500, True, True,  "casual", False),
    ("help_seeking",       "helpful",           600, True, True,  "casual", False),
    ("info_seeking",       "informative",       500, True, False, "formal", False),
    ("validation_seeking", "supportive",        350, True, False, "casual", False),
)
STRATEGY_TABLE: Mapping[str, ResponseStrategy] = MappingProxyType(
    {row[0]: ResponseStrategy(*row) for row in _STRATEGY_ROWS})
PLAIN_STRATEGY = ResponseStrategy("neutral", "neutral", 300, use_memory=True, proactive_question=False)
"""The plain mode's one strategy (USE_MEMORY_EMOTION_SYSTEM=false): no emotion-driven changes."""

TONE_GUIDANCE: Mapping[str, str] = MappingProxyType({
    "neutral": "Answer naturally and directly.",
    "professional": "Be clear, friendly and to the point.",
    "warm": "Be warm and glad with the user; share their good mood.",
    "enthusiastic": "Match the user's excitement with lively, upbeat energy.",
    "engaging": "Explore the question with interest and invite the user to think further.",
    "empathetic": "Acknowledge the feeling first; be gentle and unhurried; do not push for details.",
    "calm_reassuring": "Be calm and steady; reassure without dismissing the worry; keep it simple.",
    "patient": "Stay patient; acknowledge the frustration briefly, then focus on a concrete fix.",
    "clear_explanatory": "Explain step by step in plain words; ask one question to clear up what is unclear.",
    "helpful": "Give practical, actionable help; ask for the one detail you need if something is missing.",
    "informative": "Give accurate, well-organised information; say when you are unsure.",
    "supportive": "Be supportive and honest; recognise the effort, and give a fair view rather than flattery.",
})


def strategy_for(emotion: Emotion | None, *, enabled: bool = True) -> ResponseStrategy:
    """The fixed strategy for ``emotion``; the same input always gives the same strategy.

    None, unknown or low-confidence emotions give the neutral strategy; ``enabled=False`` (the plain
    mode) always gives ``PLAIN_STRATEGY``. One LLM call both detects turn N's emotion and answers
    turn N, so the caller applies the strategy chosen from turn N's emotion to turn N+1.
    """
    if not enabled:
        return PLAIN_STRATEGY
    effective = (emotion or NEUTRAL).effective()
    return STRATEGY_TABLE.get(effective.primary, STRATEGY_TABLE["neutral"])


# --- offline detector ---------------------------------------------------------------------------

CUES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "sad": ("难过", "伤心", "想哭", "郁闷", "失落", "sad", "depressed", "upset", "heartbroken", "lonely"),
    "anxious": ("焦虑", "紧张", "担心", "害怕", "nervous", "anxious", "worried", "stressed", "scared"),
    "frustrated": ("烦死", "好烦", "很烦", "心烦", "烦躁", "气死", "受不了", "崩溃",
                   "annoyed", "frustrated", "fed up", "annoying", "angry"),
    "confused": ("不懂", "不明白", "搞不清", "confused", "what do you mean", "don't understand",
                 "doesn't make sense"),
    "happy": ("开心", "高兴", "太好了", "快乐", "happy", "great", "glad", "awesome"),
    "excited": ("激动", "兴奋", "期待", "excited", "can't wait", "thrilled"),
    "grateful": ("谢谢", "感谢", "多谢", "thanks", "thank you", "grateful", "appreciate"),
    "curious": ("为什么", "怎么", "好奇", "why", "how does", "how do", "curious", "i wonder"),
    "help_seeking": ("帮我", "怎么办", "求助", "help me", "can you help", "what should i do"),
    "info_seeking": ("是什么", "什么是", "介绍一下", "what is", "tell me about"),
    "validation_seeking": ("你觉得我", "对吗", "对不对", "是不是我的错", "am i right", "is it okay",
                           "was i wrong", "do you think i"),
})
"""Lower-case cues per emotion. English cues match whole words; Chinese ones anywhere."""
NEGATION_FLIPS = MappingProxyType({"happy": "sad", "excited": "sad"})
"""A negated cue ("不开心", "not happy") of these emotions means the other; other negated cues are ignored."""
DETECTION_PRIORITY = ("sad", "anxious", "frustrated", "confused", "help_seeking", "validation_seeking",
                      "info_seeking", "grateful", "excited", "happy", "curious")
"""Ties between equally many cues go to the earlier emotion: feelings before questions."""
CUE_CONFIDENCE, EXTRA_CUE_BONUS, INTENSITY_BONUS, MAX_DETECTED_CONFIDENCE = 0.6, 0.1, 0.15, 0.95
"""One cue gives 0.6; each further cue of the same emotion, an intensifier or "!!" add to it."""
NO_CUE = Emotion("neutral", "neutral", 0.6)
CONTEXT_CHARS = 40
"""How far before a cue a negation ("not", "不") or an intensifier ("very", "太") is looked for."""

_EN_NEGATION = re.compile(r"(?:\b(?:not|never|no|hardly)|\b[a-z]+n't)\s+(?:[a-z']+\s+){0,2}$")
_ZH_NEGATION = re.compile(r"(?:不|没有?|别)(?:太|很|怎么|那么|是很|是太|够)?$")
_EN_INTENSIFIER = re.compile(r"\b(?:very|so|really|extremely|super|totally|incredibly)\s+$")
_ZH_INTENSIFIER = re.compile(r"(?:太|非常|特别|超级?|好|真的?|十分|极其)$")
_EXCLAMATIONS = re.compile(r"[!！]{2,}")
_CUE_PATTERNS = tuple(
    (emotion, re.compile(rf"\b{re.escape(cue)}\b" if cue.isascii() else re.escape(cue)), cue.isascii())
    for emotion, cues in CUES.items() for cue in cues)


class _Match(NamedTuple):
    start: int  # includes a negation in front of the cue
    end: int
    emotion: str | None  # None: a negated cue that means nothing on its own
    intense: bool


def detect_emotion_offline(text: str) -> Emotion:
    """The emotion of ``text`` from the cue lexicon (Chinese and English), for the offline mode."""
    lowered = (text or "").lower().replace("’", "'")
    matches = [m for m in _non_overlapping(_all_matches(lowered), len(lowered)) if m.emotion]
    if not matches:
        return NO_CUE
    counts = {e: sum(m.emotion == e for m in matches) for e in DETECTION_PRIORITY}
    primary = max(DETECTION_PRIORITY, key=lambda e: (counts[e], -DETECTION_PRIORITY.index(e)))
    chosen = sorted((m for m in matches if m.emotion == primary), key=lambda m: m.start)
    intense = any(m.intense for m in chosen) or bool(_EXCLAMATIONS.search(lowered))
    confidence = CUE_CONFIDENCE + EXTRA_CUE_BONUS * (len(chosen) - 1) + INTENSITY_BONUS * intense
    indicators = tuple(dict.fromkeys(lowered[m.start:m.end] for m in chosen))[:MAX_INDICATORS]
    return Emotion(primary, category_of(primary), round(min(confidence, MAX_DETECTED_CONFIDENCE), 2), indicators)


def _all_matches(lowered: str) -> list[_Match]:
    found = []
    for emotion, pattern, english in _CUE_PATTERNS:
        for hit in pattern.finditer(lowered):
            window_start = max(0, hit.start() - CONTEXT_CHARS)
            before = lowered[window_start:hit.start()]
            negation = (_EN_NEGATION if english else _ZH_NEGATION).search(before)
            if negation:
                start = window_start + negation.start()
                found.append(_Match(start, hit.end(), NEGATION_FLIPS.get(emotion), False))
            else:
                intense = (_EN_INTENSIFIER if english else _ZH_INTENSIFIER).search(before) is not None
                found.append(_Match(hit.start(), hit.end(), emotion, intense))
    return found


def _non_overlapping(matches: list[_Match], size: int) -> list[_Match]:
    """Longest first, so "怎么办" beats "怎么" and "不开心" beats a bare "开心"."""
    taken, kept = bytearray(size), []
    for match in sorted(matches, key=lambda m: (m.start - m.end, m.start)):
        if not any(taken[match.start:match.end]):
            taken[match.start:match.end] = b"\x01" * (match.end - match.start)
            kept.append(match)
    return kept
