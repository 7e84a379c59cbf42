"""Search tokens for Chinese, English and mixed text.

Chinese runs are segmented with jieba (with part-of-speech tags, so meaningful one-character
nouns such as 猫 or 书 survive while particles and pronouns do not); every other script is split
into lower-cased words. Stop words of both languages and short numbers are dropped. ``keywords``
are those words as written; search tokens also cut English words to their Snowball (Porter2) stem
(dogs → dog, hiking → hike, studies → studi), so every form of a word meets the others.

Tokenising is bounded per text, however it is written (see :data:`MAX_TOKENISED_CHARS`,
:data:`REPEATS_KEPT` and :data:`HMM_STATE_PAIRS_PER_TEXT`): jieba's tagger guesses the words it cannot
find in its dictionary with a hidden Markov model whose cost per character is up to 70 times that of
common text on characters it has no statistics for, so such guesses are rationed, and what is left of
a text is segmented by the dictionary alone. :func:`shared_budget` rations them across many texts (an
import).

The same search tokens are stored (space-separated) beside memories and episodes and used to build
queries, so a change to the rules here (or to the stemmer) must bump ``TOKENIZER_VERSION``: rows
carry the version they were tokenised with and are re-indexed when it changes
(:mod:`shared.recall.reindex`).
"""

from __future__ import annotations

import contextvars
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import cache, lru_cache
from importlib import resources
from itertools import pairwise
from typing import Any

TOKENIZER_VERSION = 4

MAX_TOKEN_CHARS = 64
"""Longer runs are not words a person would search for (and Postgres caps lexemes at 2 KB)."""

MIN_NUMBER_DIGITS = 4
"""Numbers shorter than this (1, 42, 365) match too much to be keywords; years and codes stay."""

SINGLE_CHAR_POS = frozenset({"n", "nr", "ns", "nt", "nz", "ng", "nrt", "nrfg", "s", "j"})
"""jieba part-of-speech tags for which a one-character Chinese token is kept (猫, 狗, 书, 茶)."""

HEAD_NOUN_POS = "n"
"""A two- or three-character word whose last character is itself a noun also yields that character
(乌龙茶 → 茶, 喝茶 → 茶, 看书 → 书, 小猫 → 猫), so related words meet: Chinese compounds are head-final."""
HEAD_NOUN_SKIPPED_WORD_POS = frozenset({"ns", "nt"})
"""Places and organisations (北京, 上海) are names, not compounds."""
GENERIC_HEADS = frozenset("心码题情子头儿面度性者家员物间样种方法")
"""Last characters too general to mean anything alone."""

SUBWORD_MIN_CHARS = 3
"""Words this long also yield the dictionary words inside them, as jieba's search mode does
(篮球比赛 → 篮球, 比赛; 元旦晚会 → 元旦, 晚会), so 比赛 finds 篮球比赛 though it is not a prefix."""
SUBWORD_LENGTHS = (2, 3)

STEMMER_ALGORITHM = "english"
"""Snowball's English stemmer (Porter2), applied to words of ASCII letters at index and query time alike."""
STEM_CACHE_WORDS = 100_000
"""Distinct words whose stems are kept in memory (a stem costs tens of microseconds to compute)."""

DROPPED_POS = frozenset({"m", "mq", "q", "x", "uj", "ul", "y"})
"""Numerals with classifiers (一只, 三个), particles and interjections never become tokens."""

