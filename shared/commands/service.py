"""The memory-command service: what a user can ask of Mnemo on any front-end (DESIGN.md §7).

Discord, Telegram and the console turn a command into a call on :class:`MemoryCommands` and render
the result with :mod:`shared.commands.texts`. Every call identifies the caller and works on that
user's data only; an id of another user's memory or reminder is :class:`NotFound`, exactly like a
missing one. Arguments are checked here, at the boundary: a bad one raises
:class:`InvalidCommand` before anything is changed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from shared.accounts import links as identity_links
from shared.accounts import panel_access, user_data
from shared.accounts.links import Account, LinkCode, LinkRequest, confirmation_code
from shared.accounts.panel_access import PanelLink
from shared.accounts.user_data import ExportFile, ImportReport
from shared.commands import memories as memory_commands
from shared.commands.followups import followup_settings, group_followups
from shared.commands.memories import (
    FORGET_ALL,
    FORGET_ALL_AND_REMINDERS,
    Confirmation,
    MemoryItem,
    MemoryOrigin,
    MemoryPage,
)
from shared.commands.reminder_actions import ACTION_WORDS, ReminderAction, action_of, reminder_action
from shared.commands.table import ALL_WORDS, REMINDER_WORDS, TYPED_ID, memory_type
from shared.db.kinds import CHAT_KINDS, MEMORY_TYPES, PLATFORMS, TodoKind, TodoStatus
from shared.db.memory_models import Todo
from shared.db.models import Chat, Identity
from shared.errors import ConfirmationInvalid, InvalidCommand, NotFound
from shared.followups.texts import FollowupSettings, GroupFollowups
from shared.followups.timing import DEFAULT_QUIET_HOURS
from shared.limits import SharedLimit
from shared.reminders.deadlines import DEFAULT_HEADS_UP, reads_as_deadline, timing, todo_content
from shared.reminders.scheduling import MAX_PENDING_REMINDERS, room_for_reminders
from shared.reminders.timeparse import TimeOutOfRange, resolve_when, storable_later, zone_of, zone_or_default
from shared.reminders.user_zone import UserZone, ZoneChange, set_user_zone, user_zone, zone_notice_owed
from shared.reminders.zones import SeveralZones, read_zone
from shared.repositories.uow import UnitOfWork
from shared.text import is_invisible, without_bidi_controls
from shared.usage.policy import UsagePolicy
from shared.usage.report import UserUsage, user_usage

__all__ = ["MAX_PENDING_REMINDERS", "Account", "Caller", "Confirmation", "ExportFile", "ImportReport", "LinkCode",
           "LinkRequest", "MemoryCommands", "MemoryItem", "MemoryOrigin", "MemoryPage", "PanelLink", "ReminderChange",
           "ReminderItem", "ZoneChange", "confirmation_code"]

MAX_TEXT_CHARS = 500
"""/remember and /remind take at most this many characters."""
MAX_SEARCH_CHARS = 200
MAX_PAGE_SIZE = 50
SNOOZE_MINUTES = range(1, 7 * 24 * 60 + 1)
MAX_ID = 2**63 - 1
PANEL_LINK_LIFETIME = timedelta(minutes=10)
_FORBIDDEN_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_LOCALE = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8}){0,2}")
_REMINDER_FILLER = " \t\r\n,，、:：;；.。!！-—"
DEFAULT_ZONE_WORDS = frozenset({"default", "reset", "clear", "默认", "恢复默认", "重置", "清除"})
"""``/timezone default``: back to the operator's zone."""
IDS_SHOWN = 5
"""A reminder command without a usable id names at most this many of the caller's open reminders."""

T = TypeVar("T")


@dataclass(frozen=True)
class Caller:
    """Who typed the command, and where."""

    platform: str
    platform_user_id: str
    display_name: str | None = None
    locale: str | None = None
    platform_chat_id: str | None = None
    chat_kind: str = "private"


@dataclass(frozen=True)
class ReminderItem:
    """A reminder; ``due_at`` is when it pings (after a snooze, the new time), in its own time zone; a ``deadline``
    is also when it is due (``deadline``, which it pings ahead of)."""

    id: int
    content: str
    due_at: datetime
    timezone: str
    status: str
    kind: str = TodoKind.REMINDER
    deadline: datetime | None = None


