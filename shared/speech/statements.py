"""Statements about the speaker, read from a message by rules (no model): what the offline responder and
the knowledge monitor's rule fallback store. Pure rules, no database.

Only sentences that are statements are read (:mod:`shared.speech.acts`); inside them the phrasings of
:mod:`shared.speech.rules` are found. A sentence may hold several statements ("我住在北京，我喜欢
火锅"); each entry's content is the part of the sentence that says it, openers and emoji removed. The
bot's own words and a recalled memory repeated back are not stored again (:mod:`shared.speech.guard`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from shared.speech.acts import Sentence, sentences
from shared.speech.guard import near_same, said_by_bot
from shared.speech.lexicon import PEOPLE, canonical_thing, plausible, possession_head, topic_key
from shared.speech.rules import RULES, StatementRule

MAX_ENTRIES = 5
MAX_CONTENT_CHARS = 200
_CLAUSE_BREAK = re.compile(r"[，,]")
_TAIL_WORDS = ("now", "anymore", "any more", "these days", "too", "as well")
_TAIL_PARTICLES = "了啦呀哦的呢哈"
_OBJECT_TAIL = re.compile("(?<!\\s)" + "".join(rf"(?<!\s{word})" for word in _TAIL_WORDS)
                          + rf"(?:\s+(?:{'|'.join(_TAIL_WORDS)}))+$|(?<![{_TAIL_PARTICLES}])[{_TAIL_PARTICLES}]+$",
                          re.IGNORECASE)
"""Words and particles that end an object ("coffee now", "香菜了"). A run of them is only tried from its start
(never after a space or one of them), which finds the same tail and keeps the search linear."""
_BOT_TEMPLATE = re.compile(r"^(?:好的，我记住了|好的，我更新了|我记得|Got it|Noted|Updated|I remember)", re.IGNORECASE)
_LEADING_CONJUNCTION = re.compile(r"^(?:(?:and|but|so|also|then|然后|而且|但是|可是|所以)\s*)+", re.IGNORECASE)
_SYMBOLS = frozenset({"So", "Sk", "Cs", "Co", "Cn"})


@dataclass(frozen=True)
class Statement:
    """One thing the user stated about themselves, and whether they were correcting an earlier one."""

    type: str
    predicate: str
    content: str
    """The part of the sentence that says it, as it is stored."""
    correction: bool = False
    value: str = ""
    """The object of the statement: the name, the place, the thing liked."""

    @property
    def key(self) -> tuple[str, str]:
        """(type, predicate): the same key means the same memory, and a new value supersedes the old."""
        return self.type, self.predicate


def read_statements(text: str, *, bot_lines: Iterable[str] = (), recalled: Iterable[str] = ()) -> list[Statement]:
    """The statements of ``text`` (at most ``MAX_ENTRIES``; a later one of the same key wins), without the
    bot's words and without memories that were recalled for this turn repeated back."""
    bot_lines, recalled = tuple(bot_lines), tuple(recalled)
    if _BOT_TEMPLATE.match((text or "").strip()):
        return []
    found: dict[tuple[str, str], Statement] = {}
    for sentence in sentences(text):
        if sentence.kind != "statement":
            continue
        for statement in _in_sentence(sentence):
            content = statement.content
            if said_by_bot(content, bot_lines) or any(near_same(content, memory) for memory in recalled):
                continue
            found.pop(statement.key, None)
            found[statement.key] = statement
    return list(found.values())[-MAX_ENTRIES:]


def statement_keys(text: str) -> list[tuple[str, str]]:
    """The (type, predicate) of every statement in ``text``: which current memories it may replace."""
    return [statement.key for statement in read_statements(text)]


def _in_sentence(sentence: Sentence) -> list[Statement]:
    body = sentence.body.replace("’", "'")
    matches: list[Found] = list(_matches(body))
    clause_starts = [0] + [m.end() for m in _CLAUSE_BREAK.finditer(body)]
    if matches:  # one fact per memory: a clause that says another fact without its subject is a statement too
        matches = sorted(matches + _subjectless(body, clause_starts, matches), key=lambda pair: pair[0].start())

    def clause_of(position: int) -> int:
        return max(start for start in clause_starts if start <= position)

    statements = []
    for index, (match, rule) in enumerate(matches):
        start = match.start()
        end = clause_of(matches[index + 1][0].start()) if index + 1 < len(matches) else len(body)
        span = body[start:max(end, match.end())]
        key, content = _key(rule, match), _tidy(span if len(span) <= MAX_CONTENT_CHARS else match.group())
        if isinstance(match, _Shifted) and content:
            content = match.subject + content
        if key is not None and content:
            statements.append(Statement(key[0], key[1], content, sentence.correction, _object(match)))
    return statements


