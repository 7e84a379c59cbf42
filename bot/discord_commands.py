"""Mnemo's slash commands on Discord: each turns an interaction into a ``MemoryCommands`` call and
its result into an ephemeral answer.

Every answer is seen only by the person who asked. Anything that touches the database or a file is
deferred first (``defer(ephemeral=True, thinking=True)`` answers Discord within its 3 seconds), then
runs in a thread and is sent as a follow-up. ``/forget`` asks first: its buttons carry the service's
confirmation token and the requester's id in their custom id, so they work after a restart and
refuse anyone else. Errors go to one handler, :func:`report_error`.
"""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol, TypeVar

import discord
from discord import app_commands

from bot.discord_access import interaction_facts
from bot.discord_render import command_text, fit, jump_url, slash_spelling, split_message
from shared.access.requests import ACTIONS
from shared.access.rule import KINDS
from shared.access.service import AccessListing, AccessService
from shared.access.texts import change_text, listing_text
from shared.accounts.user_data import MAX_IMPORT_BYTES
from shared.commands import table, texts
from shared.commands.followups import about_the_group
from shared.commands.service import Caller, MemoryCommands, MemoryPage, confirmation_code
from shared.commands.table import Frontend
from shared.db.kinds import MEMORY_TYPES
from shared.errors import ConfirmationInvalid, InvalidCommand, NotFound
from shared.followups import texts as followup_texts
from shared.reminders import zone_texts
from shared.usage import texts as usage_texts


class CommandHost(Protocol):
    """What the commands need of the bot (``MnemoBot``), named here so the two modules need not import each other."""

    memory: MemoryCommands
    access: AccessService

log = logging.getLogger(__name__)

PAGER_TIMEOUT_SECONDS = 10 * 60
MAX_OPTION_INTEGER = 2**53  # Discord's bound for integer options
UNLINK_WORD = "unlink"
DOMAIN_ERRORS = (NotFound, InvalidCommand, ConfirmationInvalid)
T = TypeVar("T")


def memory_commands(interaction: discord.Interaction) -> MemoryCommands:
    client: CommandHost = interaction.client  # type: ignore[assignment]
    return client.memory


def caller_of(interaction: discord.Interaction) -> Caller:
    """Who is asking. Commands are private conversations with the bot, so a reminder set with
    ``/remind`` in a server pings by direct message, never in the channel."""
    private = interaction.guild_id is None
    return Caller(platform="discord", platform_user_id=str(interaction.user.id),
                  display_name=interaction.user.display_name, locale=interaction.locale.value,
                  platform_chat_id=str(interaction.channel_id) if private and interaction.channel_id else None,
                  chat_kind="private")