@dataclass(frozen=True)
class ReminderChange:
    """What ``/remind`` did: ``add``, ``cancel``, ``done`` or ``snooze``, and the reminder as it is now;
    ``default_zone`` names the operator's zone the first time a new one used it for a user with none of their own
    (the answer then says so, and how to set one)."""

    action: str
    item: ReminderItem
    default_zone: str | None = None


class MemoryCommands:
    """One instance per process, shared by every front-end."""

    def __init__(self, uow_factory: Callable[[], UnitOfWork], *, default_timezone: str = "UTC",
                 clock: Callable[[], datetime] | None = None, embeddings_wanted: bool = False,
                 panel_url: str = "http://127.0.0.1:8080", panel_link_lifetime: timedelta = PANEL_LINK_LIFETIME,
                 usage_policy: UsagePolicy | None = None, write_limit: SharedLimit | None = None,
                 deadline_heads_up: timedelta = DEFAULT_HEADS_UP,
                 followup_quiet_hours: str = DEFAULT_QUIET_HOURS) -> None:
        self.uow_factory = uow_factory
        self.followup_quiet_hours = followup_quiet_hours
        """The quiet hours of users who set none (``FOLLOWUP_QUIET_HOURS``)."""
        self.default_timezone = default_timezone
        self.deadline_heads_up = deadline_heads_up
        """How long before a deadline its reminder pings (``DEADLINE_HEADS_UP_MINUTES``)."""
        self.clock = clock or (lambda: datetime.now(UTC))
        self.embeddings_wanted = embeddings_wanted
        """Owe an ``embed_memory`` job for memories added by /remember and /import."""
        self.panel_url = panel_url
        """Where browsers reach ``mnemo api`` (``PANEL_PUBLIC_URL``)."""
        self.panel_link_lifetime = panel_link_lifetime
        self.usage_policy = usage_policy or UsagePolicy()
        """Quotas and prices, for ``/usage``."""
        self.write_limit = write_limit
        """Commands that write what is remembered, per user (``COMMAND_WRITE_RATE_PER_USER``), shared by replicas."""

    # Memories

    def list_memories(self, caller: Caller, *, type_: str | None = None, search: str | None = None,
                      page: int = 1, page_size: int = 10) -> MemoryPage:
        kind = type_filter(type_)
        words = None if search is None or (isinstance(search, str) and not search.strip()) else (
            command_text(search, MAX_SEARCH_CHARS, "search_empty"))
        number, size = _positive(page, MAX_ID, "bad_page"), _positive(page_size, MAX_PAGE_SIZE, "bad_page")
        return self._run(caller, lambda uow, me: memory_commands.list_page(uow, me.user_id, kind, words, number, size))

    def forgotten_memories(self, caller: Caller, *, page: int = 1, page_size: int = 10) -> MemoryPage:
        """``/memories forgotten``: what the rules put in the recycle bin, restorable until it is purged."""
        number, size = _positive(page, MAX_ID, "bad_page"), _positive(page_size, MAX_PAGE_SIZE, "bad_page")
        return self._run(caller, lambda uow, me: memory_commands.binned_page(uow, me.user_id, number, size))

    def restore(self, caller: Caller, memory_id: int) -> MemoryItem:
        """``/memories restore <id>``: a memory out of the recycle bin, in use again with its history."""
        wanted = record_id(memory_id, "memory_not_in_bin")
        return self._run(caller, lambda uow, me: memory_commands.restore(uow, me.user_id, wanted, self.clock()))

    def why(self, caller: Caller, memory_id: int) -> MemoryOrigin:
        wanted = record_id(memory_id, "memory_not_found")
        return self._run(caller, lambda uow, me: memory_commands.origin(uow, me.user_id, wanted))

    def remember(self, caller: Caller, text: str) -> MemoryItem:
        content = command_text(text, MAX_TEXT_CHARS, "remember_empty")
        return self._run(caller, lambda uow, me: memory_commands.remember(
            uow, me.user_id, content, self.clock(), embeddings_wanted=self.embeddings_wanted), writes=True)

    def request_forget(self, caller: Caller, target: str) -> Confirmation:
        what = forget_target(target)
        return self._run(caller, lambda uow, me: memory_commands.request_forget(uow, me.user_id, what, self.clock()))

    def confirm(self, caller: Caller, token: str) -> int:
        return self._run(caller, lambda uow, me: memory_commands.confirm_forget(uow, me.user_id, token, self.clock()))

    def cancel(self, caller: Caller, token: str) -> None:
        self._run(caller, lambda uow, me: memory_commands.cancel_confirmation(uow, me.user_id, token, self.clock()))

    # Reminders

    def list_reminders(self, caller: Caller) -> tuple[ReminderItem, ...]:
        return self._run(caller, lambda uow, me: tuple(reminder_item(t) for t in uow.todos.for_user(me.user_id)))

    def remind(self, caller: Caller, text: str) -> ReminderChange:
        """``/remind``: a new reminder, or ``cancel|done|snooze <id> [minutes]`` (also in Chinese) of one."""
        request = command_text(text, MAX_TEXT_CHARS, "reminder_empty")
        if request.strip().lower() in ACTION_WORDS:  # "/remind done" with no id
            raise self._which_reminder(caller, ACTION_WORDS[request.strip().lower()])
        action = reminder_action(request)
        if action is None:
            return self._run(caller, lambda uow, me: self._add_reminder(uow, me, caller, request, tell_zone=True),
                             writes=True)
        return self._apply(caller, action)

    def reminder_command(self, caller: Caller, action: str, argument: str) -> ReminderChange:
        """``/cancel <id>``, ``/done <id>``, ``/snooze <id> [minutes]``; without a usable id, the ids there are."""
        try:
            chosen = action_of(action, command_text(argument, MAX_TEXT_CHARS, "bad_id"))
        except InvalidCommand as exc:
            if exc.key != "bad_id":
                raise
            raise self._which_reminder(caller, action) from exc
        return self._apply(caller, chosen)

    def _which_reminder(self, caller: Caller, action: str) -> InvalidCommand:
        """The answer to a reminder command that names no reminder: the caller's own open reminders' ids (the
        first as the example to type), or that there are none and how to list or set one."""
        open_ids = [item.id for item in self.list_reminders(caller)]
        if not open_ids:
            return InvalidCommand("no_open_reminders")
        shown = ", ".join(f"#{i}" for i in open_ids[:IDS_SHOWN]) + (" …" if len(open_ids) > IDS_SHOWN else "")
        return InvalidCommand("which_reminder", command=action, example=open_ids[0], ids=shown)

    def _apply(self, caller: Caller, action: ReminderAction) -> ReminderChange:
        if action.action == "snooze":
            return ReminderChange("snooze", self.snooze_reminder(caller, action.reminder_id, action.minutes))
        change = self.cancel_reminder if action.action == "cancel" else self.complete_reminder
        return ReminderChange(action.action, change(caller, action.reminder_id))

    def add_reminder(self, caller: Caller, text: str) -> ReminderItem:
        request = command_text(text, MAX_TEXT_CHARS, "reminder_empty")
        return self._run(caller, lambda uow, me: self._add_reminder(uow, me, caller, request), writes=True).item

    def cancel_reminder(self, caller: Caller, reminder_id: int) -> ReminderItem:
        return self._change_reminder(caller, reminder_id, (TodoStatus.PENDING,), status=TodoStatus.CANCELLED)

    def complete_reminder(self, caller: Caller, reminder_id: int) -> ReminderItem:
        return self._change_reminder(caller, reminder_id, (TodoStatus.PENDING, TodoStatus.SENT), status=TodoStatus.DONE)

    def snooze_reminder(self, caller: Caller, reminder_id: int, minutes: int = 10) -> ReminderItem:
        if isinstance(minutes, bool) or not isinstance(minutes, int) or minutes not in SNOOZE_MINUTES:
            raise InvalidCommand("bad_minutes", low=SNOOZE_MINUTES.start, high=SNOOZE_MINUTES.stop - 1)
        return self._change_reminder(caller, reminder_id, (TodoStatus.PENDING, TodoStatus.SENT),
                                     status=TodoStatus.PENDING, sent_at=None,
                                     claimed_until=None, last_error=None, snooze=timedelta(minutes=minutes))

    # Time zone

    def timezone(self, caller: Caller, text: str | None = None) -> ZoneChange:
        """``/timezone``: the caller's zone (nothing given), a new one (an IANA name, a city or country, an offset
        such as "UTC+8"), or ``default``; pending reminders keep their clock time (see
        :mod:`shared.reminders.user_zone`)."""
        if text is None or (isinstance(text, str) and not text.strip()):
            return self._run(caller, lambda uow, me: _unchanged(user_zone(uow, me.user_id, self.default_timezone)))
        name = zone_named(command_text(text, MAX_SEARCH_CHARS, "zone_unknown"))
        return self._run(caller, lambda uow, me: set_user_zone(uow, me.user_id, name, self.default_timezone,
                                                               self.clock()))

    # Follow-ups

    def followups(self, caller: Caller, text: str | None = None) -> FollowupSettings:
        """``/followups on|off|list|quiet 23-8``: consent, quiet hours, and the open threads."""
        blank = text is None or (isinstance(text, str) and not text.strip())
        words = "" if blank else command_text(text, MAX_SEARCH_CHARS, "followups_usage")
        return self._run(caller, lambda uow, me: followup_settings(uow, me.user_id, words, self.clock(),
                                                                   self.followup_quiet_hours))

    def group_followups(self, caller: Caller, text: str, *, admin: bool) -> GroupFollowups:
        """``/followups group [on|off]`` in the group it was typed in; ``admin``: the platform says the caller is
        one of the group's admins (only they change it)."""
        if caller.chat_kind == "private" or caller.platform_chat_id is None:
            raise InvalidCommand("followups_group_where")
        words = command_text(text, MAX_SEARCH_CHARS, "followups_usage")
        return self._run(caller, lambda uow, _me: group_followups(self._chat(uow, caller), words, admin=admin))

    # Export and import

    def export_data(self, caller: Caller) -> ExportFile:
        return self._run(caller, lambda uow, me: user_data.export_user_data(uow, me.user_id, self.clock()))

    def import_data(self, caller: Caller, data: bytes) -> ImportReport:
        document = user_data.read_export(data)  # a bad file is refused before anything is opened
        return self._run(caller, lambda uow, me: user_data.import_user_data(
            uow, me.user_id, document, now=self.clock(), chat_id=self._chat(uow, caller, private=True).id,
            embeddings_wanted=self.embeddings_wanted), writes=True)

    # Pause, resume

    def pause(self, caller: Caller) -> None:
        def pause(uow: UnitOfWork, me: Identity) -> None:
            user = uow.users.get(me.user_id)  # gone only when the account was deleted meanwhile: nothing to pause
            if user is not None and user.paused_at is None:
                uow.users.set_paused(me.user_id, self.clock())

        self._run(caller, pause)

    def resume(self, caller: Caller) -> None:
        self._run(caller, lambda uow, me: uow.users.set_paused(me.user_id, None))

    def is_paused(self, caller: Caller) -> bool:
        def paused(uow: UnitOfWork, me: Identity) -> bool:
            user = uow.users.get(me.user_id)
            return user is not None and user.paused_at is not None

        return self._run(caller, paused)

    # Identity links

    def link_code(self, caller: Caller) -> LinkCode:
        return self._run(caller, lambda uow, me: identity_links.issue_link_code(uow, me.user_id, self.clock()))

    def link(self, caller: Caller, code: str) -> LinkRequest:
        """A code from another account: whose account it is, and the code that confirms the join there.
        Nothing is joined yet; a wrong code counts against the caller's tries."""
        wanted = identity_links.normalise_code(code)
        request = self._run(caller, lambda uow, me: identity_links.request_link(uow, me, wanted, self.clock()))
        if request is None:
            raise ConfirmationInvalid("link_code_invalid")
        return request

    def confirm_link(self, caller: Caller, code: str) -> Account:
        """The caller, owner of the first code, confirms the join its other account asked for; the account
        that joined."""
        wanted = identity_links.normalise_code(code)
        joined = self._run(caller, lambda uow, me: identity_links.confirm_link(uow, me, wanted, self.clock()))
        if joined is None:
            raise ConfirmationInvalid("link_code_invalid")
        return joined

    def unlink(self, caller: Caller) -> None:
        self._run(caller, lambda uow, me: identity_links.unlink_identity(uow, me))

    # The web panel

    def panel_link(self, caller: Caller) -> PanelLink:
        """A one-time sign-in link to the web panel for the caller (earlier unused links stop working)."""
        return self._run(caller, lambda uow, me: panel_access.issue_panel_link(
            uow, me.user_id, self.clock(), base_url=self.panel_url, lifetime=self.panel_link_lifetime))

    # Usage

    def usage(self, caller: Caller) -> UserUsage:
        """``/usage``: today, 7 and 30 days, and what is left of today's allowance."""
        return self._run(caller, lambda uow, me: user_usage(uow, me.user_id, self.clock(), self.usage_policy))

    # Plumbing

    def _run(self, caller: Caller, work: Callable[[UnitOfWork, Identity], T], *, writes: bool = False) -> T:
        """``work`` for the caller's identity in one transaction, committed when it succeeds; work that ``writes``
        what is remembered counts against the user's write rate first (refused ``too_many_writes`` past it)."""
        check_caller(caller)
        with self.uow_factory() as uow:
            locale = caller.locale if isinstance(caller.locale, str) and _LOCALE.fullmatch(caller.locale) else None
            name = caller.display_name if isinstance(caller.display_name, str) else None
            identity = uow.users.identify(caller.platform, caller.platform_user_id, display_name=name, locale=locale)
            if writes and self.write_limit is not None:
                wait = self.write_limit.hit(str(identity.user_id))
                if wait is not None:
                    raise InvalidCommand("too_many_writes", seconds=int(wait))
            result = work(uow, identity)
            uow.commit()
        return result

    def _add_reminder(self, uow: UnitOfWork, me: Identity, caller: Caller, text: str, *,
                      tell_zone: bool = False) -> ReminderChange:
        """A new reminder; a deadline ("/remind Friday 5pm report due", "周五下午五点前 交报告") pings ahead of it."""
        now = self.clock()
        zone = user_zone(uow, me.user_id, self.default_timezone).name
        try:
            resolved = resolve_when(text, now, zone)
        except TimeOutOfRange as exc:
            raise InvalidCommand("reminder_out_of_range", when=exc.matched) from exc
        if resolved is None:
            raise InvalidCommand("reminder_no_time")
        deadline = reads_as_deadline(text, resolved)
        content = (todo_content(resolved.rest) if deadline else resolved.rest).strip(_REMINDER_FILLER)
        if resolved.due <= now:  # refused with its words, to send again with a time ahead
            raise InvalidCommand("reminder_past", when=resolved.matched, what=content or "…")
        if not content:
            raise InvalidCommand("reminder_no_content")
        if room_for_reminders(uow, me.user_id) < 1:
            raise InvalidCommand("too_many_reminders", limit=MAX_PENDING_REMINDERS)
        when = timing(TodoKind.DEADLINE if deadline else TodoKind.REMINDER, resolved.due, now, self.deadline_heads_up)
        todo = uow.todos.add(Todo(user_id=me.user_id, chat_id=self._chat(uow, caller).id, content=content,
                                  due_at=when.due_at, remind_at=when.remind_at, kind=when.kind,
                                  wall_clock=not resolved.elapsed, timezone=zone, source="command",
                                  created_at=now, updated_at=now))
        told = tell_zone and zone_notice_owed(uow, me.user_id, now)
        return ReminderChange("add", reminder_item(todo), self.default_timezone if told else None)

    def _change_reminder(self, caller: Caller, reminder_id: int, allowed: tuple[str, ...], *,
                         snooze: timedelta | None = None, **values: object) -> ReminderItem:
        wanted = record_id(reminder_id, "reminder_not_found")
        return self._run(caller, lambda uow, me: change_reminder(uow, me.user_id, wanted, allowed, self.clock(),
                                                                 snooze=snooze, **values))

    @staticmethod
    def _chat(uow: UnitOfWork, caller: Caller, *, private: bool = False) -> Chat:
        """The chat the command was typed in, or the private chat with the caller (when asked, or none given)."""
        if private or caller.platform_chat_id is None:
            return uow.chats.get_or_create(caller.platform, caller.platform_user_id, "private")
        return uow.chats.get_or_create(caller.platform, caller.platform_chat_id, caller.chat_kind)


