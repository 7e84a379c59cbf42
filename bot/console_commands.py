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
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from shared.access.rule import CONSOLE, Facts, Policy
from shared.access.service import AccessListing, AccessService
from shared.access.texts import change_text, listing_text
from shared.accounts.user_data import MAX_IMPORT_BYTES
from shared.app.logs import PRIVATE_DIRECTORY_MODE, PRIVATE_FILE_MODE
from shared.commands import texts
from shared.commands.reminder_actions import ACTION_WORDS
from shared.commands.service import Caller, MemoryCommands, confirmation_code
from shared.db.kinds import MEMORY_TYPES
from shared.errors import ConfirmationInvalid, DatabaseUnavailable, InvalidCommand, NotFound
from shared.followups import texts as followup_texts
from shared.reminders import zone_texts
from shared.text import is_chinese, language_of
from shared.usage import texts as usage_texts

YES = {"y", "yes", "是", "好", "确认"}
WORDED_COMMANDS = {"/remember", "/remind", "/memories", "/forget"}
"""Commands whose words are the user's own (not a path, id or code), so they tell the user's language."""
COMMAND_WORDS = frozenset({*MEMORY_TYPES, "why", "forgotten", "restore", "all", *filter(str.isascii, ACTION_WORDS)})
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


class ConsoleCommands:
    """Runs one console command line and returns what to print."""

    def __init__(self, commands: MemoryCommands, caller: Caller, *, ask: Callable[[str], str],
                 export_dir: Path, access: AccessService | None = None) -> None:
        self.commands = commands
        self.caller = caller
        self.access = access or AccessService(commands.uow_factory, Policy())
        self.ask = ask
        self.export_dir = export_dir
        self._listing: tuple[str | None, str | None, int] | None = None

    @property
    def locale(self) -> str | None:
        return self.caller.locale

    def follow(self, text: str) -> None:
        """Answer in the language of ``text`` from now on (a text of neither language keeps the one before)."""
        language = language_of(text, self.caller.locale)
        if language != self.caller.locale and language.chinese != is_chinese(self.caller.locale):
            self.caller = replace(self.caller, locale=language.value)

    def run(self, line: str) -> str:
        """The answer to one ``/command`` line (errors become the user-facing message)."""
        name, _, argument = line.strip().partition(" ")
        if name.lower() in WORDED_COMMANDS:
            self.follow(" ".join(word for word in argument.split() if word.lower() not in COMMAND_WORDS))
        handler = self._handlers().get(name.lower())
        if handler is None:
            return texts.help_text(self.locale)
        try:
            return handler(argument.strip())
        except (NotFound, InvalidCommand, ConfirmationInvalid, DatabaseUnavailable) as exc:
            return texts.error_text(exc, self.locale)

    def _handlers(self) -> dict[str, Callable[[str], str]]:
        c, caller, locale = self.commands, self.caller, self.locale
        return {
            "/help": lambda _arg: texts.help_text(locale),
            "/memories": self._memories,
            "/more": self._more,
            "/forget": self._forget,
            "/remember": lambda arg: texts.remembered_text(c.remember(caller, arg), locale),
            "/reminders": lambda _arg: texts.reminders_text(c.list_reminders(caller), locale),
            "/remind": lambda arg: texts.reminder_change_text(c.remind(caller, arg), locale),
            **{f"/{action}": self._reminder_command(action) for action in ("cancel", "done", "snooze")},
            "/export": self._export,
            "/import": self._import,
            "/pause": lambda _arg: (c.pause(caller), texts.paused_text(True, locale))[1],
            "/resume": lambda _arg: (c.resume(caller), texts.paused_text(False, locale))[1],
            "/link": self._link,
            "/unlink": lambda _arg: (c.unlink(caller), texts.unlinked_text(locale))[1],
            "/panel": lambda _arg: texts.panel_link_text(c.panel_link(caller), locale),
            "/usage": lambda _arg: usage_texts.user_usage_text(c.usage(caller), locale),
            "/timezone": lambda arg: zone_texts.zone_text(c.timezone(caller, arg), locale, c.clock()),
            "/followups": lambda arg: followup_texts.settings_text(c.followups(caller, arg), locale),
            "/access": self._access,
        }

    def _access(self, argument: str) -> str:
        result = self.access.run(Facts(CONSOLE, self.caller.platform_user_id), argument)
        if isinstance(result, AccessListing):
            return listing_text(result, self.locale)
        return change_text(result, self.locale)

    def _memories(self, argument: str) -> str:
        words = argument.split()
        if words[:1] == ["why"]:
            return texts.origin_text(self.commands.why(self.caller, " ".join(words[1:])), self.locale, None)
        if words[:1] == ["forgotten"]:
            page = int(words[1]) if len(words) > 1 and words[1].isdigit() else 1
            return texts.memory_page_text(self.commands.forgotten_memories(self.caller, page=page), self.locale)
        if words[:1] == ["restore"]:
            return texts.restored_text(self.commands.restore(self.caller, " ".join(words[1:])), self.locale)
        type_ = words.pop(0) if words and words[0] in MEMORY_TYPES else None
        self._listing = (type_, " ".join(words) or None, 1)
        return self._page()

    def _more(self, _argument: str) -> str:
        if self._listing is None:
            return self._memories("")
        type_, search, page = self._listing
        self._listing = (type_, search, page + 1)
        return self._page()

    def _page(self) -> str:
        type_, search, page = self._listing
        result = self.commands.list_memories(self.caller, type_=type_, search=search, page=page)
        self._listing = (type_, search, result.page)
        return texts.memory_page_text(result, self.locale)

    def _forget(self, target: str) -> str:
        confirmation = self.commands.request_forget(self.caller, target)
        answer = self.ask(f"{texts.confirmation_text(confirmation, self.locale, typed=True)}\n[y/n] ").strip().lower()
        if answer in YES:
            return texts.forgotten_text(self.commands.confirm(self.caller, confirmation.token), self.locale)
        self.commands.cancel(self.caller, confirmation.token)
        return texts.cancelled_text(self.locale)

    def _reminder_command(self, action: str) -> Callable[[str], str]:
        """``/cancel <id>``, ``/done <id>``, ``/snooze <id> [minutes]``."""
        return lambda arg: texts.reminder_change_text(
            self.commands.reminder_command(self.caller, action, arg), self.locale)

    def _export(self, argument: str) -> str:
        export = self.commands.export_data(self.caller)
        if argument:
            path = write_private(Path(argument).expanduser(), export.data, replace=True)
        else:  # Mnemo's own directory of exports: its owner's alone, whatever mode an older version left
            self.export_dir.mkdir(mode=PRIVATE_DIRECTORY_MODE, parents=True, exist_ok=True)
            self.export_dir.chmod(PRIVATE_DIRECTORY_MODE)
            path = write_private(self.export_dir / export_name(self.caller, self.commands.clock()), export.data)
        memories = json.loads(export.data).get("memories", [])
        return texts.exported_text(len(memories), path, self.locale)

    def _import(self, argument: str) -> str:
        """``/import <file>``: a path as typed or pasted (quotes around it are dropped), a relative one from the
        directory the console was started in."""
        named = argument.strip().strip("'\"")
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

    def _link(self, code: str) -> str:
        if code.lower() == UNLINK_WORD:  # what /help and the link texts say: "/link unlink separates"
            self.commands.unlink(self.caller)
            return texts.unlinked_text(self.locale)
        if (confirming := confirmation_code(code)) is not None:
            return texts.linked_text(self.commands.confirm_link(self.caller, confirming), self.locale)
        if code:
            return texts.link_request_text(self.commands.link(self.caller, code), self.locale)
        return texts.link_code_text(self.commands.link_code(self.caller), self.locale)
