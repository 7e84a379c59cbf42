"""The Telegram commands and their buttons: each handler turns an update into one call of the
memory-command service and renders the answer. Answers about a user's data go to that user's
private chat, wherever the command was typed. Domain errors are left to the global error handler.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from telegram import CallbackQuery, InlineKeyboardMarkup, LinkPreviewOptions, Message, Update, User
from telegram.constants import ChatMemberStatus, ChatType
from telegram.error import BadRequest, Forbidden
from telegram.ext import ContextTypes

from bot import telegram_render as render
from shared.accounts.user_data import MAX_IMPORT_BYTES
from shared.commands import table, texts
from shared.commands.followups import about_the_group
from shared.commands.service import Caller, ExportFile, MemoryCommands, confirmation_code
from shared.commands.table import Frontend, Reading
from shared.errors import InvalidCommand
from shared.followups import texts as followup_texts
from shared.reminders import zone_texts
from shared.reminders.chat_moves import record_chat_move
from shared.usage import texts as usage_texts

IMPORT_CAPTION = r"^/import(@\w+)?(\s|$)"
PAGE_SIZE = 10
Context = ContextTypes.DEFAULT_TYPE
LANGUAGE_TAG = re.compile(r"[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*")
_COMMAND_HEAD = re.compile(r"/\w+(@\w+)?")
"""``/remember`` or ``/remember@MnemoBot`` at the start of a message."""
MAX_LANGUAGE_CHARS = 16
"""An IETF language tag as Telegram sends it (``en``, ``zh-hans``), short enough to be kept."""
ADMIN_STATUSES = frozenset({ChatMemberStatus.OWNER, ChatMemberStatus.ADMINISTRATOR})
"""A group's owner (``creator``) and administrators: who may change the group's own settings."""
T = TypeVar("T")
Callback = Callable[[Update, Context], Coroutine[Any, Any, None]]
"""A command's handler, as python-telegram-bot calls it."""


def caller_of(update: Update) -> Caller:
    """Who is asking, and where (the chat of a pressed button is the chat of its message)."""
    user, chat = update.effective_user, update.effective_chat
    assert user is not None and chat is not None
    return Caller(platform="telegram", platform_user_id=str(user.id), display_name=user.full_name,
                  locale=user_locale(user), platform_chat_id=str(chat.id),
                  chat_kind="private" if chat.type == ChatType.PRIVATE else "group")


def message_of(update: Update) -> Message:
    """The message of a command (every command handler is for a message)."""
    assert update.effective_message is not None
    return update.effective_message


def query_of(update: Update) -> CallbackQuery:
    """The pressed button (every button handler is for one)."""
    assert update.callback_query is not None
    return update.callback_query


def user_of(update: Update) -> User:
    """Who sent the command or pressed the button (updates without a sender stop at ``drop_without_sender``)."""
    assert update.effective_user is not None
    return update.effective_user


def locale_of(update: Update) -> str | None:
    return user_locale(update.effective_user)


def user_locale(user: User | None) -> str | None:
    """The user's language tag, or None (the default language) when there is none or it is malformed."""
    code = user.language_code if user is not None else None
    if isinstance(code, str) and len(code) <= MAX_LANGUAGE_CHARS and LANGUAGE_TAG.fullmatch(code):
        return code
    return None


def command_argument(message: Message) -> str:
    """What follows the command, line breaks kept (``/remember a\\nb`` → ``a\\nb``)."""
    value = message.text or message.caption or ""
    found = _COMMAND_HEAD.match(value)
    return value[found.end():].strip() if found else value.strip()


async def answer_privately(update: Update, context: Context, message: str | None = None, *,
                           markup: InlineKeyboardMarkup | None = None, document: ExportFile | None = None,
                           no_preview: bool = False) -> Message | None:
    """Send to the user's private chat; in a group that Telegram refuses, only a neutral note goes to the group."""
    user, chat = update.effective_user, update.effective_chat
    assert user is not None and chat is not None
    try:
        if document is not None:
            return await context.bot.send_document(user.id, document=document.data, filename=document.filename)
        preview = LinkPreviewOptions(is_disabled=True) if no_preview else None
        return await context.bot.send_message(user.id, render.fit_message(message or "…"), reply_markup=markup,
                                              link_preview_options=preview)
    except (Forbidden, BadRequest) as exc:
        unreachable = isinstance(exc, Forbidden) or "chat not found" in exc.message.lower()
        if chat.type == ChatType.PRIVATE or not unreachable or update.effective_message is None:
            raise
        await update.effective_message.reply_text(render.text("start_private_first", locale_of(update)))
        return None


