"""Which stated memories must not be written, whoever proposed them (the LLM, the knowledge monitor or
the offline rules). Pure rules, no database.

* A question never becomes or changes a memory, nor do hypotheticals, requests and greetings: both the
  entry's own text and the message it came from are read (:mod:`shared.speech.acts`).
* The bot's own words are not the user's facts: an entry found in a reply the bot gave is refused.
* A memory said again, in nearly the same words, is the same memory (:func:`near_same`): the writer
  refreshes the one it has instead of storing a second.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from difflib import SequenceMatcher

from shared.search.tokenizer import keywords
from shared.speech.acts import not_a_statement, states_nothing

NEAR_SAME_RATIO = 0.85
"""Two texts this similar (difflib ratio, after normalising) with the same persons and negations are one
memory."""
MIN_BOT_QUOTE_CHARS = 4
"""Shorter entries are not checked against the bot's replies (too many would match by chance)."""
MAX_COMPARED_CHARS = 500

_FILLERS = re.compile(r"现在|目前|其实|真的|的话|了|啊|呀|哦|啦|呢|吧|嘛|\b(?:now|actually|really|just|still|currently|"
                      r"these days|anymore|any more)\b", re.IGNORECASE)
_PERSONS = re.compile(r"我们|你们|咱们|[我你您他她]|\b(?:i|me|my|mine|we|our|you|your|he|she|his|her|they|their)\b",
                      re.IGNORECASE)
_NEGATIONS = re.compile(r"不|没|别|\b(?:not|no|never|don't|doesn't|didn't|isn't|aren't|can't|won't|no longer)\b|n't",
                        re.IGNORECASE)
_DROPPED_CATEGORIES = frozenset({"So", "Sk", "Cs", "Co", "Cn", "Cf", "Mn"})
_REPORTED_QUESTION = re.compile(r"^(?:the )?user (?:asked|asks|wanted to know|wants to know|wonders|wondered)\b|"
                                r"^用户(?:问|询问|想知道|想问)", re.IGNORECASE)


def rejection(content: str, *, source_text: str | None = None, bot_lines: Iterable[str] = ()) -> str | None:
    """Why this entry must not be written ("question", "request", "bot_words", …), or None when it may."""
    reason = "question" if _REPORTED_QUESTION.search(content.strip()) else not_a_statement(content)
    if reason is not None:
        return reason
    if source_text is not None and states_nothing(source_text):
        return "source_not_a_statement"
    if said_by_bot(content, bot_lines):
        return "bot_words"
    return None


def said_by_bot(content: str, bot_lines: Iterable[str]) -> bool:
    """True when ``content`` (normalised) is found inside one of the bot's replies."""
    wanted = normalised(content)
    if len(wanted) < MIN_BOT_QUOTE_CHARS:
        return False
    return any(wanted in normalised(line) for line in bot_lines if line)


def near_same(left: str, right: str) -> bool:
    """True when two memory texts say the same thing: equal after normalising, or very similar with the same
    keywords, persons (我/你, I/you) and negations — so "我住在北京" and "我现在住在北京了" are one memory,
    while "我不住在北京了", "I live in Bern" (after Berlin) and "I'm 26" (after 25) are news."""
    a, b = normalised(left), normalised(right)
    if not a or not b:
        return False
    if a == b:
        return True
    if _persons(left) != _persons(right) or _negations(left) != _negations(right):
        return False
    words = set(keywords(left[:MAX_COMPARED_CHARS]))
    if not words or words != set(keywords(right[:MAX_COMPARED_CHARS])):
        return False
    return SequenceMatcher(None, a, b, autojunk=False).ratio() >= NEAR_SAME_RATIO


def normalised(text: str) -> str:
    """Lower-case letters and digits only, without fillers (现在, 了, "actually", "now") or symbols."""
    text = _FILLERS.sub(" ", unicodedata.normalize("NFKC", text[:MAX_COMPARED_CHARS]).lower().replace("’", "'"))
    return "".join(ch for ch in text if ch.isalnum() and unicodedata.category(ch) not in _DROPPED_CATEGORIES)


def _persons(text: str) -> list[str]:
    return [match.lower() for match in _PERSONS.findall(text[:MAX_COMPARED_CHARS])]


def _negations(text: str) -> int:
    return len(_NEGATIONS.findall(text[:MAX_COMPARED_CHARS]))