async def deferred(interaction: discord.Interaction, work: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Acknowledge now (ephemeral "thinking…"), then run the service call in a thread."""
    if not interaction.response.is_done():
        await interaction.response.defer(ephemeral=True, thinking=True)
    return await asyncio.to_thread(work, *args, **kwargs)


async def send_private(interaction: discord.Interaction, text: str, *, view: discord.ui.View | None = None,
                       file: discord.File | None = None) -> None:
    """Send ``text`` (split at Discord's limit) to the asker only; a view or file rides on the last piece."""
    pieces = split_message(text) or [""]
    for index, piece in enumerate(pieces):
        extras: dict[str, Any] = {}
        if index == len(pieces) - 1:
            extras = {key: value for key, value in (("view", view), ("file", file)) if value is not None}
        if piece:  # an empty piece carries only the view or file
            extras["content"] = piece
        if interaction.response.is_done():
            await interaction.followup.send(ephemeral=True, **extras)
        else:
            await interaction.response.send_message(ephemeral=True, **extras)


async def report_error(interaction: discord.Interaction, error: Exception) -> None:
    """The one error handler: domain errors in the user's words, anything else logged and apologised for."""
    original = error.original if isinstance(error, app_commands.CommandInvokeError) else error
    if not isinstance(original, DOMAIN_ERRORS):
        name = interaction.command.qualified_name if interaction.command else interaction.type.name  # data: input
        log.error("interaction %s failed", name, exc_info=original)
    text = texts.error_text(original, interaction.locale.value)
    try:
        await send_private(interaction, fit(slash_spelling(text)))
    except discord.HTTPException as exc:  # the interaction expired or Discord refused: nothing more to do
        log.warning("could not tell the user about the error: %s", exc)


async def on_command_error(interaction: discord.Interaction, error: app_commands.AppCommandError) -> None:
    await report_error(interaction, error)


class MemoryPager(discord.ui.View):
    """◀ ▶ under a ``/memories`` page; only its owner can turn pages."""

    def __init__(self, owner_id: int, page: MemoryPage) -> None:
        super().__init__(timeout=PAGER_TIMEOUT_SECONDS)
        self.owner_id, self.page = owner_id, page
        self._enable_arrows()

    def _enable_arrows(self) -> None:
        """◀ off on the first page, ▶ off on the last (not ``_refresh``: discord.py's View has one of its own)."""
        self.previous.disabled = self.page.page <= 1
        self.next.disabled = self.page.page >= self.page.pages

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        if interaction.user.id == self.owner_id:
            return True
        await report_error(interaction, ConfirmationInvalid())
        return False

    async def on_error(self, interaction: discord.Interaction, error: Exception, _item: discord.ui.Item) -> None:
        await report_error(interaction, error)

    async def _turn(self, interaction: discord.Interaction, step: int) -> None:
        await interaction.response.defer()
        self.page = await asyncio.to_thread(
            memory_commands(interaction).list_memories, caller_of(interaction), type_=self.page.type_filter,
            search=self.page.search, page=self.page.page + step)
        self._enable_arrows()
        content = fit(texts.memory_page_text(self.page, interaction.locale.value))
        await interaction.edit_original_response(content=content, view=self)

    @discord.ui.button(label="◀", style=discord.ButtonStyle.secondary)
    async def previous(self, interaction: discord.Interaction, _button: discord.ui.Button) -> None:
        await self._turn(interaction, -1)

    @discord.ui.button(label="▶", style=discord.ButtonStyle.secondary)
    async def next(self, interaction: discord.Interaction, _button: discord.ui.Button) -> None:
        await self._turn(interaction, +1)


class ForgetAnswer(discord.ui.DynamicItem[discord.ui.Button],
                   template=r"mnemo:forget:(?P<answer>yes|no):(?P<owner>\d{1,20}):(?P<token>[A-Za-z0-9_-]{16,32})"):
    """A yes/no button of a ``/forget`` confirmation; the state lives in its custom id."""

    def __init__(self, answer: str, owner_id: int, token: str, label: str | None = None) -> None:
        style = discord.ButtonStyle.danger if answer == "yes" else discord.ButtonStyle.secondary
        super().__init__(discord.ui.Button(label=label or answer, style=style,
                                           custom_id=f"mnemo:forget:{answer}:{owner_id}:{token}"))
        self.answer, self.owner_id, self.token = answer, owner_id, token

    @classmethod
    async def from_custom_id(cls, _interaction: discord.Interaction, item: discord.ui.Item[Any], match: Any,
                             ) -> ForgetAnswer:
        label = item.label if isinstance(item, discord.ui.Button) else None
        return cls(match["answer"], int(match["owner"]), match["token"], label=label)

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        if interaction.user.id == self.owner_id:
            return True
        await report_error(interaction, ConfirmationInvalid())
        return False

    async def callback(self, interaction: discord.Interaction) -> None:
        try:
            await interaction.response.defer()
            service, caller, locale = memory_commands(interaction), caller_of(interaction), interaction.locale.value
            if self.answer == "yes":
                text = texts.forgotten_text(await asyncio.to_thread(service.confirm, caller, self.token), locale)
            else:
                await asyncio.to_thread(service.cancel, caller, self.token)
                text = texts.cancelled_text(locale)
            await interaction.edit_original_response(content=fit(text), view=None)
        except Exception as exc:  # handed to the one handler (discord.py would only log it)
            await report_error(interaction, exc)


def confirmation_view(owner_id: int, token: str, locale: str) -> discord.ui.View:
    """The yes/no buttons; presses reach :class:`ForgetAnswer` through ``add_dynamic_items``."""
    yes, no = texts.confirm_button_labels(locale)
    view = discord.ui.View(timeout=None)
    view.add_item(ForgetAnswer("yes", owner_id, token, yes))
    view.add_item(ForgetAnswer("no", owner_id, token, no))
    return view


def describe(name: str) -> app_commands.locale_str:
    return command_text(f"{name}.description")


@app_commands.command(name="memories", description=describe("memories"))
@app_commands.rename(kind="type")
@app_commands.describe(kind=command_text("memories.type"), search=command_text("memories.search"),
                       page=command_text("memories.page"))
@app_commands.choices(kind=[app_commands.Choice(name=command_text(f"type.{kind}"), value=kind)
                            for kind in MEMORY_TYPES])
async def memories(interaction: discord.Interaction, kind: str | None = None, search: str | None = None,
                   page: app_commands.Range[int, 1, MAX_OPTION_INTEGER] = 1) -> None:
    """What I remember about you, ten at a time."""
    result = await deferred(interaction, memory_commands(interaction).list_memories, caller_of(interaction),
                            type_=kind, search=search, page=page)
    pager = MemoryPager(interaction.user.id, result) if result.pages > 1 else None
    await send_private(interaction, fit(texts.memory_page_text(result, interaction.locale.value)), view=pager)


@app_commands.command(name="memories_why", description=describe("memories_why"))
@app_commands.describe(memory_id=command_text("memories_why.memory_id"))
async def memories_why(interaction: discord.Interaction,
                       memory_id: app_commands.Range[int, 1, MAX_OPTION_INTEGER]) -> None:
    """Where a memory came from: the message it was learnt from, with a link."""
    origin = await deferred(interaction, memory_commands(interaction).why, caller_of(interaction), memory_id)
    link = None
    if origin.platform == "discord" and origin.platform_chat_id and origin.platform_message_id:
        channel = interaction.client.get_channel(int(origin.platform_chat_id))
        guild = getattr(channel, "guild", None)
        link = jump_url(guild.id if guild else None, origin.platform_chat_id, origin.platform_message_id)
    await send_private(interaction, slash_spelling(texts.origin_text(origin, interaction.locale.value, link)))


@app_commands.command(name="memories_forgotten", description=describe("memories_forgotten"))
@app_commands.describe(page=command_text("memories.page"))
async def memories_forgotten(interaction: discord.Interaction,
                             page: app_commands.Range[int, 1, MAX_OPTION_INTEGER] = 1) -> None:
    """The recycle bin: what I set aside after long disuse, and when it will be purged."""
    result = await deferred(interaction, memory_commands(interaction).forgotten_memories, caller_of(interaction),
                            page=page)
    await send_private(interaction, fit(slash_spelling(texts.memory_page_text(result, interaction.locale.value))))


@app_commands.command(name="memories_restore", description=describe("memories_restore"))
@app_commands.describe(memory_id=command_text("memories_restore.memory_id"))
async def memories_restore(interaction: discord.Interaction,
                           memory_id: app_commands.Range[int, 1, MAX_OPTION_INTEGER]) -> None:
    """Bring a memory back from the recycle bin, with its history."""
    item = await deferred(interaction, memory_commands(interaction).restore, caller_of(interaction), memory_id)
    await send_private(interaction, texts.restored_text(item, interaction.locale.value))


@app_commands.command(name="forget", description=describe("forget"))
@app_commands.describe(target=command_text("forget.target"))
async def forget(interaction: discord.Interaction, target: str) -> None:
    """Forget one memory (its id), those matching some words, or all; always asks first."""
    locale = interaction.locale.value
    pending = await deferred(interaction, memory_commands(interaction).request_forget, caller_of(interaction), target)
    view = confirmation_view(interaction.user.id, pending.token, locale)
    await send_private(interaction, fit(texts.confirmation_text(pending, locale)), view=view)


@app_commands.command(name="remember", description=describe("remember"))
@app_commands.describe(text=command_text("remember.text"))
async def remember(interaction: discord.Interaction, text: str) -> None:
    """Remember something exactly as you say it."""
    item = await deferred(interaction, memory_commands(interaction).remember, caller_of(interaction), text)
    await send_private(interaction, texts.remembered_text(item, interaction.locale.value))


@app_commands.command(name="reminders", description=describe("reminders"))
async def reminders(interaction: discord.Interaction) -> None:
    """Your pending reminders, soonest first."""
    items = await deferred(interaction, memory_commands(interaction).list_reminders, caller_of(interaction))
    await send_private(interaction, texts.reminders_text(items, interaction.locale.value))


@app_commands.command(name="remind", description=describe("remind"))
@app_commands.describe(when=command_text("remind.when"), what=command_text("remind.what"))
async def remind(interaction: discord.Interaction, when: str, what: str) -> None:
    """A reminder at a time you name ("tomorrow 9am", "明天早上9点")."""
    change = await deferred(interaction, memory_commands(interaction).remind, caller_of(interaction),
                            f"{when.strip()} {what.strip()}")
    await send_private(interaction, texts.reminder_change_text(change, interaction.locale.value))


async def reminder_command(interaction: discord.Interaction, action: str, argument: str) -> None:
    """``/cancel``, ``/done``, ``/snooze``: the same as ``/remind <action> <id>``."""
    change = await deferred(interaction, memory_commands(interaction).reminder_command, caller_of(interaction),
                            action, argument)
    await send_private(interaction, texts.reminder_change_text(change, interaction.locale.value))


@app_commands.command(name="cancel", description=describe("cancel"))
@app_commands.describe(reminder_id=command_text("reminder.id"))
async def cancel(interaction: discord.Interaction, reminder_id: int) -> None:
    """Cancel a reminder."""
    await reminder_command(interaction, "cancel", str(reminder_id))


@app_commands.command(name="done", description=describe("done"))
@app_commands.describe(reminder_id=command_text("reminder.id"))
async def done(interaction: discord.Interaction, reminder_id: int) -> None:
    """Mark a reminder done."""
    await reminder_command(interaction, "done", str(reminder_id))


@app_commands.command(name="snooze", description=describe("snooze"))
@app_commands.describe(reminder_id=command_text("reminder.id"), minutes=command_text("snooze.minutes"))
async def snooze(interaction: discord.Interaction, reminder_id: int, minutes: int = 10) -> None:
    """Ping again in ``minutes`` (10 if not given)."""
    await reminder_command(interaction, "snooze", f"{reminder_id} {minutes}")


@app_commands.command(name="export", description=describe("export"))
async def export(interaction: discord.Interaction) -> None:
    """All your data as a JSON file."""
    exported = await deferred(interaction, memory_commands(interaction).export_data, caller_of(interaction))
    file = discord.File(io.BytesIO(exported.data), filename=exported.filename)
    await send_private(interaction, "", file=file)


@app_commands.command(name="import", description=describe("import"))
@app_commands.describe(file=command_text("import.file"))
async def import_(interaction: discord.Interaction, file: discord.Attachment) -> None:
    """Load a file made by /export."""
    await interaction.response.defer(ephemeral=True, thinking=True)
    if file.size > MAX_IMPORT_BYTES:  # refused before downloading it
        raise InvalidCommand("import_too_large", limit_mb=MAX_IMPORT_BYTES // (1024 * 1024))
    data = await file.read()
    report = await deferred(interaction, memory_commands(interaction).import_data, caller_of(interaction), data)
    await send_private(interaction, texts.import_report_text(report, interaction.locale.value))


@app_commands.command(name="pause", description=describe("pause"))
async def pause(interaction: discord.Interaction) -> None:
    """Stop remembering new things until /resume."""
    await deferred(interaction, memory_commands(interaction).pause, caller_of(interaction))
    await send_private(interaction, texts.paused_text(True, interaction.locale.value))


@app_commands.command(name="resume", description=describe("resume"))
async def resume(interaction: discord.Interaction) -> None:
    """Remember again."""
    await deferred(interaction, memory_commands(interaction).resume, caller_of(interaction))
    await send_private(interaction, texts.paused_text(False, interaction.locale.value))


@app_commands.command(name="link", description=describe("link"))
@app_commands.describe(code=command_text("link.code"))
async def link(interaction: discord.Interaction, code: str | None = None) -> None:
    """Without a code: get one to type on Telegram. With a code: ask to join the identity that made it,
    which confirms with ``confirm <code>``. ``/link unlink`` (the words the shared help uses) is ``/unlink``."""
    service, caller, locale = memory_commands(interaction), caller_of(interaction), interaction.locale.value
    if code is not None and code.strip().lower() == UNLINK_WORD:
        await unlink_account(interaction)
    elif code is None:
        made = await deferred(interaction, service.link_code, caller)
        await send_private(interaction, texts.link_code_text(made, locale))
    elif (confirming := confirmation_code(code)) is not None:
        joined = await deferred(interaction, service.confirm_link, caller, confirming)
        await send_private(interaction, texts.linked_text(joined, locale))
    else:
        request = await deferred(interaction, service.link, caller, code)
        await send_private(interaction, texts.link_request_text(request, locale))


@app_commands.command(name="unlink", description=describe("unlink"))
async def unlink(interaction: discord.Interaction) -> None:
    """Separate this Discord account from a linked Telegram one."""
    await unlink_account(interaction)


async def unlink_account(interaction: discord.Interaction) -> None:
    """``/unlink``, and ``/link unlink`` (the words the shared help uses)."""
    await deferred(interaction, memory_commands(interaction).unlink, caller_of(interaction))
    await send_private(interaction, texts.unlinked_text(interaction.locale.value))


@app_commands.command(name="panel", description=describe("panel"))
async def panel(interaction: discord.Interaction) -> None:
    """A one-time sign-in link to the web panel, shown to the asker only."""
    made = await deferred(interaction, memory_commands(interaction).panel_link, caller_of(interaction))
    await send_private(interaction, texts.panel_link_text(made, interaction.locale.value))


@app_commands.command(name="usage", description=describe("usage"))
async def usage(interaction: discord.Interaction) -> None:
    """What the asker used today, in 7 and in 30 days, and what is left of today's allowance."""
    report = await deferred(interaction, memory_commands(interaction).usage, caller_of(interaction))
    await send_private(interaction, usage_texts.user_usage_text(report, interaction.locale.value))


@app_commands.command(name="timezone", description=describe("timezone"))
@app_commands.describe(zone=command_text("timezone.zone"))
async def timezone(interaction: discord.Interaction, zone: str | None = None) -> None:
    """Your time zone; with ``zone`` (a city, an IANA name, an offset), a new one."""
    service = memory_commands(interaction)
    change = await deferred(interaction, service.timezone, caller_of(interaction), zone)
    await send_private(interaction, zone_texts.zone_text(change, interaction.locale.value, service.clock()))


@app_commands.command(name="followups", description=describe("followups"))
@app_commands.describe(action=command_text("followups.action"))
async def followups(interaction: discord.Interaction, action: str | None = None) -> None:
    """Follow-ups on or off, your quiet hours (``quiet 22-9``), and what I'll ask about. In a server's channel,
    ``group on|off`` is the channel's own switch: members who may manage the channel or the server change it."""
    if about_the_group(action) and interaction.guild_id is not None:
        caller = replace(caller_of(interaction), platform_chat_id=str(interaction.channel_id), chat_kind="group")
        group = await deferred(interaction, memory_commands(interaction).group_followups, caller, action or "",
                               admin=channel_admin(interaction.permissions))
        await send_private(interaction, followup_texts.group_text(group, interaction.locale.value))
        return
    state = await deferred(interaction, memory_commands(interaction).followups, caller_of(interaction), action)
    await send_private(interaction, followup_texts.settings_text(state, interaction.locale.value))


def channel_admin(permissions: discord.Permissions) -> bool:
    """Whether a member may change a channel's settings: Manage Channels, Manage Server, or Administrator
    (the member's resolved permissions in the channel, as the interaction carries them)."""
    return permissions.administrator or permissions.manage_guild or permissions.manage_channels


@app_commands.command(name="help", description=describe("help"))
async def help_(interaction: discord.Interaction) -> None:
    """What I can do (answered at once: no database)."""
    await send_private(interaction, slash_spelling(texts.help_text(interaction.locale.value)))


@app_commands.command(name="access", description=describe("access"))
@app_commands.describe(action=command_text("access.action"), kind=command_text("access.kind"),
                       target=command_text("access.target"))
@app_commands.choices(action=[app_commands.Choice(name=word, value=word) for word in ACTIONS],
                      kind=[app_commands.Choice(name=kind, value=kind) for kind in KINDS])
async def access(interaction: discord.Interaction, action: str = "list", kind: str | None = None,
                 target: str | None = None) -> None:
    """Operators only: who may talk to the bot (``list``, or ``allow``/``block``/``remove`` a target)."""
    client: CommandHost = interaction.client  # type: ignore[assignment]
    words = " ".join(word for word in (action, kind, target) if word)
    result = await deferred(interaction, client.access.run, interaction_facts(interaction), words)
    locale = interaction.locale.value
    await send_private(interaction, listing_text(result, locale) if isinstance(result, AccessListing) else
                       change_text(result, locale))


SlashCommand = app_commands.Command[Any, ..., None]
_DEFINED: tuple[SlashCommand, ...] = (
    memories, memories_why, memories_forgotten, memories_restore, forget, remember, reminders, remind, cancel, done,
    snooze, export, import_, pause, resume, link, unlink, panel, usage, timezone, followups, help_, access)
COMMANDS: dict[str, SlashCommand] = {command.name: command for command in _DEFINED}
"""Every slash command, by name: exactly the Discord commands of :mod:`shared.commands.table`."""


def install_commands(tree: app_commands.CommandTree) -> None:
    """Register every command of the table, in its order, and the one error handler on ``tree``."""
    for _name, command in table.bind(Frontend.DISCORD, COMMANDS):
        tree.add_command(command)
    tree.error(on_command_error)

