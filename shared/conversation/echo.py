"""Turning the person around: what the user said about themselves, said back to them.

"我最喜欢的水果是芒果" is echoed as "你最喜欢的水果是芒果", "I'm a nurse and my dog is Biscuit" as
"you're a nurse and your dog is Biscuit"; words addressed to the bot turn the other way (你 → 我,
"you" → "I"/"me"). Quoted text, code in backticks, links, e-mail addresses and @mentions are left
exactly as written, and so is every other word (names included). Pure rules, no database.
"""

from __future__ import annotations

import re

_PROTECTED = re.compile(r"`[^`]*`|https?://\S+|www\.\S+|(?<![\w.+-])[\w.+-]+@[\w-]+\.[\w.]+|[@#][\w-]+|“[^“”]*”|「[^「」]*」|"
                        r"『[^『』]*』|\"[^\"]*\"|(?<!\w)'[^']*'(?!\w)")
"""Spans kept verbatim. An address starts where its run of address characters starts and a quotation ends before
the next opening mark, so no start scans the rest of the text again: finding them is linear."""
_ZH_PERSONS = re.compile(r"我们|咱们|你们|自我|您|我|你")
_ZH_SWAP = {"我们": "你们", "咱们": "你们", "你们": "我们", "自我": "自我", "您": "我", "我": "你", "你": "我"}
_EN_PERSONS = re.compile(
    r"\b(?:i'm|i am|i've|i'll|i'd|i was|i|me|my|mine|myself|we're|we are|we've|we'll|we were|we|us|our|ours|ourselves|"
    r"you're|you are|you've|you'll|you'd|you were|yours|yourself|your|you)\b".replace("'", "['’]"), re.IGNORECASE)
_EN_SWAP = {
    "i'm": "you're", "i am": "you are", "i've": "you've", "i'll": "you'll", "i'd": "you'd", "i was": "you were",
    "i": "you", "me": "you", "my": "your", "mine": "yours", "myself": "yourself",
    "we're": "you're", "we are": "you are", "we've": "you've", "we'll": "you'll", "we were": "you were", "we": "you",
    "us": "you", "our": "your", "ours": "yours", "ourselves": "yourselves",
    "you're": "I'm", "you are": "I am", "you've": "I've", "you'll": "I'll", "you'd": "I'd", "you were": "I was",
    "yours": "mine", "yourself": "myself", "your": "my",
}
_SUBJECT_FOLLOWERS = frozenset({
    "do", "did", "can", "could", "will", "would", "should", "have", "had", "know", "said", "told", "think", "like",
    "love", "want", "need", "may", "might", "must", "always", "never", "also", "just", "really", "remember", "helped",
    "make", "made", "get", "got", "see", "saw", "understand", "don't", "didn't", "can't", "won't", "seem", "sound"})
_SENTENCE_START = re.compile(r"(?:^|[.!?。！？]\s*)$")
_HAN = re.compile(r"[\u4e00-\u9fff]")


def second_person(text: str) -> str:
    """``text`` with its persons turned (我 ↔ 你, I ↔ you), protected spans kept verbatim."""
    pieces, position = [], 0
    for protected in _PROTECTED.finditer(text):
        pieces.append(_turn(text[position:protected.start()], at_start=position == 0))
        pieces.append(protected.group())
        position = protected.end()
    pieces.append(_turn(text[position:], at_start=position == 0))
    return "".join(pieces)


def lower_first(text: str) -> str:
    """``text`` to continue a sentence: "Your dog …" → "your dog …" (but "I …" and names stay)."""
    head = text.split(" ", 1)[0]
    if head.lower() in {"you", "your", "you're", "you've", "you'll", "you'd", "yours"}:
        return text[:1].lower() + text[1:]
    return text


def _turn(chunk: str, *, at_start: bool) -> str:
    chunk = _ZH_PERSONS.sub(lambda m: _ZH_SWAP[m.group()], chunk) if _HAN.search(chunk) else chunk
    return _EN_PERSONS.sub(lambda m: _english(m, chunk, at_start), chunk)


def _english(match: re.Match[str], chunk: str, at_start: bool) -> str:
    word = match.group()
    key = " ".join(word.lower().replace("’", "'").split())
    if key == "you":
        following = chunk[match.end():].split(None, 1)
        before = chunk[:match.start()].rstrip()
        subject = (not before or before[-1] in ",.;:!?" or before.lower().endswith((" and", " but", " that", " if"))
                   or (following and following[0].lower().strip(",.!?") in _SUBJECT_FOLLOWERS))
        replacement = "I" if subject else "me"
    else:
        replacement = _EN_SWAP[key]
    starts_sentence = bool(_SENTENCE_START.search(chunk[:match.start()])) and (at_start or match.start() > 0)
    if starts_sentence and word[:1].isupper() and replacement[:1].islower():
        return replacement[:1].upper() + replacement[1:]
    return replacement
