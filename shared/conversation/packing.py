"""How remembered things fill the prompt's memory budget: which recalled memories and episodes earn
their tokens, and how compactly they are written. Pure rules, no database.

Recall hands over more candidates than a prompt needs, best first, each with its relevance (0-1,
relative to the best match). Packing walks them once:

- The first ``base`` of them (``MEMORY_RETRIEVAL_LIMIT``) go in whenever they fit. After them more
  follow while they fit and still match (relevance at least ``RELEVANCE_FLOOR`` of the best), up to
  ``base × EXTRA_FACTOR``: many short memories rather than five long ones, since a short line that
  holds the answer costs little and raw memories leave half the budget unused.
- When one memory is decisive (it answers the question's own key, or the runner-up matches less
  than ``DECISIVE_GAP`` as well as it), no extras join: the answer needs no crowd around it.
- A line that does not fit is skipped, not the end: a shorter one after it may still fit.
- A near-duplicate of a line already packed (``DUPLICATE_SIMILARITY`` of their words in common) is
  left out: it would say the same thing twice.
- Episodes (summaries of a whole sitting) that match the message come right after the base memories;
  the latest sitting's summary, which recall offers for continuity when none matches, only when
  recall found fewer memories than ``base``.
- Lines are compact: memories grouped under the day they were noted (oldest day first, best first
  within a day), a type named only when it says more than "something that happened or is so".

Every cost is counted with the same estimate as the budget (``shared.text.estimate_tokens``),
fences and day headings included, so the memory context never exceeds the budget it is given.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime

from shared.text import estimate_tokens

EXTRA_FACTOR = 4
"""At most ``base × EXTRA_FACTOR`` memories in one prompt (and as many candidates asked of recall)."""
RELEVANCE_FLOOR = 0.1
"""A memory beyond the base count must match at least this share as well as the best one."""
DECISIVE_GAP = 0.4
"""The best memory is decisive when the runner-up's relevance is under this share of its own."""
DUPLICATE_SIMILARITY = 0.85
"""Share of words in common (Jaccard) from which two memories say the same thing."""
PLAIN_TYPES = frozenset({"event", "fact", "person"})
"""Memory types whose line needs no label (the words say what they are)."""
MAX_LINE_CHARS = 300
MEMORIES_FENCE = ("<memories>", "</memories>")
EPISODES_FENCE = ("<earlier_conversations>", "</earlier_conversations>")

