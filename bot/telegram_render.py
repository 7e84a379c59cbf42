"""How Mnemo's answers look on Telegram: replies split at the message limit with one italic note,
inline keyboards and their callback data, message links, and the few texts only Telegram needs.

Everything here is pure: it builds python-telegram-bot objects but never calls the Bot API.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from telegram import InlineKeyboardButton, InlineKeyboardMarkup, MessageEntity

from shared.commands.service import MemoryPage, ReminderItem
from shared.conversation.messages import Reply
from shared.conversation.notice_texts import notices_text
from shared.conversation.warning_texts import CONTEXT_CUT, OFFLINE_REASONS, WarningCode, warning_text
from shared.delivery.limits import TELEGRAM_TEXT_LIMIT
from shared.text import is_chinese

TEXT_LIMIT = TELEGRAM_TEXT_LIMIT
CALLBACK_DATA_LIMIT = 64  # Bot API: bytes of an inline button's callback_data
SNOOZE_MINUTES = 10
MAX_REMINDER_BUTTON_ROWS = 10
_PAGE_DATA = re.compile(r"mp:(\d{1,20}):(\d{1,6}):([a-z]*):(.*)", re.DOTALL)
_REMINDER_DATA = re.compile(r"(rd|rs|rc):(\d{1,20}):(\d{1,20})")
_SUPERGROUP_ID = re.compile(r"-100\d+")
_BREAKS = ("\n\n", "\n", "。", "！", "？", ". ", "! ", "? ", "；", "; ", "，", ", ", " ")

# Texts only the Telegram front-end shows: (English, Chinese). Command answers come from command_texts.
TEXTS: dict[str, tuple[str, str]] = {
    "greeting": ("Hi {name}! I'm {bot}. Talk to me like a friend: I remember what matters to you, "
                 "and you can always see and erase it.",
                 "你好，{name}！我是 {bot}。像朋友一样跟我聊天吧：我会记住对你重要的事，你随时可以查看和删除。"),
    "start_private_first": ("Please /start me in a private chat first, then try again.",
                            "请先在私聊中给我发送 /start，然后再试一次。"),
    "failed": ("Sorry, something went wrong. Please try again in a moment.", "抱歉，出了点问题，请稍后再试。"),
    "not_yours": ("This button is not for you.", "这个按钮不是给你的。"),
    "previous": ("‹ Previous", "‹ 上一页"),
    "next": ("Next ›", "下一页 ›"),
    "search_too_long_for_pages": ("(Search words too long for page buttons: use fewer words to page.)",
                                  "（搜索词太长，无法翻页；请用更短的关键词。）"),
    "note_offline": ("offline mode: a simple reply without the language model",
                     "离线模式：这是未经语言模型的简单回复"),
    "note_context_cut": ("part of the context was left out to fit", "部分上下文因长度限制被省略"),
    "import_usage": ("Send your export file as a document with the caption /import, or reply /import to it.",
                     "请把导出的文件作为文档发送并附上说明 /import，或回复该文件 /import。"),
    "button_done": ("✓ #{id}", "✓ #{id}"),
    "button_snooze": ("+{minutes} min #{id}", "+{minutes} 分钟 #{id}"),
    "button_cancel": ("✕ #{id}", "✕ #{id}"),
}


def text(key: str, locale: str | None, **params: object) -> str:
    english, chinese = TEXTS[key]
    return (chinese if is_chinese(locale) else english).format(**params)


def utf16_len(value: str) -> int:
    """Length as Telegram counts it (entity offsets and the message limit are in UTF-16 code units)."""
    return len(value.encode("utf-16-le")) // 2


def _fitting_prefix(value: str, limit: int) -> int:
    """How many characters of ``value`` fit in ``limit`` UTF-16 code units."""
    used = 0
    for index, char in enumerate(value):
        used += 2 if ord(char) > 0xFFFF else 1
        if used > limit:
            return index
    return len(value)


def split_message(value: str, limit: int = TEXT_LIMIT) -> list[str]:
    """Parts of at most ``limit``, cut at a paragraph, line, sentence or word boundary when one is near."""
    parts, rest = [], value.strip()
    while utf16_len(rest) > limit:
        window = rest[:_fitting_prefix(rest, limit)]
        cut = next((window.rfind(mark) + len(mark) for mark in _BREAKS if window.rfind(mark) > len(window) // 2),
                   len(window))
        parts.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    return [part for part in [*parts, rest] if part]


def fit_message(value: str, limit: int = TEXT_LIMIT) -> str:
    """One message: cut with an ellipsis when too long (an edited message cannot be split)."""
    return value if utf16_len(value) <= limit else value[:_fitting_prefix(value, limit - 1)] + "…"


@dataclass(frozen=True)
class OutgoingText:
    """One message to send: its text and formatting entities."""

    text: str
    entities: tuple[MessageEntity, ...] = ()


def reply_note(reply: Reply) -> str | None:
    """The one short line under a reply: its notice, offline mode (not why), context that was cut, and the other
    warnings (a reminder that could not be set, remembering paused), in the language of the message."""
    locale = reply.language.value
    notice = notices_text(reply.notices, reply.language.chinese)
    notes = [notice] if notice else []
    codes = {warning.code for warning in reply.warnings}
    if reply.offline:
        notes.append(text("note_offline", locale))
    if codes & CONTEXT_CUT:
        notes.append(text("note_context_cut", locale))
    summed_up = CONTEXT_CUT | OFFLINE_REASONS | {WarningCode.OFFLINE}
    notes += [warning_text(warning, reply.language.chinese).rstrip(".。") for warning in dict.fromkeys(reply.warnings)
              if warning.code not in summed_up]
    return " · ".join(notes) or None


def reply_messages(reply: Reply) -> list[OutgoingText]:
    """The reply as Telegram messages; the note, in italics, ends the last one (or follows it)."""
    messages = [OutgoingText(part) for part in split_message(reply.text)]
    note = reply_note(reply)
    if note is None:
        return messages
    last = messages.pop().text + "\n\n" if messages else ""
    if utf16_len(last + note) > TEXT_LIMIT:
        messages.append(OutgoingText(last.rstrip()))
        last = ""
    italic = MessageEntity(MessageEntity.ITALIC, offset=utf16_len(last), length=utf16_len(note))
    return [*messages, OutgoingText(last + note, (italic,))]


@dataclass(frozen=True)
class PageRequest:
    """A page of /memories, carried by a paging button: ``mp:<owner>:<page>:<type>:<search>``."""

    owner_id: int
    page: int
    type_: str | None
    search: str | None

    PREFIX = "mp"

    def data(self) -> str | None:
        """The callback data, or None when the search words do not fit in Telegram's 64 bytes."""
        value = f"{self.PREFIX}:{self.owner_id}:{self.page}:{self.type_ or ''}:{self.search or ''}"
        return value if len(value.encode()) <= CALLBACK_DATA_LIMIT else None

    @classmethod
    def parse(cls, data: str) -> PageRequest | None:
        found = _PAGE_DATA.fullmatch(data)
        if found is None:
            return None
        return cls(int(found[1]), int(found[2]), found[3] or None, found[4] or None)