MAX_TOKENISED_CHARS = 8_000
"""Only a text's first 8,000 characters are tokenised: the keys of a longer text (a long imported turn or
episode summary) come from its beginning. A chat message is cut to this length before it is read."""
REPEATS_KEPT = 4
"""A unit of one to four Chinese characters repeated more often than this (哈哈哈哈哈…, 半半半半半…,
好的好的好的…) is cut to this many repetitions before segmentation: more add no word, only work."""
HMM_STATE_PAIRS_PER_TEXT = 800_000
"""The work one text's unknown-word guesses may take, in state pairs jieba's tagger weighs (the
tag-states of a character times those of the one before it: about 900 for common characters, 65,536
for a character jieba has no statistics for), some tens of milliseconds. Ordinary chat needs at most
40,000 per 500 characters and 330,000 for 8,000 (MADial-zh's dialogues and memories). A Chinese run
whose guesses would go over what is left is segmented by the dictionary alone."""
HMM_ALL_STATES = 256
"""Tag-states of a character the tagger has no statistics for (it then weighs every state)."""

RUN_CACHE_ENTRIES = 8_192
"""Chinese runs whose words are kept, most recently used first: a turn tokenises the same lines several times
(the message for its query, its round's keys, the history, what recall shows), and jieba's tagger is most of
the CPU a Chinese turn spends tokenising."""

RUN_CACHE_MAX_CHARS = 256
"""Longer runs are tagged each time (they are rare in chat, and the cache stays a few megabytes)."""

_HAN = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_HAN_RUN = re.compile(f"[{_HAN}]+")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_HAN_CHAR = re.compile(f"[{_HAN}]")
_REPEATED_UNIT = re.compile(f"([{_HAN}]{{1,4}}?)\\1{{{REPEATS_KEPT},}}")
_HMM_CHAR = re.compile("[\u4e00-\u9fd5]")
"""The characters jieba's tagger runs its model on (those it cuts into words)."""
_JIEBA_LOCK = threading.Lock()
_STEMMER_LOCK = threading.Lock()
"""A Snowball stemmer object keeps the word it works on: one thread at a time."""

logging.getLogger("jieba").setLevel(logging.WARNING)


class HmmBudget:
    """State pairs left for unknown-word guesses."""

    def __init__(self, state_pairs: int) -> None:
        self.left = state_pairs

    def spend(self, cost: int) -> bool:
        """Whether ``cost`` fits what is left (then it is spent)."""
        if cost > self.left:
            return False
        self.left -= cost
        return True


_SHARED: contextvars.ContextVar[HmmBudget | None] = contextvars.ContextVar("mnemo_hmm_budget", default=None)


@contextmanager
def shared_budget(state_pairs: int) -> Iterator[HmmBudget]:
    """Texts tokenised inside the block (in this thread or task) share ``state_pairs`` of unknown-word
    guesses besides each one's own :data:`HMM_STATE_PAIRS_PER_TEXT`: many texts at once (an import) cost
    at most this much more than the dictionary's segmentation of them."""
    budget = HmmBudget(state_pairs)
    token = _SHARED.set(budget)
    try:
        yield budget
    finally:
        _SHARED.reset(token)


@cache
def stop_words() -> frozenset[str]:
    """Chinese and English stop words, from the files shipped in ``shared/data``."""
    words: set[str] = set()
    for name in ("stopwords_en.txt", "stopwords_zh.txt"):
        text = resources.files("shared").joinpath("data", name).read_text(encoding="utf-8")
        for line in text.splitlines():
            if not line.startswith("#"):
                words.update(line.split())
    words.update(w.replace("'", "’") for w in list(words) if "'" in w)
    return frozenset(words)


@cache
def _posseg() -> Any:  # jieba.posseg (jieba publishes no types)
    """jieba's tagger, initialised once (loading its dictionary takes about a second)."""
    import jieba
    import jieba.posseg

    with _JIEBA_LOCK:
        jieba.setLogLevel(logging.WARNING)
        jieba.initialize()
    return jieba.posseg


def warm_up() -> None:
    """Load jieba's dictionary, the stop words and the stemmer now (about 2 s of CPU), not on the first
    message."""
    search_tokens("记住我最喜欢的水果 remembering")


