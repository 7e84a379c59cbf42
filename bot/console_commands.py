"""The console's slash commands: the same memory-command service and texts the bots use.

``/memories [type] [search]`` (then ``/more``), ``/memories why <id>``, ``/memories forgotten``,
``/memories restore <id>``, ``/forget <id|search|all>``
(asks yes/no), ``/remember``, ``/reminders``, ``/remind <when> <what>`` (or ``cancel|done|snooze <id>``),
``/cancel|/done <id>``, ``/snooze <id> [minutes]``, ``/export [file]``, ``/import <file>``, ``/pause``, ``/resume``,
``/link [code]``, ``/link confirm <code>``, ``/link unlink`` (or ``/unlink``), ``/panel``, ``/usage``,
``/timezone [zone]``, ``/followups [on|off|list|quiet 22-9]``, ``/help``; and ``/access`` (the console is the
local operator: it may read and change who the bots answer).

Their texts follow the user's language as on the bots: the language of what the user last wrote (a
message, or a command's words), at the start the one stored for them, and only before that the terminal's.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from shared.access.rule import CONSOLE, Facts, Policy
from shared.access.service import AccessListing, AccessService
from shared.access.texts import change_text, listing_text
from shared.accounts.user_data import MAX_IMPORT_BYTES
from shared.app.logs import PRIVATE_DIRECTORY_MODE, PRIVATE_FILE_MODE
from shared.commands import table, texts
from shared.commands.reminder_actions import ACTION_WORDS
from shared.commands.service import Caller, MemoryCommands, confirmation_code
from shared.commands.table import Frontend, Reading
from shared.db.kinds import MEMORY_TYPES
from shared.errors import ConfirmationInvalid, DatabaseUnavailable, InvalidCommand, NotFound
from shared.followups import texts as followup_texts
from shared.reminders import zone_texts
from shared.text import is_chinese, language_of
from shared.usage import texts as usage_texts

YES = {"y", "yes", "是", "好", "确认"}
WORDED_HEADS = frozenset(command.head for command in table.commands_on(Frontend.CONSOLE) if command.worded)
"""Commands whose words are the user's own (not a path, id or code), so they tell the user's language."""
COMMAND_WORDS = frozenset({*MEMORY_TYPES, *(command.sub_word for command in table.COMMANDS if command.sub_word),
                           "all", *filter(str.isascii, ACTION_WORDS)})
"""Words of a command's own syntax (``/memories person``, ``/forget all``, ``/remind done 4``): English
whatever the user's language, so they never tell it."""
UNLINK_WORD = "unlink"
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]")
MAX_NAME_CHARS = 40