_WORDS = re.compile(r"[^\W_]+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


@dataclass(frozen=True)
class MemoryLine:
    """One recalled memory as the prompt sees it; ``relevance`` is relative to the best match (0-1) and
    ``decisive`` marks a memory that answers the question's own key."""

    id: int
    type: str
    content: str
    noted_on: datetime
    relevance: float = 1.0
    decisive: bool = False


@dataclass(frozen=True)
class PackedMemories:
    """What went into the budget: fenced blocks, the memories' ids in the order they were chosen, the
    tokens spent, and how many of the base memories did not fit (a near-duplicate left out is not one)."""

    blocks: tuple[str, ...]
    memory_ids: tuple[int, ...]
    tokens: int
    left_out: int


def candidate_count(base: int) -> int:
    """How many memories recall should offer for a prompt of ``base`` memories."""
    return base * EXTRA_FACTOR


def data_line(text: str) -> str:
    """One line of remembered text: no fences of its own, no line breaks, bounded."""
    flat = " ".join(text.replace("<", "‹").replace(">", "›").split())
    return flat if len(flat) <= MAX_LINE_CHARS else flat[: MAX_LINE_CHARS - 1] + "…"


def pack_memories(memories: Sequence[MemoryLine], episodes: Sequence[str], budget: int, *,
                  base: int | None = None, episodes_matched: bool = True) -> PackedMemories:
    """The memories and episodes that earn a place within ``budget`` tokens, written compactly.
    ``base`` defaults to every memory given (each packed when it fits, none beyond)."""
    base = len(memories) if base is None else base
    packing = _Packing(budget)
    for memory in memories[:base]:
        packing.add(memory)
    episode_lines = packing.episodes(episodes) if episodes_matched or len(packing.chosen) < base else []
    limit = base if _decisive(memories) else base * EXTRA_FACTOR
    floor = RELEVANCE_FLOOR * max((memory.relevance for memory in memories), default=0.0)
    for memory in memories[base:]:
        if len(packing.chosen) >= limit or memory.relevance < floor:
            break
        packing.add(memory)
    blocks = []
    if packing.chosen:
        blocks.append("\n".join([MEMORIES_FENCE[0], *grouped_by_day(packing.chosen), MEMORIES_FENCE[1]]))
    if episode_lines:
        blocks.append("\n".join([EPISODES_FENCE[0], *episode_lines, EPISODES_FENCE[1]]))
    packed = tuple(memory.id for memory in packing.chosen)
    left_out = len({memory.id for memory in memories[:base]} & packing.did_not_fit)
    return PackedMemories(tuple(blocks), packed, packing.used, left_out)


class _Packing:
    """The budget as it fills: what was chosen, the days already headed, the words already said."""

    def __init__(self, budget: int) -> None:
        self.budget, self.used = budget, 0
        self.chosen: list[MemoryLine] = []
        self.did_not_fit: set[int] = set()
        self._days: set[date] = set()
        self._words: list[frozenset[str]] = []

    def add(self, memory: MemoryLine) -> None:
        """Packs ``memory`` unless it repeats one already packed or does not fit."""
        words = word_set(memory.content)
        if any(similarity(words, other) >= DUPLICATE_SIMILARITY for other in self._words):
            return
        day = memory.noted_on.date()
        cost = estimate_tokens(memory_text(memory)) + (0 if day in self._days else estimate_tokens(day_heading(day)))
        cost += 0 if self.chosen else _fence_cost(MEMORIES_FENCE)
        if self.used + cost > self.budget:
            self.did_not_fit.add(memory.id)
            return
        self.chosen.append(memory)
        self._words.append(words)
        self._days.add(day)
        self.used += cost

    def episodes(self, summaries: Sequence[str]) -> list[str]:
        """The episode lines that fit, in the order given."""
        lines: list[str] = []
        for summary in summaries:
            line = f"- {data_line(summary)}"
            cost = estimate_tokens(line) + (0 if lines else _fence_cost(EPISODES_FENCE))
            if self.used + cost <= self.budget:
                lines.append(line)
                self.used += cost
        return lines


def _decisive(memories: Sequence[MemoryLine]) -> bool:
    """One memory answers the question's key, or the best clearly outmatches the rest."""
    if any(memory.decisive for memory in memories):
        return True
    return len(memories) > 1 and memories[1].relevance < DECISIVE_GAP * memories[0].relevance


def grouped_by_day(chosen: Sequence[MemoryLine]) -> list[str]:
    """The memories' lines under a heading for each day they were noted, oldest day first, the given
    order kept within a day."""
    days: dict[date, list[str]] = {}
    for memory in chosen:
        days.setdefault(memory.noted_on.date(), []).append(memory_text(memory))
    return [line for day in sorted(days) for line in (day_heading(day), *days[day])]


def day_heading(day: date) -> str:
    return f"{day:%Y-%m-%d}:"


def memory_text(memory: MemoryLine) -> str:
    label = "" if memory.type in PLAIN_TYPES else f"({memory.type}) "
    return f"- {label}{data_line(memory.content)}"


def word_set(text: str) -> frozenset[str]:
    """The words of a text, lower-cased; each CJK character counts as a word of its own."""
    lowered = text.lower()
    return frozenset(_CJK.findall(lowered)) | frozenset(_WORDS.findall(_CJK.sub(" ", lowered)))


def similarity(first: frozenset[str], second: frozenset[str]) -> float:
    """Jaccard similarity of two word sets (0 when both are empty)."""
    union = first | second
    return len(first & second) / len(union) if union else 0.0


def _fence_cost(fence: tuple[str, str]) -> int:
    return estimate_tokens(fence[0]) + estimate_tokens(fence[1])