class _Shifted:
    """A match found in a clause with its subject put back ("我" + "在一家银行工作"), placed where the clause is:
    its text is the clause with the subject, so the stored content says whose it is."""

    def __init__(self, match: re.Match[str], offset: int, end: int, subject: str) -> None:
        self._match, self._offset, self._end, self.subject = match, offset, end, subject

    def start(self) -> int:
        return self._offset

    def end(self) -> int:
        return self._end

    def group(self, *names: str | int) -> str | Any:
        return self._match.group(*names)

    def groupdict(self) -> dict[str, str | Any]:
        return self._match.groupdict()


Found = tuple[re.Match[str] | _Shifted, StatementRule]
"""A rule's match in a sentence, or in one of its clauses with the subject put back."""


def _subjectless(body: str, clause_starts: list[int], found: list[Found]) -> list[Found]:
    """Statements of the clauses no rule matched, read with the speaker put back as their subject: "我住在杭州，
    在一家银行工作" holds two facts, "I live in Porto, work at a bakery" too."""
    extra: list[Found] = []
    ends = [*clause_starts[1:], len(body) + 1]
    for start, end in zip(clause_starts, ends, strict=True):
        clause = body[start:end].rstrip("，,").strip()
        if not clause or any(start <= match.start() < end or match.start() < start < match.end()
                             for match, _rule in found):
            continue
        subject = "我" if "\u4e00" <= clause[0] <= "\u9fff" else "I "
        if clause.startswith(("我", "I ", "I'", "my ", "My ")):
            continue
        for match, rule in _matches(subject + clause):
            if match.start() == 0:
                extra.append((_Shifted(match, start + (len(body[start:end]) - len(body[start:end].lstrip())),
                                       start + len(body[start:end].rstrip("，, ")), subject), rule))
                break
    return extra


def _matches(body: str) -> list[tuple[re.Match[str], StatementRule]]:
    """Non-overlapping plausible rule matches in order of position; an earlier rule wins an overlap."""
    taken: list[tuple[int, int]] = []
    chosen = []
    for rule in RULES:
        for match in rule.pattern.finditer(body):
            if any(match.start() < end and start < match.end() for start, end in taken):
                continue
            if _key(rule, match) is None:
                continue
            taken.append((match.start(), match.end()))
            chosen.append((match, rule))
    return sorted(chosen, key=lambda pair: pair[0].start())


def _object(match: re.Match[str] | _Shifted) -> str:
    return _OBJECT_TAIL.sub("", (match.groupdict().get("object") or "").strip(" '\"“”")).strip()


def _key(rule: StatementRule, match: re.Match[str] | _Shifted) -> tuple[str, str] | None:
    """The (type, predicate) a match stands for; None when its object is not plausible."""
    obj = _object(match)
    if not plausible(rule.check, obj):
        return None
    predicate, memory_type = rule.predicate, rule.type
    if "{thing}" in predicate:
        thing = canonical_thing(match.groupdict().get("thing") or possession_head(obj))
        predicate = predicate.replace("{thing}", thing)
        memory_type = "person" if thing in PEOPLE else memory_type
    if "{topic}" in predicate:
        topic = topic_key(obj)
        if topic is None:
            return None
        predicate = predicate.replace("{topic}", topic)
    return memory_type, predicate


def _tidy(span: str) -> str:
    """The content as stored: no emoji or symbols, no dangling punctuation, single spaces."""
    kept = "".join(ch for ch in span if unicodedata.category(ch) not in _SYMBOLS and ch not in "\u200d\ufe0f")
    kept = _LEADING_CONJUNCTION.sub("", " ".join(kept.split()))
    return kept.strip(" ，,;；:：-—")