def change_reminder(uow: UnitOfWork, user_id: int, reminder_id: int, allowed: tuple[str, ...], now: datetime, *,
                    snooze: timedelta | None = None, **values: object) -> ReminderItem:
    """Change one of the user's reminders if its status is one of ``allowed``."""
    todo = uow.todos.get(user_id, reminder_id)
    if todo is None:
        raise NotFound("reminder_not_found")
    if todo.status not in allowed:
        raise InvalidCommand("reminder_not_pending", status=todo.status)
    reopened = values.get("status") == TodoStatus.PENDING and todo.status != TodoStatus.PENDING
    if reopened and room_for_reminders(uow, user_id) < 1:
        raise InvalidCommand("too_many_reminders", limit=MAX_PENDING_REMINDERS)  # a sent one snoozed counts again
    later = None
    if snooze is not None:  # from the later of now and when it was due: a snooze never brings a reminder forward
        later = storable_later(max(now, todo.remind_at), snooze)  # the range of every stored time
        if later is None:
            raise InvalidCommand("snooze_out_of_range")
    for name, value in values.items():
        setattr(todo, name, value)
    if later is not None:
        todo.remind_at = later
        todo.attempts += 1  # ends a delivery in flight: its claim no longer matches, so it cannot mark this sent
    todo.updated_at = now
    uow.flush()
    return reminder_item(todo)