def tokenize(text: str, *, expand: bool = True) -> list[str]:
    """The words of ``text`` in order, repeats kept (for term frequency), as written: lower-cased but
    not stemmed (:func:`search_tokens` are what is stored and searched for).

    ``expand`` adds, after each Chinese compound, the dictionary words inside it (see
    ``SUBWORD_MIN_CHARS``) and its head noun (see ``HEAD_NOUN_POS``).
    """
    text = text[:MAX_TOKENISED_CHARS]
    budgets = (HmmBudget(HMM_STATE_PAIRS_PER_TEXT), _SHARED.get())
    tokens: list[str] = []
    position = 0
    for match in _HAN_RUN.finditer(text):
        tokens.extend(_words(text[position : match.start()]))
        tokens.extend(_chinese(_REPEATED_UNIT.sub(_kept_repeats, match.group()), expand, budgets))
        position = match.end()
    tokens.extend(_words(text[position:]))
    return tokens


def keywords(text: str) -> list[str]:
    """The meaningful words of ``text``, distinct, in first-seen order ("我喜欢用 Python 写代码" →
    喜欢, python, 代码)."""
    return list(dict.fromkeys(tokenize(text, expand=False)))


def query_terms(text: str) -> list[str]:
    """The distinct search tokens of ``text``: what a search looks for."""
    return list(dict.fromkeys(search_tokens(text)))


def search_tokens(text: str) -> list[str]:
    """The tokens stored for ``text`` and searched for: :func:`tokenize`'s, English words stemmed."""
    return [search_stem(token) for token in tokenize(text)]


def search_stem(word: str) -> str:
    """An English word's Snowball stem (dogs → dog, running → run, species → speci); a word of any
    other script, or with digits, as it is."""
    if not (word.isascii() and word.isalpha()):
        return word
    return _english_stem(word)


def matches_by_prefix(term: str) -> bool:
    """Whether a search token also finds the longer tokens that start with it. A Chinese word does (猫
    finds 猫咪, 篮球 finds 篮球比赛), as do numbers and words of other scripts; an English stem matches
    whole, since every form of its word has that very stem (dog finds dogs, not dogma; speci finds
    species, not special)."""
    return not (term.isascii() and term.isalpha())


def search_text(parts: Iterable[str | None]) -> str:
    """The space-separated tokens stored in a row's search column."""
    return " ".join(token for part in parts if part for token in search_tokens(part))


@lru_cache(maxsize=STEM_CACHE_WORDS)
def _english_stem(word: str) -> str:
    with _STEMMER_LOCK:
        stem: str = _stemmer().stemWord(word)
        return stem


@cache
def _stemmer() -> Any:  # a snowballstemmer stemmer (the library publishes no types)
    import snowballstemmer  # 30 ms for all its languages: loaded on first use or by warm_up

    return snowballstemmer.stemmer(STEMMER_ALGORITHM)


def _words(chunk: str) -> Iterable[str]:
    stops = stop_words()
    for raw in _WORD.findall(chunk):
        word = raw.lower().replace("’", "'")
        if word.endswith("'s"):
            word = word[:-2]
        if word in stops or not _is_keyword(word):
            continue
        yield word.replace("'", "")


def _kept_repeats(match: re.Match[str]) -> str:
    repeated: str = match.group(1)
    return repeated * REPEATS_KEPT


def _chinese(run: str, expand: bool, budgets: tuple[HmmBudget, HmmBudget | None]) -> tuple[str, ...]:
    key = (run, expand) if len(run) <= RUN_CACHE_MAX_CHARS else None  # a long run is not looked up either
    cached = _RUNS.get(key) if key is not None else None
    if cached is not None:
        return cached
    posseg = _posseg()
    tagged, complete = _tagged(posseg, run, budgets)
    words = tuple(_kept_words(tagged, expand, posseg.dt.word_tag_tab))
    if complete and key is not None:
        _RUNS.put(key, words)
    return words


