"""Mnemo's words in Discord's shapes: 2000-character messages, one italic warning line, plain text
from a message with the bot's mention taken out, a jump link to a remembered message, and the
command descriptions in English with Chinese localizations.

No client and no network here, so every rule is tested on its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import discord
from discord import app_commands
from discord.utils import escape_markdown

from shared.commands.table import Frontend, commands_on
from shared.commands.texts import DESCRIPTIONS as COMMAND_DESCRIPTIONS
from shared.conversation.messages import Reply
from shared.conversation.notice_texts import notices_text
from shared.conversation.warning_texts import TurnWarning, warning_text
from shared.delivery.limits import DISCORD_CONTENT_LIMIT

DISCORD_MESSAGE_LIMIT = DISCORD_CONTENT_LIMIT
WARNING_LINE_LIMIT = 200
JUMP_URL = "https://discord.com/channels/{where}/{channel}/{message}"
DESCRIPTION_LIMIT = 100
CHINESE_LOCALES = frozenset({discord.Locale.chinese, discord.Locale.taiwan_chinese})
# Discord-only strings of the command menu (English, Chinese); the commands' own descriptions come
# from shared.commands.texts.DESCRIPTIONS, which every front-end shows.
_MENU_TEXTS = {
    "memories_restore.memory_id": ("The memory's number, as /memories_forgotten shows it",
                                   "记忆编号（/memories_forgotten 里显示的）"),
    "memories.type": ("Only memories of this kind", "只看这一类记忆"),
    "memories.search": ("Only memories containing these words", "只看包含这些词的记忆"),
    "memories.page": ("Which page", "第几页"),
    "memories_why.memory_id": ("The memory's number, as /memories shows it", "记忆编号（/memories 里显示的）"),
    "forget.target": ('A memory number, some words, or "all"', "记忆编号、关键词，或 all（全部）"),
    "remember.text": ("What to remember", "要记住的内容"),
    "remind.when": ('When, e.g. "tomorrow 9am" or "in 2 hours"', "什么时候，例如「明天早上9点」「两小时后」"),
    "remind.what": ("What to remind you of", "提醒什么"),
    "reminder.id": ("The reminder's number, as /reminders shows it", "提醒编号（/reminders 里显示的）"),
    "snooze.minutes": ("Minutes from now or from when it is due, if later (10 if not given)",
                       "从现在或原定时间（取较晚者）起推迟的分钟数（默认 10）"),
    "import.file": ("A JSON file made by /export", "由 /export 导出的 JSON 文件"),
    "followups.action": ('on, off, list, "quiet 22-9" (your quiet hours); in a channel you manage: "group on"',
                         "on、off、list、\"quiet 22-9\"（你的安静时段）；你管理的频道里：\"group on\""),
    "timezone.zone": ('A city, an IANA name or an offset ("Seattle", "Asia/Shanghai", "UTC+8"); "default" resets',
                      "城市、IANA 名称或时差（「杭州」「Asia/Shanghai」「UTC+8」）；default 恢复默认"),
    "link.code": ("The code from your other account, or confirm <code> (leave empty to get one)",
                  "另一个账号给出的代码，或 confirm <代码>（留空则生成一个）"),
    "type.preference": ("preference", "偏好"), "type.fact": ("fact", "事实"), "type.event": ("event", "事件"),
    "type.person": ("person", "人物"), "type.todo": ("to-do", "待办"), "type.pattern": ("pattern", "习惯"),
    "type.rule": ("rule", "规则"),
    "access.action": ("list, or allow / block / remove a target", "list 查看，或 allow / block / remove 一个对象"),
    "access.kind": ("What the target is", "对象的类型"),
    "access.target": ("Its id (a user: platform:id, or a mention)", "它的编号（用户：平台:编号，或直接 @ 提及）"),
}
_SLASH_NAMES = {command.typed: command.name for command in commands_on(Frontend.DISCORD) if command.typed}
"""``memories why`` → ``memories_why``: how the text front-ends type a command that is its own on Discord."""
_TYPED_COMMAND = re.compile(r"/(" + "|".join(map(re.escape, _SLASH_NAMES)) + r")\b", re.I)
# Where a long text may be cut, best first; a cut is only taken in the second half of the window.
_USER_MENTION = re.compile(r"<@!?(?P<user_id>\d{1,20})>(?P<space>\s*)")
"""A user's mention as Discord writes it (``<@123>``, ``<@!123>``); a snowflake has at most 20 digits."""
_BREAKS = ("\n\n", "\n", "。", "！", "？", ". ", "! ", "? ", "；", "; ", "，", ", ", " ")


