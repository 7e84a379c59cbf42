"""No regular expression of Mnemo's can be made slow by what a user types.

Every compiled pattern that ``shared/`` and ``bot/`` keep at module level (alone, in tuples, lists, sets and
dicts, or in attributes of their classes and of the rules they build) is found by importing every module, so
a new pattern is checked without anyone listing it. Each is searched on adversarial texts of
``ADVERSARIAL_CHARS`` built from its own alphabet (:mod:`tests.regex_adversary`); a call that takes more
than ``PATTERN_SECONDS`` of CPU fails the test. A pattern written inline in a function
(``re.sub(r"…", …)``) would escape that, so none may be (the last tests scan the source).

The public text functions that apply these patterns (redaction, speech rules, time parsing, statements,
commands) get the same texts, with a budget for the whole call.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import islice, zip_longest
from pathlib import Path
from types import ModuleType

import pytest

import bot
import shared
from shared.errors import MnemoError
from tests.cpu_time import ABANDON_SECONDS, cpu_seconds
from tests.regex_adversary import Adversary, adversaries, as_input

ADVERSARIAL_CHARS = 100_000
PATTERN_SECONDS = 0.150
"""CPU time a single search or findall may take on an adversarial text. A linear pattern takes 10-60 ms here (a
word alternation on 100k characters took 57 ms on a loaded 2-core VM); a quadratic one takes seconds."""
ENTRY_POINT_SECONDS = 0.5
"""CPU time a public text function may take: it applies tens of patterns, each linear."""
ENTRY_POINT_INPUTS = 24
OPTIONAL_DEPENDENCIES = frozenset({"torch", "sentence_transformers", "matplotlib"})
"""Modules that need these (the local embedder, plots) are skipped when they are not installed."""
RE_FUNCTIONS = frozenset({"compile", "search", "match", "fullmatch", "sub", "subn", "findall", "finditer", "split"})
SOURCE_ROOTS = (Path(shared.__file__).parent, Path(bot.__file__).parent)


@dataclass(frozen=True)
class Found:
    """A pattern and where it lives: ``module`` and the dotted path inside it (``RULES[3].pattern``)."""

    module: str
    name: str
    pattern: re.Pattern

    def __str__(self) -> str:
        return f"{self.module}.{self.name}"


def project_modules() -> Iterator[ModuleType]:
    for package in (shared, bot):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            try:
                yield importlib.import_module(info.name)
            except ModuleNotFoundError as missing:
                if (missing.name or "").split(".")[0] not in OPTIONAL_DEPENDENCIES:
                    raise


def patterns_in(value: object, name: str, depth: int = 0) -> Iterator[tuple[str, re.Pattern]]:
    """Patterns inside ``value``: itself, its items, or (for the project's own classes and objects) its
    attributes, three levels down."""
    if isinstance(value, re.Pattern):
        yield name, value
    elif depth >= 3 or isinstance(value, str | bytes):
        return
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from patterns_in(item, f"{name}[{key!r}]", depth + 1)
    elif isinstance(value, tuple | list | set | frozenset):
        for index, item in enumerate(value):
            yield from patterns_in(item, f"{name}[{index}]", depth + 1)
    elif _ours(value if isinstance(value, type) else type(value)):
        attributes = vars(value) if hasattr(value, "__dict__") else {
            slot: getattr(value, slot) for slot in getattr(type(value), "__slots__", ()) if hasattr(value, slot)}
        for attribute, item in attributes.items():
            yield from patterns_in(item, f"{name}.{attribute}", depth + 1)


def _ours(kind: type) -> bool:
    return kind.__module__.split(".")[0] in ("shared", "bot")


def discovered() -> list[Found]:
    """Every distinct pattern (source and flags), at the first place it was found."""
    found: dict[tuple, Found] = {}
    for module in project_modules():
        for name, value in vars(module).items():
            if isinstance(value, type) and value.__module__ != module.__name__:
                continue
            for path, pattern in patterns_in(value, name):
                found.setdefault((pattern.pattern, pattern.flags), Found(module.__name__, path, pattern))
    return list(found.values())


PATTERNS = discovered()


def slow_calls(calls: dict[str, Callable[[str], object]], inputs: list[Adversary], budget: float,
               convert: Callable[[str], object] = str) -> list[str]:
    """Each (call, input) over ``budget``, described; a call is not tried again after its first failure."""
    failures: list[str] = []
    for label, call in calls.items():
        for adversary in inputs:
            text = convert(adversary.text(ADVERSARIAL_CHARS))
            took = cpu_seconds(lambda call=call, text=text: call(text), budget, abandon=ABANDON_SECONDS)
            if took > budget:
                shown = "over a second (abandoned)" if took == float("inf") else f"{took * 1000:.0f} ms"
                failures.append(f"{label} took {shown} on {adversary.shape}")
                break
    return failures


def test_discovery_finds_the_patterns_of_every_room_and_those_built_into_rules():
    places = {str(found) for found in PATTERNS}
    assert len(PATTERNS) > 150
    assert {"shared.redaction._USERINFO", "shared.speech.rules.RULES[0].pattern",
            "shared.search.temporal._PATTERNS[0][1]", "bot.telegram_access.COMMAND"} <= places
    assert any(place.startswith("shared.reminders.timeparse.") for place in places)


def test_the_adversaries_of_a_pattern_come_from_its_alphabet_and_end_outside_it():
    shapes = {(a.unit, a.end) for a in adversaries(re.compile(r"://[^@/\s]*:(?P<password>[^@]+)@"))}
    assert ("://", "\x00") in shapes
    assert ("/", "\x00") in shapes
    assert (":", "\x00") in shapes
    assert any(unit.startswith("://") and len(unit) > 3 for unit, _ in shapes), "the prefix before a repetition"


def test_a_pattern_that_backtracks_on_its_own_alphabet_is_caught():
    quadratic = re.compile(r"[\w.+-]+@[\w-]+\.com")
    exponential = re.compile(r"(?:\w+\s?)+$")
    searches = {"search": quadratic.search, "exponential": exponential.search}
    failures = slow_calls(searches, adversaries(quadratic) + adversaries(exponential), PATTERN_SECONDS)
    assert [failure.split()[0] for failure in failures] == ["search", "exponential"]


@pytest.mark.parametrize("found", PATTERNS, ids=str)
def test_no_pattern_takes_more_than_150_ms_on_100k_characters_of_its_own_alphabet(found: Found):
    pattern = found.pattern
    calls = {"search": pattern.search, "findall": pattern.findall}
    failures = slow_calls(calls, adversaries(pattern), PATTERN_SECONDS, lambda text: as_input(pattern, text))
    assert not failures, f"{found} /{pattern.pattern}/: " + "; ".join(failures)


NOW = datetime(2026, 11, 22, 2, 0, tzinfo=UTC)


def entry_points() -> dict[str, tuple[Callable[[str], object], tuple[str, ...]]]:
    """Public text functions, and the modules whose patterns make their inputs."""
    from shared.commands import reminder_actions, service
    from shared.conversation import echo, offline
    from shared.redaction import mask_url, redact
    from shared.reminders import timeparse
    from shared.search import temporal
    from shared.search.tokenizer import keywords
    from shared.speech import acts, statements
    from shared.speech.non_answers import non_answer

    speech = ("shared.speech.rules", "shared.speech.statements", "shared.speech.acts", "shared.speech.lexicon")
    return {
        "redact": (lambda text: redact(text, ["hunter2-hunter2"]), ("shared.redaction",)),
        "mask_url": (mask_url, ("shared.redaction",)),
        "read_statements": (statements.read_statements, speech),
        "lookup_keys": (offline.lookup_keys, (*speech, "shared.speech.recall_questions")),
        "detect_feeling": (offline.detect_feeling, ("shared.emotion",)),
        "sentences": (acts.sentences, ("shared.speech.acts",)),
        "non_answer (the reply)": (lambda text: non_answer(text, "How many cats do I have?"),
                                   ("shared.speech.non_answers",)),
        "non_answer (the message)": (lambda text: non_answer("yes", text),
                                     ("shared.speech.non_answers", "shared.speech.acts")),
        "second_person": (echo.second_person, ("shared.conversation.echo",)),
        "resolve_when": (lambda text: timeparse.resolve_when(text, NOW, "Asia/Shanghai"),
                         ("shared.reminders.timeparse",)),
        "extract_reminders": (lambda text: offline.extract_reminders(text, NOW, "UTC"),
                              ("shared.reminders.timeparse", "shared.conversation.offline")),
        "asked_span": (lambda text: temporal.asked_span(text, NOW), ("shared.search.temporal",)),
        "keywords": (keywords, ("shared.search.tokenizer",)),
        "forget_target": (_refusal_allowed(service.forget_target), ("shared.commands.service",)),
        "reminder_action": (reminder_actions.reminder_action, ("shared.commands.reminder_actions",)),
    }


def _refusal_allowed(call: Callable[[str], object]) -> Callable[[str], object]:
    def refused_or_answered(text: str) -> object:
        try:
            return call(text)
        except MnemoError as refusal:  # InvalidCommand: too long, say
            return refusal
    return refused_or_answered


def entry_point_inputs(modules: tuple[str, ...]) -> list[Adversary]:
    """The adversaries of the modules' patterns, a few of each pattern in turn, at most ``ENTRY_POINT_INPUTS``."""
    per_pattern = [adversaries(found.pattern) for found in PATTERNS
                   if found.module in modules and isinstance(found.pattern.pattern, str)]
    interleaved = (a for group in zip_longest(*per_pattern) for a in group if a is not None)
    return list(islice(dict.fromkeys(interleaved), ENTRY_POINT_INPUTS))


@pytest.mark.parametrize("name", sorted(entry_points()))
def test_no_public_text_function_takes_more_than_half_a_second_on_100k_adversarial_characters(name: str):
    call, modules = entry_points()[name]
    inputs = entry_point_inputs(modules)
    assert inputs, f"no patterns found in {modules}"
    call("热身 a warm-up")  # one-time loads (jieba's dictionary: about a second) are not the input's cost
    failures = slow_calls({name: call}, inputs, ENTRY_POINT_SECONDS)
    assert not failures, "; ".join(failures)


def literal_pattern_calls(tree: ast.AST) -> list[int]:
    """Lines of ``re.<function>(<literal>, …)`` calls inside functions, and of any other than ``re.compile``
    outside them: patterns that module-level discovery cannot see."""
    lines: list[int] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.Call) and _literal_re_call(node) and (in_function or node.func.attr != "compile"):
            lines.append(node.lineno)
        inside = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        for child in ast.iter_child_nodes(node):
            visit(child, inside)

    visit(tree, False)
    return lines


def _literal_re_call(node: ast.Call) -> bool:
    func = node.func
    return (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "re"
            and func.attr in RE_FUNCTIONS and bool(node.args)
            and isinstance(node.args[0], ast.Constant | ast.JoinedStr))


SOURCES = sorted(path for root in SOURCE_ROOTS for path in root.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: str(path.relative_to(SOURCE_ROOTS[0].parent)))
def test_no_module_writes_a_pattern_inline_where_discovery_cannot_see_it(path: Path):
    lines = literal_pattern_calls(ast.parse(path.read_text(encoding="utf-8")))
    assert not lines, f"{path.name}: literal patterns at lines {lines}; make each a module-level re.compile constant"


def test_the_source_scan_catches_inline_patterns_and_allows_module_constants():
    source = ('import re\nWORD = re.compile(r"\\w+")\nre.sub(r"a", "b", "c")\n\n'
              'def f(text):\n    return re.search(r"x+y", text) or re.compile(f"{text}z") or WORD.search(text)\n')
    assert literal_pattern_calls(ast.parse(source)) == [3, 6, 6]