async def group_admin(update: Update, context: Context) -> bool:
    """Whether the sender administers the group the update came from: its creator or an administrator, as
    ``getChatMember`` says, or an anonymous admin (who writes as the group itself)."""
    user, chat, message = update.effective_user, update.effective_chat, update.effective_message
    assert user is not None and chat is not None
    if message is not None and message.sender_chat is not None and message.sender_chat.id == chat.id:
        return True
    member = await context.bot.get_chat_member(chat.id, user.id)
    return member.status in ADMIN_STATUSES


async def edit_answer(query: CallbackQuery, message: str, markup: InlineKeyboardMarkup | None = None) -> None:
    """Replace the text (and buttons) of the message a button belongs to; an unchanged message is fine."""
    try:
        await query.edit_message_text(render.fit_message(message), reply_markup=markup)
    except BadRequest as exc:
        if "not modified" not in exc.message.lower():
            raise


async def refuse_stranger(query: CallbackQuery, owner_id: int, locale: str | None) -> bool:
    """True (and an alert to the presser) when someone else presses a user's button."""
    if query.from_user.id == owner_id:
        return False
    await query.answer(render.text("not_yours", locale), show_alert=True)
    return True


class CommandHandlers:
    """One handler per command and button kind, over one :class:`MemoryCommands`."""

    def __init__(self, commands: MemoryCommands, *, bot_name: str) -> None:
        self.commands = commands
        self.bot_name = bot_name

    async def _call(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """The service is synchronous (database work): run it off the event loop."""
        return await asyncio.to_thread(method, *args, **kwargs)

    def by_head(self, access: Callback) -> dict[str, Callback]:
        """The handler of every command word of :mod:`shared.commands.table` on Telegram (``access`` is
        :class:`bot.telegram_access.AccessCommand`'s)."""
        return {"start": self.start, "help": self.help, "memories": self.memories, "forget": self.forget,
                "remember": self.remember, "reminders": self.reminders, "remind": self.remind, "cancel": self.cancel,
                "done": self.done, "snooze": self.snooze, "export": self.export, "import": self.import_file,
                "pause": self.pause, "resume": self.resume, "link": self.link, "panel": self.panel,
                "usage": self.usage, "timezone": self.timezone, "followups": self.followups, "unlink": self.unlink,
                "access": access}

    async def start(self, update: Update, context: Context) -> None:
        """Greet and show what the bot can do."""
        locale, user = locale_of(update), update.effective_user
        greeting = render.text("greeting", locale, name=user.first_name if user else "", bot=self.bot_name)
        await message_of(update).reply_text(f"{greeting}\n\n{texts.help_text(locale)}")

    async def help(self, update: Update, context: Context) -> None:
        """List the commands."""
        await message_of(update).reply_text(texts.help_text(locale_of(update)))

    async def memories(self, update: Update, context: Context) -> None:
        """``/memories [type] [search]`` (paged), ``/memories why <id>``, ``/memories forgotten [page]`` (the
        recycle bin) or ``/memories restore <id>``, read as :func:`shared.commands.table.read` reads them."""
        reading = table.read("memories", command_argument(message_of(update)), Frontend.TELEGRAM)
        assert reading is not None  # the table has /memories on Telegram
        family = {"memories": self._first_page, "memories_why": self._why, "memories_forgotten": self._recycle_bin,
                  "memories_restore": self._restore}
        await family[reading.command.name](update, context, reading)

    async def _first_page(self, update: Update, context: Context, reading: Reading) -> None:
        await self._show_page(update, context, reading.memory_type, reading.words or None, 1)

    async def _show_page(self, update: Update, context: Context, type_: str | None, search: str | None,
                         number: int) -> None:
        caller, owner = caller_of(update), user_of(update).id
        page = await self._call(self.commands.list_memories, caller, type_=type_, search=search, page=number,
                                page_size=PAGE_SIZE)
        body = texts.memory_page_text(page, caller.locale)
        if render.pages_need_shorter_search(page, owner):
            body += "\n\n" + render.text("search_too_long_for_pages", caller.locale)
        markup = render.memory_page_keyboard(page, owner, caller.locale)
        if update.callback_query is None:
            await answer_privately(update, context, body, markup=markup)
        else:
            await edit_answer(update.callback_query, body, markup)
            await update.callback_query.answer()

    async def _why(self, update: Update, context: Context, reading: Reading) -> None:
        caller = caller_of(update)
        origin = await self._call(self.commands.why, caller, reading.named_memory())  # the service checks it
        link = render.message_link(origin.platform, origin.platform_chat_id, origin.platform_message_id)
        await answer_privately(update, context, texts.origin_text(origin, caller.locale, link))

    async def _recycle_bin(self, update: Update, context: Context, reading: Reading) -> None:
        caller = caller_of(update)
        binned = await self._call(self.commands.forgotten_memories, caller, page=reading.page, page_size=PAGE_SIZE)
        await answer_privately(update, context, texts.memory_page_text(binned, caller.locale))

    async def _restore(self, update: Update, context: Context, reading: Reading) -> None:
        caller = caller_of(update)
        item = await self._call(self.commands.restore, caller, reading.named_memory())  # the service checks it
        await answer_privately(update, context, texts.restored_text(item, caller.locale))

    async def memory_page_button(self, update: Update, context: Context) -> None:
        """A previous/next button under a page of memories; only its owner may page."""
        query = query_of(update)
        request = render.PageRequest.parse(query.data or "")
        if request is None or await refuse_stranger(query, request.owner_id, locale_of(update)):
            return
        await self._show_page(update, context, request.type_, request.search, request.page)

    async def forget(self, update: Update, context: Context) -> None:
        """``/forget <id|search|all>``: asks first, with Yes/No buttons."""
        caller = caller_of(update)
        pending = await self._call(self.commands.request_forget, caller, command_argument(message_of(update)))
        markup = render.confirmation_keyboard(pending.token, texts.confirm_button_labels(caller.locale))
        await answer_privately(update, context, texts.confirmation_text(pending, caller.locale), markup=markup)

    async def confirmation_button(self, update: Update, context: Context) -> None:
        """Yes (``cf:``) or No (``cx:``); the service refuses a token that is not the presser's."""
        query, caller = query_of(update), caller_of(update)
        action, _, token = (query.data or "").partition(":")
        if action == "cf":
            count = await self._call(self.commands.confirm, caller, token)
            await edit_answer(query, texts.forgotten_text(count, caller.locale))
        else:
            await self._call(self.commands.cancel, caller, token)
            await edit_answer(query, texts.cancelled_text(caller.locale))
        await query.answer()

    async def remember(self, update: Update, context: Context) -> None:
        """``/remember <text>``: store it as something the user said."""
        caller = caller_of(update)
        item = await self._call(self.commands.remember, caller, command_argument(message_of(update)))
        await answer_privately(update, context, texts.remembered_text(item, caller.locale))

    async def reminders(self, update: Update, context: Context) -> None:
        """``/reminders``: the pending ones, with done/snooze/cancel buttons."""
        caller = caller_of(update)
        items = await self._call(self.commands.list_reminders, caller)
        markup = render.reminders_keyboard(items, user_of(update).id, caller.locale)
        await answer_privately(update, context, texts.reminders_text(items, caller.locale), markup=markup)

    async def remind(self, update: Update, context: Context) -> None:
        """``/remind <when> <what>``: the ping goes to the chat it was asked in."""
        caller = caller_of(update)
        change = await self._call(self.commands.remind, caller, command_argument(message_of(update)))
        await answer_privately(update, context, texts.reminder_change_text(change, caller.locale))

    async def cancel(self, update: Update, context: Context) -> None:
        """``/cancel <id>``: the reminder will not ping."""
        await self._reminder_command(update, context, "cancel")

    async def done(self, update: Update, context: Context) -> None:
        """``/done <id>``: the reminder is done."""
        await self._reminder_command(update, context, "done")

    async def snooze(self, update: Update, context: Context) -> None:
        """``/snooze <id> [minutes]``: ping again later."""
        await self._reminder_command(update, context, "snooze")

    async def _reminder_command(self, update: Update, context: Context, action: str) -> None:
        caller = caller_of(update)
        change = await self._call(self.commands.reminder_command, caller, action,
                                  command_argument(message_of(update)))
        await answer_privately(update, context, texts.reminder_change_text(change, caller.locale))

    async def reminder_button(self, update: Update, context: Context) -> None:
        """Done, snooze or cancel one reminder; the list is redrawn."""
        query, caller = query_of(update), caller_of(update)
        action = render.ReminderAction.parse(query.data or "")
        if action is None or await refuse_stranger(query, action.owner_id, caller.locale):
            return
        if action.action == "rs":
            item = await self._call(self.commands.snooze_reminder, caller, action.reminder_id,
                                    render.SNOOZE_MINUTES)
        else:
            method = self.commands.complete_reminder if action.action == "rd" else self.commands.cancel_reminder
            item = await self._call(method, caller, action.reminder_id)
        items = await self._call(self.commands.list_reminders, caller)
        await edit_answer(query, texts.reminders_text(items, caller.locale),
                          render.reminders_keyboard(items, action.owner_id, caller.locale))
        await query.answer(render.fit_message(texts.reminder_updated_text(item, caller.locale), 200))

    async def export(self, update: Update, context: Context) -> None:
        """``/export``: all of the user's data as a JSON document, in private."""
        exported = await self._call(self.commands.export_data, caller_of(update))
        await answer_privately(update, context, document=exported)

    async def import_file(self, update: Update, context: Context) -> None:
        """An export file sent with the caption ``/import``, or ``/import`` replying to one."""
        message, caller = message_of(update), caller_of(update)
        replied = message.reply_to_message
        document = message.document or (replied.document if replied is not None else None)
        if document is None:
            await answer_privately(update, context, render.text("import_usage", caller.locale))
            return
        if (document.file_size or 0) > MAX_IMPORT_BYTES:  # refused before downloading it
            raise InvalidCommand("import_too_large", limit_mb=MAX_IMPORT_BYTES // (1024 * 1024))
        data = await (await document.get_file()).download_as_bytearray()
        report = await self._call(self.commands.import_data, caller, bytes(data))
        await answer_privately(update, context, texts.import_report_text(report, caller.locale))

    async def pause(self, update: Update, context: Context) -> None:
        """``/pause``: stop remembering new things."""
        caller = caller_of(update)
        await self._call(self.commands.pause, caller)
        await answer_privately(update, context, texts.paused_text(True, caller.locale))

    async def resume(self, update: Update, context: Context) -> None:
        """``/resume``: remember again."""
        caller = caller_of(update)
        await self._call(self.commands.resume, caller)
        await answer_privately(update, context, texts.paused_text(False, caller.locale))

    async def panel(self, update: Update, context: Context) -> None:
        """``/panel``: a one-time sign-in link to the web panel, in the private chat, without a preview."""
        caller = caller_of(update)
        link = await self._call(self.commands.panel_link, caller)
        await answer_privately(update, context, texts.panel_link_text(link, caller.locale), no_preview=True)

    async def usage(self, update: Update, context: Context) -> None:
        """``/usage``: today, 7 and 30 days, and what is left of today's allowance, in private."""
        caller = caller_of(update)
        report = await self._call(self.commands.usage, caller)
        await answer_privately(update, context, usage_texts.user_usage_text(report, caller.locale))

    async def followups(self, update: Update, context: Context) -> None:
        """``/followups on|off|list|quiet 22-9``: consent to follow-ups, quiet hours, the open threads. In a
        group, ``/followups group on|off`` is the group's switch, answered in the group: its admins change it."""
        caller, argument = caller_of(update), command_argument(message_of(update))
        if about_the_group(argument) and caller.chat_kind != "private":
            admin = await group_admin(update, context)
            group = await self._call(self.commands.group_followups, caller, argument or "", admin=admin)
            await message_of(update).reply_text(followup_texts.group_text(group, caller.locale))
            return
        state = await self._call(self.commands.followups, caller, argument)
        await answer_privately(update, context, followup_texts.settings_text(state, caller.locale))

    async def timezone(self, update: Update, context: Context) -> None:
        """``/timezone [zone]``: the user's time zone, or a new one (a city, an IANA name, an offset)."""
        caller = caller_of(update)
        change = await self._call(self.commands.timezone, caller, command_argument(message_of(update)))
        await answer_privately(update, context, zone_texts.zone_text(change, caller.locale, self.commands.clock()))

    async def chat_migrated(self, update: Update, _context: Context) -> None:
        """A group became a supergroup: record its new id, so its reminders still reach it."""
        message = update.effective_message
        if message is not None and message.migrate_to_chat_id is not None:
            await asyncio.to_thread(record_chat_move, self.commands.uow_factory, "telegram", str(message.chat_id),
                                    str(message.migrate_to_chat_id))

    async def link(self, update: Update, context: Context) -> None:
        """``/link``: a one-time code for the other platform; ``/link <code>``: use one (nothing is joined yet);
        ``/link confirm <code>``: join the account that asked; ``/link unlink``."""
        caller, code = caller_of(update), command_argument(message_of(update))
        if code.lower() == "unlink":
            await self.unlink(update, context)
            return
        if not code:
            issued = await self._call(self.commands.link_code, caller)
            await answer_privately(update, context, texts.link_code_text(issued, caller.locale))
            return
        if (confirming := confirmation_code(code)) is not None:
            joined = await self._call(self.commands.confirm_link, caller, confirming)
            await answer_privately(update, context, texts.linked_text(joined, caller.locale))
            return
        request = await self._call(self.commands.link, caller, code)
        await answer_privately(update, context, texts.link_request_text(request, caller.locale))

    async def unlink(self, update: Update, context: Context) -> None:
        """``/unlink``: this Telegram identity gets a user of its own again."""
        caller = caller_of(update)
        await self._call(self.commands.unlink, caller)
        await answer_privately(update, context, texts.unlinked_text(caller.locale))
