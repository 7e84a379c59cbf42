"""What a server's prefix cache can reuse: the share of a prompt that repeats the previous one.

OpenAI, DeepSeek, Qwen, vLLM and llama.cpp (``cache_prompt``) reuse the computed prefix of a request
that starts, token for token, like one they served before. Messages are laid out one after another
by the chat template, so two requests share the prefix of their rendered message lists. Pure.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any


def rendered(messages: Sequence[Mapping[str, Any]]) -> str:
    """The messages as a chat template lays them out: role markers and contents, in order."""
    return "".join(f"<|{message.get('role')}|>\n{message.get('content') or ''}<|end|>\n" for message in messages)


Messages = Sequence[Mapping[str, Any]]


def reusable_tokens(previous: Messages | None, current: Messages) -> tuple[int, int]:
    """(tokens of ``current`` that repeat the start of ``previous`` byte for byte, tokens of ``current``)."""
    from shared.text import estimate_tokens

    text = rendered(current)
    shared = os.path.commonprefix([rendered(previous), text]) if previous else ""  # noqa: RUF071 (strings, not paths)
    return estimate_tokens(shared), estimate_tokens(text)


def reusable_shares(requests: Sequence[Messages]) -> list[float]:
    """For each request after the first, the share of its tokens a prefix cache holding the one before reuses."""
    shares = []
    for previous, current in pairwise(requests):
        reused, total = reusable_tokens(previous, current)
        shares.append(reused / total if total else 0.0)
    return shares