def split_message(text: str, limit: int = DISCORD_MESSAGE_LIMIT) -> list[str]:
    """``text`` in pieces of at most ``limit`` characters, cut at paragraphs, lines or sentences."""
    pieces: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        window = rest[:limit]
        cut = _best_cut(window)
        piece, rest = rest[:cut].rstrip(), rest[cut:].lstrip()
        if piece:
            pieces.append(piece)
    if rest:
        pieces.append(rest)
    return pieces


def _best_cut(window: str) -> int:
    floor = len(window) // 2
    for separator in _BREAKS:
        at = window.rfind(separator, floor)
        if at != -1:
            return at + len(separator)
    return len(window)


def fit(text: str, limit: int = DISCORD_MESSAGE_LIMIT) -> str:
    """``text`` shortened to one message (for edits, which cannot become two messages)."""
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def warning_line(warnings: Iterable[TurnWarning], chinese: bool = False) -> str | None:
    """The reply's warnings (offline, context cut, …) as one short italic line in the reply's language, or None."""
    shown = [warning_text(warning, chinese).rstrip(".。") for warning in dict.fromkeys(warnings)]
    if not shown:
        return None
    line = fit(" · ".join(shown), WARNING_LINE_LIMIT)
    return f"*⚠ {escape_markdown(line)}*"


def reply_messages(reply: Reply, limit: int = DISCORD_MESSAGE_LIMIT) -> list[str]:
    """The messages to post for a reply: none for a duplicate, else the text (split), its notice and warnings (in
    the language of the message)."""
    if reply.duplicate or not reply.text.strip():
        return []
    lines = [reply.text.strip()]
    if (notice := notices_text(reply.notices, reply.language.chinese)) is not None:
        lines.append(f"*{escape_markdown(notice)}*")
    if (warnings := warning_line(reply.warnings, reply.language.chinese)) is not None:
        lines.append(warnings)
    return split_message("\n".join(lines), limit)


def plain_text(content: str, bot_id: int, names: Mapping[int, str]) -> str:
    """The message as the user meant it: the bot's mention removed, other users' mentions as @names."""
    def shown(match: re.Match[str]) -> str:
        user_id = int(match["user_id"])
        return "" if user_id == bot_id else "@" + names.get(user_id, "someone") + match["space"]
    return _USER_MENTION.sub(shown, content).strip()


def jump_url(guild_id: int | None, channel_id: str, message_id: str) -> str:
    """The link to a message: in a server channel, or ``@me`` for a direct message."""
    return JUMP_URL.format(where=guild_id if guild_id is not None else "@me", channel=channel_id, message=message_id)


def slash_spelling(text: str) -> str:
    """``text`` with the commands the shared texts spell as the text front-ends type them (``/memories restore``)
    spelled as Discord's slash commands (``/memories_restore``), from :mod:`shared.commands.table`."""
    return _TYPED_COMMAND.sub(lambda found: "/" + _SLASH_NAMES[found[1].lower()], text)


def command_text(key: str) -> app_commands.locale_str:
    """A command-menu string (``"<command>.description"``, ``"<command>.<parameter>"``, ``"type.<kind>"``)
    in English, carrying its Chinese for :class:`CommandTranslator`."""
    english, chinese = _menu_text(key)
    return app_commands.locale_str(english[:DESCRIPTION_LIMIT], zh=chinese[:DESCRIPTION_LIMIT])


def _menu_text(key: str) -> tuple[str, str]:
    name, _, field = key.partition(".")
    if field == "description":
        return COMMAND_DESCRIPTIONS[name]
    return _MENU_TEXTS[key]


class CommandTranslator(app_commands.Translator):
    """Gives Discord the Chinese of every command string (zh-CN and zh-TW); English otherwise."""

    async def translate(self, string: app_commands.locale_str, locale: discord.Locale,
                        context: app_commands.TranslationContextTypes) -> str | None:
        return string.extras.get("zh") if locale in CHINESE_LOCALES else None