def export_name(caller: Caller, now: datetime) -> str:
    """``mnemo-export-<user>-<UTC time>.json``: one file per console user and moment, so two users (or two
    exports) never write over each other. The user part is the name made safe, and a hash of it exact."""
    user = caller.platform_user_id
    safe = _UNSAFE_NAME.sub("_", user)[:MAX_NAME_CHARS] or "user"
    exact = hashlib.sha256(user.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"mnemo-export-{safe}-{exact}-{now.astimezone(UTC):%Y%m%dT%H%M%S%fZ}.json"


def write_private(path: Path, data: bytes, *, replace: bool = False) -> Path:
    """Write a person's data to a file only its owner can read (0600; a directory made for it 0700). Without
    ``replace`` an existing file is never written over (``-1``, ``-2``… is added to the name)."""
    path.parent.mkdir(mode=PRIVATE_DIRECTORY_MODE, parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if replace else os.O_EXCL)
    candidate = path
    for attempt in itertools.count(1):
        try:
            fd = os.open(candidate, flags, PRIVATE_FILE_MODE)
            break
        except FileExistsError:
            candidate = path.with_name(f"{path.stem}-{attempt}{path.suffix}")
    with os.fdopen(fd, "wb") as file:
        os.fchmod(file.fileno(), PRIVATE_FILE_MODE)  # an existing file named on purpose keeps no wider mode
        file.write(data)
    return candidate


@dataclass(frozen=True)
class Listing:
    """The ``/memories`` listing ``/more`` turns: its type, its search and the page shown last."""

    type_: str | None
    search: str | None
    page: int


class ConsoleCommands:
    """Runs one console command line and returns what to print."""

    def __init__(self, commands: MemoryCommands, caller: Caller, *, ask: Callable[[str], str],
                 export_dir: Path, access: AccessService | None = None) -> None:
        self.commands = commands
        self.caller = caller
        self.access = access or AccessService(commands.uow_factory, Policy())
        self.ask = ask
        self.export_dir = export_dir
        self._listing: Listing | None = None
        self._handlers = self._handler_table()

    @property
    def locale(self) -> str | None:
        return self.caller.locale

    def follow(self, text: str) -> None:
        """Answer in the language of ``text`` from now on (a text of neither language keeps the one before)."""
        language = language_of(text, self.caller.locale)
        if language != self.caller.locale and language.chinese != is_chinese(self.caller.locale):
            self.caller = replace(self.caller, locale=language.value)

    def run(self, line: str) -> str:
        """The answer to one ``/command`` line (errors become the user-facing message; an unknown command gets
        ``/help``)."""
        name, _, argument = line.strip().partition(" ")
        head = name.removeprefix("/").lower()
        if head in WORDED_HEADS:
            self.follow(" ".join(word for word in argument.split() if word.lower() not in COMMAND_WORDS))
        try:
            reading = table.read(head, argument, Frontend.CONSOLE)
            if reading is None:
                return texts.help_text(self.locale)
            return self._handlers[reading.command.name](reading)
        except (NotFound, InvalidCommand, ConfirmationInvalid, DatabaseUnavailable) as exc:
            return texts.error_text(exc, self.locale)

    def _handler_table(self) -> dict[str, Callable[[Reading], str]]:
        """One handler per console command of :mod:`shared.commands.table`, by name."""
        c = self.commands
        handlers: dict[str, Callable[[Reading], str]] = {
            "help": lambda _r: texts.help_text(self.locale),
            "memories": self._memories,
            "memories_why": lambda r: texts.origin_text(c.why(self.caller, r.named_memory()), self.locale, None),
            "memories_forgotten": lambda r: texts.memory_page_text(
                c.forgotten_memories(self.caller, page=r.page), self.locale),
            "memories_restore": lambda r: texts.restored_text(c.restore(self.caller, r.named_memory()), self.locale),
            "more": self._more,
            "forget": self._forget,
            "remember": lambda r: texts.remembered_text(c.remember(self.caller, r.words), self.locale),
            "reminders": lambda _r: texts.reminders_text(c.list_reminders(self.caller), self.locale),
            "remind": lambda r: texts.reminder_change_text(c.remind(self.caller, r.words), self.locale),
            **{action: self._reminder_command(action) for action in ("cancel", "done", "snooze")},
            "export": self._export,
            "import": self._import,
            "pause": self._pause,
            "resume": self._resume,
            "link": self._link,
            "unlink": self._unlink,
            "panel": lambda _r: texts.panel_link_text(c.panel_link(self.caller), self.locale),
            "usage": lambda _r: usage_texts.user_usage_text(c.usage(self.caller), self.locale),
            "timezone": lambda r: zone_texts.zone_text(c.timezone(self.caller, r.words), self.locale, c.clock()),
            "followups": lambda r: followup_texts.settings_text(c.followups(self.caller, r.words), self.locale),
            "access": self._access,
        }
        return dict(table.bind(Frontend.CONSOLE, handlers, by_name=True))

    def _pause(self, _reading: Reading) -> str:
        self.commands.pause(self.caller)
        return texts.paused_text(True, self.locale)

    def _resume(self, _reading: Reading) -> str:
        self.commands.resume(self.caller)
        return texts.paused_text(False, self.locale)

    def _unlink(self, _reading: Reading) -> str:
        self.commands.unlink(self.caller)
        return texts.unlinked_text(self.locale)

    def _access(self, reading: Reading) -> str:
        result = self.access.run(Facts(CONSOLE, self.caller.platform_user_id), reading.words)
        if isinstance(result, AccessListing):
            return listing_text(result, self.locale)
        return change_text(result, self.locale)

    def _memories(self, reading: Reading) -> str:
        """``/memories [type] [search]``: the first page; ``/more`` turns it."""
        self._listing = Listing(reading.memory_type, reading.words or None, 1)
        return self._page(self._listing)

    def _more(self, _reading: Reading) -> str:
        if self._listing is None:
            return self._page(Listing(None, None, 1))
        return self._page(replace(self._listing, page=self._listing.page + 1))

    def _page(self, listing: Listing) -> str:
        result = self.commands.list_memories(self.caller, type_=listing.type_, search=listing.search,
                                             page=listing.page)
        self._listing = replace(listing, page=result.page)
        return texts.memory_page_text(result, self.locale)

    def _forget(self, reading: Reading) -> str:
        confirmation = self.commands.request_forget(self.caller, reading.words)
        answer = self.ask(f"{texts.confirmation_text(confirmation, self.locale, typed=True)}\n[y/n] ").strip().lower()
        if answer in YES:
            return texts.forgotten_text(self.commands.confirm(self.caller, confirmation.token), self.locale)
        self.commands.cancel(self.caller, confirmation.token)
        return texts.cancelled_text(self.locale)

    def _reminder_command(self, action: str) -> Callable[[Reading], str]:
        """``/cancel <id>``, ``/done <id>``, ``/snooze <id> [minutes]``."""
        return lambda reading: texts.reminder_change_text(
            self.commands.reminder_command(self.caller, action, reading.words), self.locale)

    def _export(self, reading: Reading) -> str:
        export = self.commands.export_data(self.caller)
        if reading.words:
            path = write_private(Path(reading.words).expanduser(), export.data, replace=True)
        else:  # Mnemo's own directory of exports: its owner's alone, whatever mode an older version left
            self.export_dir.mkdir(mode=PRIVATE_DIRECTORY_MODE, parents=True, exist_ok=True)
            self.export_dir.chmod(PRIVATE_DIRECTORY_MODE)
            path = write_private(self.export_dir / export_name(self.caller, self.commands.clock()), export.data)
        memories = json.loads(export.data).get("memories", [])
        return texts.exported_text(len(memories), path, self.locale)

    def _import(self, reading: Reading) -> str:
        """``/import <file>``: a path as typed or pasted (quotes around it are dropped), a relative one from the
        directory the console was started in."""
        named = reading.words.strip().strip("'\"")
        if not named:
            raise InvalidCommand("import_no_path", cwd=Path.cwd())
        path = Path.cwd() / Path(named).expanduser()
        if not path.is_file():
            raise InvalidCommand("import_not_found", path=path, cwd=Path.cwd())
        try:
            if path.stat().st_size > MAX_IMPORT_BYTES:
                raise InvalidCommand("import_too_large", limit_mb=MAX_IMPORT_BYTES // (1024 * 1024))
            data = path.read_bytes()
        except OSError as exc:  # there, but not for us to read
            raise InvalidCommand("import_unreadable", path=path, reason=exc.strerror or exc) from exc
        return texts.import_report_text(self.commands.import_data(self.caller, data), self.locale)

    def _link(self, reading: Reading) -> str:
        code = reading.words
        if code.lower() == UNLINK_WORD:  # what /help and the link texts say: "/link unlink separates"
            self.commands.unlink(self.caller)
            return texts.unlinked_text(self.locale)
        if (confirming := confirmation_code(code)) is not None:
            return texts.linked_text(self.commands.confirm_link(self.caller, confirming), self.locale)
        if code:
            return texts.link_request_text(self.commands.link(self.caller, code), self.locale)
        return texts.link_code_text(self.commands.link_code(self.caller), self.locale)