def check_caller(caller: object) -> None:
    ok = (isinstance(caller, Caller) and caller.platform in PLATFORMS and _key(caller.platform_user_id)
          and (caller.platform_chat_id is None or _key(caller.platform_chat_id)) and caller.chat_kind in CHAT_KINDS)
    if not ok:
        raise InvalidCommand("bad_caller")


def command_text(value: object, limit: int, empty_key: str) -> str:
    """A typed argument: a string of at most ``limit`` characters without control characters, with
    something visible in it, and without the bidirectional controls that would reorder how it shows."""
    if not isinstance(value, str):
        raise InvalidCommand(empty_key)
    if len(value) > limit:
        raise InvalidCommand("too_long", limit=limit)
    if _FORBIDDEN_CHARS.search(value):
        raise InvalidCommand("control_characters")
    if not value.strip():
        raise InvalidCommand(empty_key)
    if is_invisible(value):
        raise InvalidCommand("invisible_text")
    cleaned: str = without_bidi_controls(value)
    return cleaned.strip()


def record_id(value: object, not_found: str) -> int:
    """``12`` / ``"12"`` / ``"#12"`` as an id; an impossible number is simply not found."""
    if isinstance(value, str) and TYPED_ID.fullmatch(value.strip()):
        value = int(value.strip().lstrip("#").strip())
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidCommand("bad_id")
    if not 1 <= value <= MAX_ID:
        raise NotFound(not_found)
    return value


