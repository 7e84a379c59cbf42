"""Every command of Mnemo, once: its name, where it is offered, its arguments and how their words read.

Discord registers its slash commands from this table, Telegram its handlers and command menu, the console its
dispatch, and ``/help`` lists it (:data:`shared.commands.texts.COMMANDS`), so a new command is added here and
each front-end refuses to start without a handler for it. The console and Telegram read a typed line with
:func:`read`, so ``/memories 偏好`` means the same on both: the memories of that type (a word that names no type
is searched for). Pure: no database, platform or service code.

A command Discord offers as its own slash command is typed on the text front-ends as a word after another one
(``/memories_why 12`` on Discord is ``/memories why 12``): :attr:`Command.typed`. What the service reads itself
(a reminder's time, ``cancel 4``, ``/followups quiet 22-9``, ``/forget all``) is handed on as the words typed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

from shared.db.kinds import MEMORY_TYPES
from shared.errors import InvalidCommand

T = TypeVar("T")


class Frontend(StrEnum):
    """Where a user types commands."""

    CONSOLE = "console"
    TELEGRAM = "telegram"
    DISCORD = "discord"


EVERYWHERE = frozenset(Frontend)


class Kind(StrEnum):
    """How an argument's words read."""

    TYPE = "type"
    """A memory type, in English or Chinese (``preference``, ``偏好``): optional, the first word when it names one."""
    MEMORY_ID = "memory_id"
    """A memory's number as its list shows it (``12``, ``#12``)."""
    PAGE = "page"
    """A page number from 1; 1 when not given."""
    WORDS = "words"
    """Words the service reads (a search, a text to remember, a time and what to remind of, a code, a zone…)."""
    NUMBER = "number"
    """A whole number (a reminder's number, minutes): a typed option on Discord, words on the text front-ends."""
    FILE = "file"
    """An attached file (an export to import)."""


TYPE_WORDS: dict[str, str] = {
    **{name: name for name in MEMORY_TYPES},
    "偏好": "preference", "喜好": "preference", "事实": "fact", "事件": "event", "人物": "person",
    "待办": "todo", "习惯": "pattern", "模式": "pattern", "规则": "rule",
}
"""The words that name a memory type, English and Chinese."""
ALL_WORDS = frozenset({"all", "everything", "全部", "所有", "全部记忆", "所有记忆"})
"""``/forget all``: every memory and everything else learnt from the user."""
REMINDER_WORDS = frozenset({"reminders", "and reminders", "with reminders", "+reminders", "提醒", "和提醒", "及提醒",
                            "包括提醒", "连同提醒"})
"""``/forget all reminders`` (``/forget 全部 提醒``): forget everything, the reminders too."""
TYPED_ID = re.compile(r"(?<![#\s])#?\s*-?\d{1,30}")
"""A memory's or reminder's number as typed (``12``, ``#12``, ``# -3``; the service says whether there is one);
never starting inside a run of spaces, so a search is linear."""
_PAGE = re.compile(r"\d{1,30}")


@dataclass(frozen=True)
class Argument:
    """One argument: its name (Discord's option), how its words read, whether it must be given, and whether the
    text front-ends take it from the typed line (Discord alone pages ``/memories`` by number)."""

    name: str
    kind: Kind
    required: bool = False
    typed: bool = True


@dataclass(frozen=True)
class Command:
    """One command. ``name`` is its Discord slash command and the key of its description; ``typed`` how the
    text front-ends spell it when that is not ``/<name>``."""

    name: str
    arguments: tuple[Argument, ...] = ()
    typed: str = ""
    on: frozenset[Frontend] = EVERYWHERE
    menu: bool = True
    """Listed by ``/help`` and in the platforms' command menus."""
    worded: bool = False
    """Its words are the user's own, so they tell the user's language (the console follows it)."""

    @property
    def head(self) -> str:
        """The word after ``/`` on the text front-ends (``memories`` for ``/memories why``)."""
        return (self.typed or self.name).split()[0]

    @property
    def sub_word(self) -> str | None:
        """The word after the head that selects this command (``why``), or None."""
        words = (self.typed or self.name).split()
        return words[1] if len(words) > 1 else None


def _memory_id(name: str = "memory_id") -> Argument:
    return Argument(name, Kind.MEMORY_ID, required=True)


COMMANDS: tuple[Command, ...] = (
    Command("memories", (Argument("type", Kind.TYPE), Argument("search", Kind.WORDS),
                         Argument("page", Kind.PAGE, typed=False)), worded=True),
    Command("forget", (Argument("target", Kind.WORDS, required=True),), worded=True),
    Command("remember", (Argument("text", Kind.WORDS, required=True),), worded=True),
    Command("reminders"),
    Command("remind", (Argument("when", Kind.WORDS, required=True), Argument("what", Kind.WORDS, required=True)),
            worded=True),
    Command("done", (Argument("reminder_id", Kind.NUMBER, required=True),)),
    Command("snooze", (Argument("reminder_id", Kind.NUMBER, required=True), Argument("minutes", Kind.NUMBER))),
    Command("cancel", (Argument("reminder_id", Kind.NUMBER, required=True),)),
    Command("timezone", (Argument("zone", Kind.WORDS),)),
    Command("followups", (Argument("action", Kind.WORDS),)),
    Command("export", (Argument("path", Kind.WORDS),), on=frozenset({Frontend.CONSOLE})),
    Command("export", on=frozenset({Frontend.TELEGRAM, Frontend.DISCORD})),
    Command("import", (Argument("path", Kind.WORDS, required=True),), on=frozenset({Frontend.CONSOLE})),
    Command("import", (Argument("file", Kind.FILE, required=True),), on=frozenset({Frontend.TELEGRAM,
                                                                                   Frontend.DISCORD})),
    Command("pause"),
    Command("resume"),
    Command("link", (Argument("code", Kind.WORDS),)),
    Command("panel"),
    Command("usage"),
    Command("help"),
    Command("memories_why", (_memory_id(),), typed="memories why", menu=False),
    Command("memories_forgotten", (Argument("page", Kind.PAGE),), typed="memories forgotten", menu=False),
    Command("memories_restore", (_memory_id(),), typed="memories restore", menu=False),
    Command("unlink", menu=False),
    Command("access", (Argument("action", Kind.WORDS), Argument("kind", Kind.WORDS), Argument("target", Kind.WORDS)),
            menu=False),
    Command("more", on=frozenset({Frontend.CONSOLE}), menu=False),
    Command("start", on=frozenset({Frontend.TELEGRAM}), menu=False),
)
"""Every command; the ones in the menu in the order ``/help`` lists them."""


