"""Adversarial inputs for a regular expression, built from its own alphabet.

A backtracking engine is slow on text that almost matches over and over: a run of the characters a
repetition accepts, ended by one it does not. So the inputs come from the pattern itself, read with
``re._parser`` (the parser ``re.compile`` uses): its literal characters and substrings, characters of
each class, range and category it accepts, the text of each repetition's body and of each prefix of the
pattern. Each is repeated to ``length`` characters and, mostly, ended by a character outside the
alphabet, so a match that got that far fails at the very end.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import islice, pairwise
from re import _constants as sre  # re's own opcodes and parser (sre_constants, sre_parse)
from re import _parser as sre_parse

CATEGORY_CHARS = {
    sre.CATEGORY_DIGIT: "7٣", sre.CATEGORY_NOT_DIGIT: "a中",
    sre.CATEGORY_SPACE: " \n\u3000", sre.CATEGORY_NOT_SPACE: "a中.",
    sre.CATEGORY_WORD: "aZ_5中é", sre.CATEGORY_NOT_WORD: " .，",
    sre.CATEGORY_LINEBREAK: "\n", sre.CATEGORY_NOT_LINEBREAK: "a",
}
"""Characters that stand for each category (``\\d``, ``\\s``, ``\\w`` and their negations)."""
POOL = "a中 .:/@_-5\n，。！?'\"#"
"""What a negated class or ``.`` is tried with: letters, CJK, digits, spaces and punctuation."""
OUTSIDERS = "\x00\ufffe\U0001f642~`^|"
"""Candidates for the character that ends an input: the first no class of the pattern accepts."""
REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)

MAX_CHARS = 6
"""Single characters repeated, per pattern (literals first, then class representatives)."""
MAX_PAIRS = 3
"""Alternations of two alphabet characters."""
MAX_TRIPLES = 2
MAX_UNITS = 6
"""Literal substrings, repetition bodies and prefixes repeated, together."""


@dataclass(frozen=True)
class Adversary:
    """One input: ``unit`` repeated to the length, then ``end``; ``shape`` says so for a failure message."""

    unit: str
    end: str

    def text(self, length: int) -> str:
        return (self.unit * (length // len(self.unit) + 1))[: length - len(self.end)] + self.end

    @property
    def shape(self) -> str:
        return f"{self.unit!r} repeated" + (f", then {self.end!r}" if self.end else "")


def adversaries(pattern: re.Pattern) -> list[Adversary]:
    """The inputs that ``pattern`` is timed on: at most eighteen, distinct."""
    reader = _Reader(pattern.flags)
    parsed = sre_parse.parse(_as_text(pattern.pattern), pattern.flags & ~re.DEBUG)
    reader.read(list(parsed))
    end = next((c for c in OUTSIDERS if not reader.accepts_anywhere(c)), OUTSIDERS[0])
    chars = list(islice(dict.fromkeys(reader.literal_chars + reader.class_chars), MAX_CHARS))
    mixes = [a + b for a, b in pairwise(chars)][:MAX_PAIRS]
    mixes += [a + b + c for a, b, c in zip(chars, chars[1:], chars[2:], strict=False)][:MAX_TRIPLES]
    units = list(islice(dict.fromkeys(u for u in reader.units if len(u) > 1), MAX_UNITS))
    found = [Adversary(chars[0], "")] if chars else []
    found += [Adversary(unit, end) for unit in chars + mixes + units]
    if isinstance(pattern.pattern, bytes):
        found = [a for a in found if (a.unit + a.end).isascii()]
    return list(dict.fromkeys(found))


def as_input(pattern: re.Pattern, text: str) -> str | bytes:
    """``text`` in the type ``pattern`` searches (bytes patterns get UTF-8)."""
    return text.encode() if isinstance(pattern.pattern, bytes) else text


def _as_text(source: str | bytes) -> str:
    return source.decode("latin-1") if isinstance(source, bytes) else source


class _Reader:
    """Walks a parsed pattern and keeps its alphabet, its classes and sample texts of its parts."""

    def __init__(self, flags: int) -> None:
        self.ignore_case = bool(flags & re.IGNORECASE)
        self.literal_chars: list[str] = []
        self.class_chars: list[str] = []
        self.classes: list[list] = []
        self.units: list[str] = []

    def read(self, sequence: list) -> None:
        """Collect characters and units of ``sequence``; its prefixes are units too."""
        for index, (op, av) in enumerate(sequence):
            self._read_node(op, av)
            if index and op is not sre.LITERAL:
                self.units.append(self.sample(sequence[:index]))
        run = ""
        for op, av in [*sequence, (None, None)]:
            if op is sre.LITERAL:
                run += chr(av)
            else:
                self.units.append(run)
                run = ""

    def _read_node(self, op, av) -> None:
        if op is sre.LITERAL:
            self.literal_chars.append(chr(av))
        elif op is sre.NOT_LITERAL:
            self.class_chars.extend(c for c in POOL[:3] if c != chr(av))
        elif op is sre.ANY:
            self.class_chars.extend("a\n")
            self.classes.append([(sre.NEGATE, None), (sre.LITERAL, ord("\n"))])
        elif op is sre.IN:
            self.classes.append(av)
            self.class_chars.extend(self._class_chars(av))
        elif op in REPEATS:
            body = list(av[2])
            self.units.append(self.sample(body))
            self.read(body)
        elif op is sre.SUBPATTERN:
            self.read(list(av[3]))
        elif op is sre.ATOMIC_GROUP:
            self.read(list(av))
        elif op is sre.BRANCH:
            for alternative in av[1]:
                self.read(list(alternative))
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            self.read(list(av[1]))
        elif op is sre.GROUPREF_EXISTS:
            for branch in av[1:]:
                if branch is not None:
                    self.read(list(branch))

    def _class_chars(self, items: list) -> list[str]:
        if items and items[0][0] is sre.NEGATE:
            return [c for c in POOL if self._in_class(c, items)][:4]
        chars: list[str] = []
        for op, av in items:
            if op is sre.LITERAL:
                chars.append(chr(av))
            elif op is sre.RANGE:
                low, high = av
                chars.extend(chr(code) for code in dict.fromkeys((low, (low + high) // 2, high)))
            elif op is sre.CATEGORY:
                chars.extend(CATEGORY_CHARS.get(av, ""))
        return chars

    def _in_class(self, char: str, items: list) -> bool:
        negated = bool(items) and items[0][0] is sre.NEGATE
        found = any(self._item_accepts(char, op, av) for op, av in items if op is not sre.NEGATE)
        return found != negated

    def _item_accepts(self, char: str, op, av) -> bool:
        forms = {char, char.lower(), char.upper()} if self.ignore_case else {char}
        if op is sre.LITERAL:
            return chr(av) in forms
        if op is sre.RANGE:
            return any(av[0] <= ord(form) <= av[1] for form in forms)
        if op is sre.CATEGORY:
            return bool(re.fullmatch(_CATEGORY_CLASSES.get(av, "(?!)"), char))
        return False

    def accepts_anywhere(self, char: str) -> bool:
        """Whether any literal or class of the pattern accepts ``char``."""
        return char in self.literal_chars or any(self._in_class(char, items) for items in self.classes)

    def sample(self, sequence: list) -> str:
        """A short text that ``sequence`` matches (or nearly: back-references and assertions give nothing)."""
        return "".join(self._sample_node(op, av) for op, av in sequence)

    def _sample_node(self, op, av) -> str:
        if op is sre.LITERAL:
            return chr(av)
        if op is sre.NOT_LITERAL:
            return next(c for c in POOL if c != chr(av))
        if op is sre.ANY:
            return "a"
        if op is sre.IN:
            return next((c for c in [*self._class_chars(av), *POOL] if self._in_class(c, av)), "a")
        if op in REPEATS:
            return self.sample(list(av[2])) * max(av[0], 1) if av[0] <= 64 else ""
        if op is sre.SUBPATTERN:
            return self.sample(list(av[3]))
        if op is sre.ATOMIC_GROUP:
            return self.sample(list(av))
        if op is sre.BRANCH:
            return self.sample(list(av[1][0]))
        if op is sre.GROUPREF_EXISTS:
            return self.sample(list(av[1]))
        return ""


_CATEGORY_CLASSES = {
    sre.CATEGORY_DIGIT: r"\d", sre.CATEGORY_NOT_DIGIT: r"\D", sre.CATEGORY_SPACE: r"\s",
    sre.CATEGORY_NOT_SPACE: r"\S", sre.CATEGORY_WORD: r"\w", sre.CATEGORY_NOT_WORD: r"\W",
    sre.CATEGORY_LINEBREAK: r"\n", sre.CATEGORY_NOT_LINEBREAK: r"[^\n]",
}
