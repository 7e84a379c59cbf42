"""Making any text a user can type safe to store: no NUL bytes, no lone surrogates, bounded size."""

from __future__ import annotations

MAX_STORED_CHARS = 20_000
"""A single stored text never exceeds this; longer messages are cut (and the cut is visible)."""


def clean_text(value: str, limit: int = MAX_STORED_CHARS) -> str:
    """``value`` without NUL bytes or unpaired surrogates (Postgres rejects both), cut to ``limit``."""
    cleaned = value.replace("\x00", "")
    cleaned = cleaned.encode("utf-8", "replace").decode("utf-8") if _has_surrogates(cleaned) else cleaned
    if len(cleaned) > limit:
        cleaned = cleaned[: limit - 1] + "…"
    return cleaned


def _has_surrogates(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
