"""The judges of ``mnemo bench memories``: is a stored memory a question, the bot's words, a near-duplicate of
a memory active when it was stored, or a recalled memory restated? Rules of their own, deliberately
independent of the product's write guard (:mod:`shared.speech.guard`), so the benchmark can catch what the
guard lets through. Pure, no database."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from difflib import SequenceMatcher

JUNK_KINDS = ("question", "bot_words", "near_duplicate", "recalled_restatement")
SIMILAR_RATIO = 0.9
"""Two memory texts this similar (difflib, after normalising) with the same digits count as one."""

_QUESTION_START = re.compile(r"^(?:who|what|where|when|why|how|which|do|does|did|is|are|am|can|could|would|will|"
                             r"should|have|has)\b", re.IGNORECASE)
_QUESTION_WORDS = re.compile(r"[?？]|吗$|呢$|什么|哪|谁|几[个岁点号天次]|多少|怎么|为什么|为啥")
_SENTENCE_END = re.compile(r"[.!?。！？\n]")


@dataclass
class Said:
    """One replayed message: who said it, its text, the bot's reply and the memories recalled for it."""

    user: str
    text: str
    reply: str
    recalled: tuple[str, ...]


def plain(text: str) -> str:
    """Lower-case letters and digits only."""
    return "".join(ch for ch in unicodedata.normalize("NFKC", text).lower() if ch.isalnum())


def similar(left: str, right: str) -> bool:
    a, b = plain(left), plain(right)
    if not a or not b:
        return False
    if a == b:
        return True
    if re.findall(r"\d+", a) != re.findall(r"\d+", b):
        return False
    return SequenceMatcher(None, a, b, autojunk=False).ratio() >= SIMILAR_RATIO


def is_question(content: str, source: str) -> bool:
    """The memory asks something, or the sentence of ``source`` it came from is a question."""
    core = content.strip()
    if _QUESTION_START.match(core) or _QUESTION_WORDS.search(core):
        return True
    at = source.find(core[:12]) if core else -1
    if at < 0:
        return False
    end = _SENTENCE_END.search(source, at + len(core) if source.find(core) == at else at)
    return end is not None and end.group() in "?？"


def said_by_bot(content: str, replies: list[str]) -> bool:
    wanted = plain(content)
    return len(wanted) >= 4 and any(wanted in plain(reply) for reply in replies)


def judge(content: str, said: Said, earlier_replies: list[str], active: list[str]) -> list[str]:
    """The junk kinds of one stored memory ([] when it is a fine memory)."""
    kinds = []
    if is_question(content, said.text):
        kinds.append("question")
    if said_by_bot(content, earlier_replies):
        kinds.append("bot_words")
    if any(similar(content, other) for other in active):
        kinds.append("near_duplicate")
    if any(similar(content, recalled) for recalled in said.recalled):
        kinds.append("recalled_restatement")
    return kinds
