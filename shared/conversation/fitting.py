"""How the conversation fits the room a turn's prompt leaves it in the model's context window. Pure rules.

The system message and the app note (the memories within ``MEMORY_CONTEXT_TOKENS``, the time, the style) are
fixed; the conversation gets the rest, ``room`` estimated tokens (``shared.text.estimate_tokens``, the
template's marks included):

- the newest message stays whole when it fits by itself; when it does not, its start is kept, with a mark
  where it was cut, and the user is told how much was read;
- past turns stay whole while they fit; past that, long ones (over ``SHORT_TURN_TOKENS``) are shortened to
  their start, with a mark, the oldest first, and then the oldest turns leave, until the rest fits.
  Shortening and leaving from the oldest keeps each prompt starting as the one before did, as far as it can
  (what servers' prefix caches reuse).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shared.text import estimate_tokens, longest_start

SHORT_TURN_TOKENS = 160
"""A long past turn is shortened to about this many tokens (some 100 English words, 160 Chinese characters)."""
PAST_CUT_MARK = " …[cut]"
MESSAGE_CUT_MARK = " …[the rest of this message did not fit and was cut]"
CUT_AT = ((". ", "。", "! ", "！", "? ", "？", "\n"), (" ", "，", ", "))
"""Where a cut prefers to fall: after a sentence, else after a word, when one ends in the last fifth of what is
kept."""


@dataclass(frozen=True)
class PastCost:
    """A past turn as the fitting sees it: its words, and the tokens its message takes besides them (its note of
    memories, the template's marks)."""

    text: str
    fixed: int


@dataclass(frozen=True)
class FittedConversation:
    """The conversation as it fits: each past turn's words (None: left out), the newest message's words, and what
    was done to make it fit."""

    past: tuple[str | None, ...]
    message: str
    shortened: int = 0
    left_out: int = 0
    message_read_chars: int | None = None
    """How many characters of the newest message the model reads, when it was cut (None: all of it)."""


def fit_conversation(past: Sequence[PastCost], message: str, room: int) -> FittedConversation:
    """The past turns and the newest message within ``room`` estimated tokens (see the module's rules)."""
    message_tokens = estimate_tokens(message)
    if message_tokens > room:
        kept = cut_to_tokens(message, room - estimate_tokens(MESSAGE_CUT_MARK))
        return FittedConversation(past=(None,) * len(past), message=kept + MESSAGE_CUT_MARK,
                                  left_out=len(past), message_read_chars=len(kept))
    texts: list[str | None] = [turn.text for turn in past]
    costs = [estimate_tokens(turn.text) + turn.fixed for turn in past]
    over = sum(costs) - (room - message_tokens)
    for index, turn in enumerate(past):
        if over <= 0:
            break
        if costs[index] - turn.fixed > SHORT_TURN_TOKENS:
            short_text = cut_to_tokens(turn.text, SHORT_TURN_TOKENS) + PAST_CUT_MARK
            texts[index] = short_text
            cost = estimate_tokens(short_text) + turn.fixed
            over, costs[index] = over - (costs[index] - cost), cost
    left_out = 0
    while over > 0 and left_out < len(past):
        texts[left_out], over, left_out = None, over - costs[left_out], left_out + 1
    shortened = sum(text is not None and text != turn.text for text, turn in zip(texts, past, strict=True))
    return FittedConversation(past=tuple(texts), message=message, shortened=shortened, left_out=left_out)


def cut_to_tokens(text: str, tokens: int) -> str:
    """The longest start of ``text`` that costs at most ``tokens`` estimated tokens, ending where a sentence or a
    word does when one ends near the cut."""
    if tokens <= 0:
        return ""
    if estimate_tokens(text) <= tokens:
        return text
    low = longest_start(text, tokens)
    kept = text[:low]
    for marks in CUT_AT:
        boundary = max(kept.rfind(mark) + len(mark) for mark in marks)
        if boundary >= len(kept) * 4 // 5:
            return kept[:boundary].rstrip()
    return kept.rstrip()
