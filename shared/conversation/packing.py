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
- Rounds (what was said: the user's line and the bot's reply) are ranked with the memories and packed the
  same way, under the day they were said, attributed ("you: … / me: …"), each side cut around the words
  the message matched. A memory and the round it was drawn from are not both packed: the first in rank
  order stands for both.

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
ROUND_SIDE_CHARS = 160
"""Each side of a packed round (the user's line, the bot's reply) is cut to this, around the matched words."""
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
    source_turn_id: int | None = None
    """The user's turn the memory was drawn from (its round is not packed beside it)."""
    rank: float = 0.0
    """Its place among memories and rounds together (the recall score); memories keep their given order."""


@dataclass(frozen=True)
class RoundLine:
    """One recalled round: the user's turn ``id``, when it was said, the line and the bot's reply, with the
    words the message matched (each side is cut around them)."""

    id: int
    said_on: datetime
    line: str
    reply: str | None
    relevance: float = 1.0
    rank: float = 0.0
    terms: tuple[str, ...] = ()

    @property
    def noted_on(self) -> datetime:
        return self.said_on

    @property
    def content(self) -> str:
        return f"{self.line} {self.reply or ''}"


@dataclass(frozen=True)
class PackedMemories:
    """What went into the budget: fenced blocks, the memories' ids in the order they were chosen, the
    tokens spent, and how many of the base memories did not fit (a near-duplicate left out is not one);
    the rounds (user turn ids) and episodes (ids, where given) packed."""

    blocks: tuple[str, ...]
    memory_ids: tuple[int, ...]
    tokens: int
    left_out: int
    round_ids: tuple[int, ...] = ()
    episode_ids: tuple[int, ...] = ()


def candidate_count(base: int) -> int:
    """How many memories recall should offer for a prompt of ``base`` memories."""
    return base * EXTRA_FACTOR


def data_line(text: str) -> str:
    """One line of remembered text: no fences of its own, no line breaks, bounded."""
    flat = " ".join(text.replace("<", "‹").replace(">", "›").split())
    return flat if len(flat) <= MAX_LINE_CHARS else flat[: MAX_LINE_CHARS - 1] + "…"


def pack_memories(memories: Sequence[MemoryLine], episodes: Sequence[str], budget: int, *,
                  base: int | None = None, episodes_matched: bool = True, rounds: Sequence[RoundLine] = (),
                  episode_ids: Sequence[int] = ()) -> PackedMemories:
    """The memories, rounds and episodes that earn a place within ``budget`` tokens, written compactly.
    ``base`` defaults to every memory and round given (each packed when it fits, none beyond)."""
    ranked = in_rank_order(memories, rounds)
    base = len(ranked) if base is None else base
    packing = _Packing(budget)
    for item in ranked[:base]:
        packing.add(item)
    episode_lines = []
    if episodes_matched or len(packing.chosen) < base:
        episode_lines = packing.episodes(episodes)
    limit = base if _decisive(ranked) else base * EXTRA_FACTOR
    floor = RELEVANCE_FLOOR * max((item.relevance for item in ranked), default=0.0)
    for item in ranked[base:]:
        if len(packing.chosen) >= limit or item.relevance < floor:
            break
        packing.add(item)
    blocks = []
    if packing.chosen:
        blocks.append("\n".join([MEMORIES_FENCE[0], *grouped_by_day(packing.chosen), MEMORIES_FENCE[1]]))
    if episode_lines:
        blocks.append("\n".join([EPISODES_FENCE[0], *(line for _, line in episode_lines), EPISODES_FENCE[1]]))
    packed = tuple(item.id for item in packing.chosen if isinstance(item, MemoryLine))
    packed_rounds = tuple(item.id for item in packing.chosen if isinstance(item, RoundLine))
    left_out = len({_key(item) for item in ranked[:base]} & packing.did_not_fit)
    ids = tuple(episode_ids)
    packed_episodes = tuple(ids[index] for index, _ in episode_lines if index < len(ids))
    return PackedMemories(tuple(blocks), packed, packing.used, left_out, packed_rounds, packed_episodes)


def in_rank_order(memories: Sequence[MemoryLine], rounds: Sequence[RoundLine]) -> list[MemoryLine | RoundLine]:
    """Memories and rounds in one order: each list keeps its own, a round goes before the next memory when it
    ranks higher."""
    merged: list[MemoryLine | RoundLine] = []
    waiting = list(rounds)
    for memory in memories:
        while waiting and waiting[0].rank > memory.rank:
            merged.append(waiting.pop(0))
        merged.append(memory)
    return merged + waiting


