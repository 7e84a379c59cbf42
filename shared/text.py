"""Text hygiene: safe to store (no NUL bytes, no lone surrogates, bounded size) and token estimates."""

from __future__ import annotations

import re

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_WORD = re.compile(r"[^\W_]+|[^\w\s]")

MAX_STORED_CHARS = 20_000
"""A single stored text never exceeds this; longer messages are cut (and the cut is visible)."""


def clean_text(value: str, limit: int = MAX_STORED_CHARS) -> str:
    """``value`` without NUL bytes or unpaired surrogates (Postgres rejects both), cut to ``limit``."""
    cleaned = value.replace("\x00", "")
    cleaned = cleaned if is_utf8_encodable(cleaned) else cleaned.encode("utf-8", "replace").decode("utf-8")
    if len(cleaned) > limit:
        cleaned = cleaned[: limit - 1] + "…"
    return cleaned


def is_utf8_encodable(value: str) -> bool:
    """False for text holding unpaired surrogates (which PostgreSQL cannot store)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate: one token per CJK character, ~1.3 per other word or symbol."""
    cjk = len(_CJK.findall(text))
    other = len(_WORD.findall(_CJK.sub(" ", text)))
    return cjk + (other * 4 + 2) // 3