def _kept_words(tagged: list[Any], expand: bool, dictionary: dict[str, str]) -> Iterator[str]:
    stops = stop_words()
    for pair in tagged:
        word, flag = pair.word, pair.flag
        if word in stops or flag in DROPPED_POS or not _HAN_CHAR.search(word):
            continue
        if len(word) == 1 and flag not in SINGLE_CHAR_POS:
            continue
        yield word
        if not expand:
            continue
        yield from _subwords(word, dictionary, stops)
        if _has_head_noun(word, flag, dictionary):
            yield word[-1]


def _tagged(posseg: Any, run: str, budgets: tuple[HmmBudget, HmmBudget | None]) -> tuple[list[Any], bool]:
    """jieba's tagged words of ``run``: with its guesses at unknown words if they fit the budgets, else as
    the dictionary alone cuts them (the same words when there is nothing to guess); and whether they are
    the guessed ones (what any budget large enough gives, so they may be kept for the next time)."""
    plain = list(posseg.cut(run, HMM=False))
    cost = _guess_cost(plain, posseg.dt.tokenizer.FREQ)
    if cost == 0:
        return plain, True
    own, shared = budgets
    if cost > own.left or (shared is not None and not shared.spend(cost)):
        return plain, False
    own.spend(cost)
    return list(posseg.cut(run, HMM=True)), True


class _RunCache:
    """The words of recently tokenised Chinese runs, at most :data:`RUN_CACHE_ENTRIES`, least recently used
    dropped first; shared by the threads of a process."""

    def __init__(self, entries: int) -> None:
        self._entries: OrderedDict[tuple[str, bool], tuple[str, ...]] = OrderedDict()
        self._size = entries
        self._lock = threading.Lock()

    def get(self, key: tuple[str, bool]) -> tuple[str, ...] | None:
        with self._lock:
            words = self._entries.get(key)
            if words is not None:
                self._entries.move_to_end(key)
            return words

    def put(self, key: tuple[str, bool], words: tuple[str, ...]) -> None:
        with self._lock:
            self._entries[key] = words
            if len(self._entries) > self._size:
                self._entries.popitem(last=False)


_RUNS = _RunCache(RUN_CACHE_ENTRIES)


def _guess_cost(plain: list[Any], frequencies: dict[str, int]) -> int:
    """State pairs the tagger's model would weigh on ``plain``'s unknown spans: runs of two or more
    one-character words that together are no dictionary word (exactly what ``HMM=True`` sends to it)."""
    cost = 0
    span = ""
    for pair in [*plain, None]:
        if pair is not None and len(pair.word) == 1 and _HMM_CHAR.match(pair.word):
            span += pair.word
            continue
        if len(span) > 1 and not frequencies.get(span):
            cost += _state_pairs(span)
        span = ""
    return cost


def _state_pairs(span: str) -> int:
    from jieba.posseg import char_state_tab_P

    states = [len(char_state_tab_P.get(char, ())) or HMM_ALL_STATES for char in span]
    return states[0] + sum(before * after for before, after in pairwise(states))


def _subwords(word: str, dictionary: dict[str, str], stops: frozenset[str]) -> Iterable[str]:
    """The dictionary words of ``SUBWORD_LENGTHS`` characters inside a longer word, in order."""
    if len(word) < SUBWORD_MIN_CHARS:
        return
    for size in SUBWORD_LENGTHS:
        for start in range(len(word) - size + 1):
            part = word[start : start + size]
            if part != word and part in dictionary and part not in stops:
                yield part


def _has_head_noun(word: str, flag: str, tags: dict[str, str]) -> bool:
    head = word[-1]
    return (2 <= len(word) <= 3 and flag not in HEAD_NOUN_SKIPPED_WORD_POS and head not in GENERIC_HEADS
            and head not in stop_words() and tags.get(head) == HEAD_NOUN_POS)


def _is_keyword(word: str) -> bool:
    if len(word) > MAX_TOKEN_CHARS:
        return False
    if word.isdigit():
        return len(word) >= MIN_NUMBER_DIGITS
    return len(word) > 1 or not word.isascii()