@dataclass(frozen=True)
class Reading:
    """A typed line read against the table: which command, and its arguments. ``words`` is what is left for the
    service to read, as typed (line breaks kept)."""

    command: Command
    words: str = ""
    memory_type: str | None = None
    memory_id: int | None = None
    page: int = 1

    def named_memory(self) -> int:
        """The memory's number a command such as ``/memories why 12`` names (:class:`InvalidCommand` without)."""
        if self.memory_id is None:
            raise InvalidCommand("bad_id")
        return self.memory_id


def commands_on(frontend: Frontend) -> tuple[Command, ...]:
    """The commands offered on ``frontend``, in the table's order."""
    return tuple(command for command in COMMANDS if frontend in command.on)


def menu(frontend: Frontend = Frontend.TELEGRAM) -> tuple[Command, ...]:
    """The commands ``/help`` and the command menus list."""
    return tuple(command for command in commands_on(frontend) if command.menu)


def names(frontend: Frontend) -> tuple[str, ...]:
    """The names of the commands offered on ``frontend`` (``memories_why`` too, typed ``/memories why`` there)."""
    return tuple(dict.fromkeys(command.name for command in commands_on(frontend)))


def heads(frontend: Frontend) -> tuple[str, ...]:
    """The words after ``/`` that ``frontend`` answers (on Discord, its slash commands: the names)."""
    if frontend is Frontend.DISCORD:
        return names(frontend)
    return tuple(dict.fromkeys(command.head for command in commands_on(frontend)))


def bind(frontend: Frontend, handlers: Mapping[str, T], *, by_name: bool = False) -> list[tuple[str, T]]:
    """``handlers``, one per head (:func:`heads`) or, ``by_name``, per command (:func:`names`), in the table's
    order; ValueError naming those without a handler or not in the table, so a front-end cannot start out of step
    with it."""
    wanted = names(frontend) if by_name else heads(frontend)
    missing, extra = set(wanted) - set(handlers), set(handlers) - set(wanted)
    if missing or extra:
        raise ValueError(f"{frontend} commands out of step with the table: without a handler {sorted(missing)}, "
                         f"not in the table {sorted(extra)}")
    return [(name, handlers[name]) for name in wanted]


def memory_type(word: str) -> str | None:
    """The memory type a word names ("preference", "偏好"), or None."""
    return TYPE_WORDS.get(word.strip().lower())


def read(head: str, typed: str, frontend: Frontend) -> Reading | None:
    """What ``/<head> <typed>`` asks for on a text front-end, or None when it offers no such command;
    :class:`InvalidCommand` when an argument's words cannot be what the command takes."""
    family = [command for command in commands_on(frontend) if command.head == head.lower()]
    if not family:
        return None
    first, rest = _first_word(typed)
    for command in family:
        if command.sub_word is not None and first.lower() == command.sub_word:
            return _read_arguments(command, rest)
    plain = next((command for command in family if command.sub_word is None), None)
    return None if plain is None else _read_arguments(plain, typed.strip())


def _read_arguments(command: Command, typed: str) -> Reading:
    """The arguments of ``command`` that the text front-ends read from the line, in order; the words left go
    to the service."""
    kind, memory_id, page = None, None, 1
    for argument in command.arguments:
        if not argument.typed:
            continue
        if argument.kind is Kind.TYPE:
            first, rest = _first_word(typed)
            if (kind := memory_type(first)) is not None:
                typed = rest
        elif argument.kind is Kind.MEMORY_ID:
            memory_id, typed = read_memory_id(typed), ""
        elif argument.kind is Kind.PAGE:
            page, typed = read_page(typed), ""
    return Reading(command, typed, memory_type=kind, memory_id=memory_id, page=page)


def _first_word(typed: str) -> tuple[str, str]:
    """The first word and the rest (its line breaks kept), both without surrounding space."""
    words = typed.strip().split(maxsplit=1)
    return (words[0], words[1].strip()) if len(words) > 1 else (words[0] if words else "", "")


def read_memory_id(typed: str) -> int:
    """``12`` or ``#12`` as a number (the service says whether there is such a memory); :class:`InvalidCommand`
    for anything else."""
    if not TYPED_ID.fullmatch(typed.strip()):
        raise InvalidCommand("bad_id")
    return int(typed.strip().lstrip("#").strip())


def read_page(typed: str) -> int:
    """A page number (1 when nothing is typed); :class:`InvalidCommand` for words or zero."""
    if not typed.strip():
        return 1
    if not _PAGE.fullmatch(typed.strip()) or int(typed) < 1:
        raise InvalidCommand("page_not_number")
    return int(typed)