def _key(item: MemoryLine | RoundLine) -> tuple[str, int]:
    return ("r" if isinstance(item, RoundLine) else "m", item.id)


class _Packing:
    """The budget as it fills: what was chosen, the days already headed, the words already said."""

    def __init__(self, budget: int) -> None:
        self.budget, self.used = budget, 0
        self.chosen: list[MemoryLine | RoundLine] = []
        self.did_not_fit: set[tuple[str, int]] = set()
        self._days: set[date] = set()
        self._words: list[frozenset[str]] = []
        self._rounds: set[int] = set()
        """Rounds packed, or standing in through a memory drawn from them."""

    def add(self, item: MemoryLine | RoundLine) -> None:
        """Packs ``item`` unless it repeats one already packed (its words, or its round) or does not fit."""
        round_id = item.id if isinstance(item, RoundLine) else item.source_turn_id
        if round_id is not None and round_id in self._rounds:
            return
        words = word_set(item.content)
        if any(similarity(words, other) >= DUPLICATE_SIMILARITY for other in self._words):
            return
        day = item.noted_on.date()
        cost = estimate_tokens(memory_text(item)) + (0 if day in self._days else estimate_tokens(day_heading(day)))
        cost += 0 if self.chosen else _fence_cost(MEMORIES_FENCE)
        if self.used + cost > self.budget:
            self.did_not_fit.add(_key(item))
            return
        self.chosen.append(item)
        self._words.append(words)
        self._days.add(day)
        if round_id is not None:
            self._rounds.add(round_id)
        self.used += cost

    def episodes(self, summaries: Sequence[str]) -> list[tuple[int, str]]:
        """The episode lines that fit, in the order given, each with its place in ``summaries``."""
        lines: list[tuple[int, str]] = []
        for index, summary in enumerate(summaries):
            line = f"- {data_line(summary)}"
            cost = estimate_tokens(line) + (0 if lines else _fence_cost(EPISODES_FENCE))
            if self.used + cost <= self.budget:
                lines.append((index, line))
                self.used += cost
        return lines


def _decisive(memories: Sequence[MemoryLine | RoundLine]) -> bool:
    """One memory answers the question's key, or the best clearly outmatches the rest."""
    if any(isinstance(memory, MemoryLine) and memory.decisive for memory in memories):
        return True
    return len(memories) > 1 and memories[1].relevance < DECISIVE_GAP * memories[0].relevance


def grouped_by_day(chosen: Sequence[MemoryLine | RoundLine]) -> list[str]:
    """The memories' lines under a heading for each day they were noted, oldest day first, the given
    order kept within a day."""
    days: dict[date, list[str]] = {}
    for memory in chosen:
        days.setdefault(memory.noted_on.date(), []).append(memory_text(memory))
    return [line for day in sorted(days) for line in (day_heading(day), *days[day])]


def day_heading(day: date) -> str:
    return f"{day:%Y-%m-%d}:"


def memory_text(memory: MemoryLine | RoundLine) -> str:
    if isinstance(memory, RoundLine):
        return round_text(memory)
    label = "" if memory.type in PLAIN_TYPES else f"({memory.type}) "
    return f"- {label}{data_line(memory.content)}"


def round_text(said: RoundLine) -> str:
    """A round as one attributed line: "- you: … / me: …", each side cut around the matched words."""
    line = f"- you: {data_line(excerpt(said.line, said.terms, ROUND_SIDE_CHARS))}"
    if said.reply:
        line += f" / me: {data_line(excerpt(said.reply, said.terms, ROUND_SIDE_CHARS))}"
    return line


def excerpt(text: str, terms: Sequence[str], limit: int) -> str:
    """``text`` cut to about ``limit`` characters around the first of ``terms`` it holds (its start when it
    holds none), "…" where it was cut."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    lowered = flat.lower()
    found = [at for at in (lowered.find(term.lower()) for term in terms if term) if at >= 0]
    start = max(min(found, default=0) - limit // 3, 0)
    start = min(start, len(flat) - limit)
    cut = flat[start:start + limit]
    return ("…" if start > 0 else "") + cut + ("…" if start + limit < len(flat) else "")


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
