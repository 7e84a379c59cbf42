"""Text hygiene: safe to store (no NUL bytes, no lone surrogates, bounded size), visible (no text made
only of invisible characters, no bidirectional controls that reorder what follows), token estimates, and the
one rule for the language a person writes in (:func:`language_of`)."""

from __future__ import annotations

import re
import unicodedata
from enum import StrEnum
from typing import Any

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_WORD = re.compile(r"[^\W_]+|[^\w\s]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
"""A Chinese character: the unified ideographs, extension A and the compatibility ideographs."""
_LATIN_WORD = re.compile(r"[A-Za-z]+")

_BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
"""Embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069), the marks LRM, RLM and ALM."""

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


INVISIBLE_CATEGORIES = frozenset({"Cf", "Cc", "Co", "Cn", "Cs", "Mn", "Mc", "Me", "Zs", "Zl", "Zp"})
"""Unicode categories that show nothing on their own: format characters (zero-width spaces and joiners,
bidirectional controls, tags), controls, private use, unassigned code points, surrogates, combining marks
(they show only on a base character; variation selectors and the combining grapheme joiner are marks) and
separators (spaces, line and paragraph separators)."""
INVISIBLE_FILLERS = frozenset("\u115f\u1160\u3164\uffa0\u2800\ufffc")
"""Letters and symbols drawn as blank: the Hangul fillers (choseong, jungseong, the compatibility and the
halfwidth one), the Braille blank and the object replacement character."""


def is_visible_char(char: str) -> bool:
    """Whether one character shows something by itself (the one definition of "visible")."""
    return char not in INVISIBLE_FILLERS and unicodedata.category(char) not in INVISIBLE_CATEGORIES


def is_invisible(value: str) -> bool:
    """True when no character of ``value`` shows anything by itself (:func:`is_visible_char`): text that
    shows as nothing. Every write of a memory, reminder or command argument refuses such text."""
    return not any(is_visible_char(char) for char in value)


def without_bidi_controls(value: Any) -> Any:
    """``value`` (a string, or JSON holding strings, keys included) without bidirectional controls,
    which make the text after them show in another order than it is stored. Joiners stay (emoji need them)."""
    if isinstance(value, str):
        return _BIDI_CONTROLS.sub("", value)
    if isinstance(value, dict):
        return {without_bidi_controls(key): without_bidi_controls(item) for key, item in value.items()}
    if isinstance(value, list):
        return [without_bidi_controls(item) for item in value]
    return value


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate: one token per CJK character, ~1.3 per other word or symbol."""
    cjk = len(_CJK.findall(text))
    other = len(_WORD.findall(_CJK.sub(" ", text)))
    return cjk + (other * 4 + 2) // 3


def longest_start(text: str, tokens: int) -> int:
    """The length of the longest start of ``text`` that costs at most ``tokens`` estimated tokens (the estimate grows
    with the start, so a binary search finds it)."""
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if estimate_tokens(text[:middle]) <= tokens:
            low = middle
        else:
            high = middle - 1
    return low


class Language(StrEnum):
    """The languages Mnemo answers in; the value is also a locale (``is_chinese("zh")``)."""

    ZH = "zh"
    EN = "en"

    @property
    def chinese(self) -> bool:
        return self is Language.ZH


def language_of(text: str, hint: str | None = None) -> Language:
    """The language to answer ``text`` in, the same on every front-end: Chinese when it has Chinese characters,
    at least as many as Latin words ("我住在 Leeds" is Chinese, "I love 北京 duck" English); English when it has
    more Latin words; a text with neither (a number, an id, emoji) follows ``hint``, a locale (Telegram's
    language of the user, the language a console user last wrote in), and English without one."""
    han = len(_HAN.findall(text))
    latin = len(_LATIN_WORD.findall(text))
    if han or latin:
        return Language.ZH if han >= latin else Language.EN
    return Language.ZH if is_chinese(hint) else Language.EN


def is_chinese(locale: str | None) -> bool:
    """Whether a platform locale (Telegram's language code, Discord's locale) asks for Chinese."""
    return isinstance(locale, str) and locale.lower().startswith("zh")