def forget_target(target: object) -> str | int:
    """"all", "all reminders" (everything, reminders too), an id ("12", "#12") or search words."""
    text = command_text(target, MAX_SEARCH_CHARS, "forget_empty")
    if text.lower() in ALL_WORDS:
        return FORGET_ALL
    for word in ALL_WORDS:  # "all reminders", "全部和提醒"
        if text.lower().startswith(word) and text.lower()[len(word):].strip() in REMINDER_WORDS:
            return FORGET_ALL_AND_REMINDERS
    if TYPED_ID.fullmatch(text) or text.startswith("#"):
        return record_id(text, "memory_not_found")
    return text


def type_filter(value: object) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    kind = memory_type(value) if isinstance(value, str) and len(value) <= 20 else None
    if kind is None:
        raise InvalidCommand("unknown_type", types=", ".join(MEMORY_TYPES))
    return kind


def _positive(value: object, highest: int, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= highest:
        raise InvalidCommand(key)
    return value


def _key(value: object) -> bool:
    return isinstance(value, str) and 0 < len(value) <= 64 and bool(value.strip()) and not (
        _FORBIDDEN_CHARS.search(value))




def reminder_item(todo: Todo) -> ReminderItem:
    zone = zone_of(zone_or_default(todo.timezone, "UTC"))
    deadline = todo.due_at.astimezone(zone) if todo.kind == TodoKind.DEADLINE else None
    return ReminderItem(id=todo.id, content=todo.content, due_at=todo.remind_at.astimezone(zone),
                        timezone=todo.timezone, status=todo.status, kind=todo.kind, deadline=deadline)


def _unchanged(zone: UserZone) -> ZoneChange:
    return ZoneChange(before=zone, after=zone)


def zone_named(words: str) -> str | None:
    """The zone ``words`` name (None for "default"); :class:`InvalidCommand` that says why when they name none or
    several."""
    if words.casefold() in DEFAULT_ZONE_WORDS:
        return None
    reading = read_zone(words)
    if isinstance(reading, SeveralZones):
        raise InvalidCommand("zone_several", place=reading.said, cities=", ".join(reading.cities))
    if reading is None:
        raise InvalidCommand("zone_unknown", what=words)
    return reading.name