@dataclass(frozen=True)
class ReminderAction:
    """A reminder button: ``rd`` done, ``rs`` snooze, ``rc`` cancel — ``<action>:<owner>:<reminder id>``."""

    action: str
    owner_id: int
    reminder_id: int

    def data(self) -> str:
        return f"{self.action}:{self.owner_id}:{self.reminder_id}"

    @classmethod
    def parse(cls, data: str) -> ReminderAction | None:
        found = _REMINDER_DATA.fullmatch(data)
        return cls(found[1], int(found[2]), int(found[3])) if found else None


def memory_page_keyboard(page: MemoryPage, owner_id: int, locale: str | None) -> InlineKeyboardMarkup | None:
    """Previous/next buttons for a page of memories (None when there is only one page)."""
    buttons = []
    for key, number in (("previous", page.page - 1), ("next", page.page + 1)):
        if 1 <= number <= page.pages:
            data = PageRequest(owner_id, number, page.type_filter, page.search).data()
            if data is None:
                return None
            buttons.append(InlineKeyboardButton(text(key, locale), callback_data=data))
    return InlineKeyboardMarkup([buttons]) if buttons else None


def pages_need_shorter_search(page: MemoryPage, owner_id: int) -> bool:
    """True when there are more pages but the search words are too long to carry in a button."""
    return page.pages > 1 and PageRequest(owner_id, page.pages, page.type_filter, page.search).data() is None


def confirmation_keyboard(token: str, labels: tuple[str, str]) -> InlineKeyboardMarkup:
    """Yes / No for a pending confirmation: ``cf:<token>`` confirms, ``cx:<token>`` cancels."""
    yes, no = labels
    return InlineKeyboardMarkup([[InlineKeyboardButton(yes, callback_data=f"cf:{token}"),
                                  InlineKeyboardButton(no, callback_data=f"cx:{token}")]])


def reminders_keyboard(items: tuple[ReminderItem, ...], owner_id: int,
                       locale: str | None) -> InlineKeyboardMarkup | None:
    """Done / snooze / cancel buttons, one row per pending reminder (the first few)."""
    rows = []
    for item in items[:MAX_REMINDER_BUTTON_ROWS]:
        rows.append([InlineKeyboardButton(text(key, locale, id=item.id, minutes=SNOOZE_MINUTES),
                                          callback_data=ReminderAction(action, owner_id, item.id).data())
                     for key, action in (("button_done", "rd"), ("button_snooze", "rs"), ("button_cancel", "rc"))])
    return InlineKeyboardMarkup(rows) if rows else None


def message_link(platform: str | None, chat_id: str | None, message_id: str | None) -> str | None:
    """``https://t.me/c/…`` for a message in a supergroup; private chats and basic groups have no links."""
    if platform != "telegram" or not chat_id or not message_id or not message_id.isdigit():
        return None
    if not _SUPERGROUP_ID.fullmatch(chat_id):
        return None
    return f"https://t.me/c/{chat_id.removeprefix('-100')}/{message_id}"
