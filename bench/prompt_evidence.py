"""Evidence in the prompt: which memories the product actually puts in front of the model for a question.

Recall@k says whether the evidence was found; what the user gets is whether it reached the prompt.
Each question goes through the product's own step 1 (``shared.conversation.prepare.prepare_turn``:
``recall_for_turn`` at the product's default limit, then ``build_turn_prompt`` packing within the
default memory budget) in a transaction that is rolled back, so no question sees another's turns.
The BM25 baseline's best memories are packed by the same prompt builder. The memory-context tokens
are those of the prompt's memory section, counted as the prompt-cost suite counts them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from bench.prompt_cost import memory_section

PRODUCT_DEFAULTS = ("memory_retrieval_limit", "memory_context_tokens", "history_turns")
"""Settings measured at their defaults whatever the environment says."""
CHAT_LINE_GAP = timedelta(seconds=30)
"""Time between the replayed lines of one dialogue."""


@dataclass(frozen=True)
class Packed:
    """What one prompt holds of the user's memories."""

    keys: tuple[str, ...]
    """External ids (LoCoMo dia ids, MADial memory ids) of the memories in the prompt, in prompt order."""
    tokens: int
    """Memory-context tokens of the prompt."""


@dataclass(frozen=True)
class ArchiveItem:
    """One stored memory as the baseline packs it: its external id, text and when it was noted."""

    key: str
    text: str
    at: datetime


def product_config():
    """The hot path's settings with the packing ones at the product's defaults."""
    from shared.conversation.config import ConversationConfig
    from shared.settings import Settings, load_settings

    defaults = {name: Settings.model_fields[name].default for name in PRODUCT_DEFAULTS}
    return ConversationConfig.from_settings(load_settings(**defaults))


def context_tokens(prompt) -> int:
    """The memory-context tokens of a built prompt (0 when nothing was remembered)."""
    from shared.text import estimate_tokens

    return estimate_tokens(memory_section(prompt.messages))


def mnemo_packed(new_uow: Callable, config, platform_user_id: str, lines: Sequence[str], now: datetime,
                 keys: dict[int, str], *, vector: Sequence[float] | None = None, vectors=None) -> Packed:
    """The memories the product's step 1 packs for the last of ``lines``, the user's lines of one chat
    (the earlier ones are sent first, so they are the conversation the recall widens with)."""
    from shared.conversation.messages import IncomingMessage
    from shared.conversation.prepare import PreparedTurn, prepare_turn

    with new_uow() as uow:  # never committed: the question leaves nothing behind
        for index, line in enumerate(lines):
            last = index == len(lines) - 1
            sent_at = now - CHAT_LINE_GAP * (len(lines) - 1 - index)
            message = IncomingMessage(platform="console", chat_id=platform_user_id, user_id=platform_user_id,
                                      text=line, sent_at=sent_at)
            prepared = prepare_turn(uow, message, config, now=sent_at, query_vector=vector if last else None,
                                    vectors=vectors if last else None)
    if not isinstance(prepared, PreparedTurn):  # a message without an id is never a duplicate
        raise RuntimeError("a chat line was taken for a message handled before")
    return Packed(tuple(keys[memory_id] for memory_id in prepared.prompt.memory_ids), context_tokens(prepared.prompt))


def baseline_packed(config, archive: dict[str, ArchiveItem], scored: Sequence[tuple[str, float]], question: str,
                    now: datetime) -> Packed:
    """A baseline's best memories (as many as the product's recall offers, each with its score relative to
    the best) packed by the product's prompt builder under the same rules."""
    from shared.conversation.packing import MemoryLine, candidate_count
    from shared.conversation.prompt import PromptInputs, build_turn_prompt
    from shared.emotion import PLAIN_STRATEGY
    from shared.text import clean_text

    offered = list(scored[: candidate_count(config.retrieval_limit)])
    best = max((score for _, score in offered), default=0.0) or 1.0
    chosen = [key for key, _ in offered]
    lines = [MemoryLine(id=index, type="event", content=clean_text(archive[key].text), noted_on=archive[key].at,
                        relevance=score / best) for index, (key, score) in enumerate(offered)]
    prompt = build_turn_prompt(PromptInputs(
        bot_name=config.bot_name, personality=config.personality, strategy=PLAIN_STRATEGY, user_name=None,
        user_message=question, local_now=now, timezone="UTC", is_group=False, profile=None, memories=lines,
        episodes=(), history=(), memory_budget_tokens=config.memory_budget_tokens,
        memory_base_count=config.retrieval_limit))
    return Packed(tuple(chosen[index] for index in prompt.memory_ids), context_tokens(prompt))
