"""Every word the memory commands show a user, in Chinese and English.

A locale starting with ``zh`` gets Chinese, anything else English. Front-ends render the results
of :mod:`shared.commands.service` with these functions, so Discord, Telegram and the console say
the same thing. Plain text only: escaping for a platform's markup is the adapter's job.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from shared.commands.table import menu
from shared.db.kinds import TodoKind, TodoStatus
from shared.memory.policy import BIN_LIFETIME
from shared.reminders.zone_texts import default_zone_text
from shared.text import is_chinese

DESCRIPTIONS: dict[str, tuple[str, str]] = {
    "memories": ("What I remember about you: /memories [type] [search]",
                 "我记得的关于你的事：/memories [类型] [关键词]"),
    "forget": ("Forget a memory, a search's matches, or all", "删除一条记忆、搜索到的记忆或全部"),
    "remember": ("Tell me something to remember", "让我记住一件事"),
    "reminders": ("Your pending reminders", "查看待提醒事项"),
    "remind": ("Set a reminder: /remind tomorrow 9am call mom", "设置提醒：/remind 明天早上9点 开会"),
    "done": ("Mark a reminder done: /done 4", "把提醒标记为完成：/done 4"),
    "snooze": ("Remind me again later: /snooze 4 [minutes, 10 if not given]",
               "稍后再提醒：/snooze 4 [分钟数，默认 10]"),
    "cancel": ("Cancel a reminder: /cancel 4", "取消提醒：/cancel 4"),
    "timezone": ("Your time zone: /timezone Asia/Shanghai, a city, or UTC+8",
                 "你的时区：/timezone 上海、城市名或 UTC+8"),
    "followups": ("Let me ask how things went: /followups on, off, list, quiet 22-9 (a group's admins: group on)",
                  "事后问问你进展如何：/followups on、off、list、quiet 22-9（群管理员：group on）"),
    "export": ("Download all your data as a JSON file", "把你的全部数据导出为 JSON 文件"),
    "import": ("Restore your data from an export file", "从导出文件恢复你的数据"),
    "pause": ("Stop remembering new things", "暂停记住新内容"),
    "resume": ("Start remembering again", "恢复记忆"),
    "link": ("Join your Discord and Telegram accounts", "关联你的 Discord 和 Telegram 账号"),
    "panel": ("A sign-in link to your memories on the web", "获取网页记忆面板的登录链接"),
    "usage": ("What you used today, in 7 and in 30 days (and what is left)",
              "你今天、近 7 天和近 30 天的用量（及剩余额度）"),
    "help": ("What I can do", "我能做什么"),
    "memories_why": ("Where a memory came from", "这条记忆从哪里来"),
    "memories_forgotten": ("What I set aside after long disuse (restorable for 30 days)",
                           "因久未提起而放进回收站的记忆（30 天内可找回）"),
    "memories_restore": ("Bring a memory back from the recycle bin", "从回收站找回一条记忆"),
    "unlink": ("Separate this account from a linked one", "解除与另一个账号的关联"),
    "access": ("Operators only: who may talk to me", "仅限运营者：谁可以和我聊天"),
    "more": ("The next page of /memories", "/memories 的下一页"),
    "start": ("Say hello and show what I can do", "打招呼并列出我能做的事"),
}
"""What each command of :data:`shared.commands.table.COMMANDS` is for (English, Chinese), by its name."""
COMMANDS: tuple[tuple[str, str, str], ...] = tuple((command.name, *DESCRIPTIONS[command.name]) for command in menu())
"""The commands ``/help`` and the platforms' menus list: name, English, Chinese."""
LIST_CONTENT_CHARS = 200
QUOTE_CHARS = 300
PARAM_CHARS = 60
REPORT_LINES = 10
WHOLE_PARAMS = frozenset({"what", "path", "cwd"})
"""Error parameters shown up to ``QUOTE_CHARS``, not ``PARAM_CHARS``: a reminder's words to send again, a path."""

_SOURCES = {"user_stated": ("conversation", "对话"), "inferred": ("inferred", "推断"), "system": ("system", "系统"),
            "manual": ("manual", "手动"), "imported": ("import", "导入"), "operator": ("operator", "运营者"),
            "remembered": ("/remember", "/remember")}
_STATUSES: dict[str, tuple[str, str]] = {TodoStatus.PENDING: ("pending", "待提醒"), TodoStatus.SENT: ("sent", "已发送"),
             TodoStatus.DONE: ("done", "已完成"), TodoStatus.CANCELLED: ("cancelled", "已取消")}
_SECTIONS = (("memories", "memory", "记忆"), ("episodes", "summary", "摘要"), ("todos", "reminder", "提醒"),
             ("turns", "message", "聊天记录"), ("profile", "profile", "档案"))
_WEEKDAYS_ZH = "一二三四五六日"
_PLATFORMS = {"discord": "Discord", "telegram": "Telegram", "console": "console"}

ERRORS: dict[str, tuple[str, str]] = {
    "followups_usage": ("Use /followups on, /followups off, /followups list or /followups quiet 22-9 (in a group, "
                        "its admins: /followups group on or off).",
                        "用法：/followups on、/followups off、/followups list 或 /followups quiet 22-9"
                        "（群管理员在群里：/followups group on 或 off）。"),
    "followups_group_where": ("/followups group is the switch of a group: send it in the group (its admins turn "
                              "follow-ups on or off there).",
                              "/followups group 是群的开关：请在群里发送（由群管理员开启或关闭）。"),
    "followups_group_admin": ("Only this group's admins can turn its follow-ups on or off.",
                              "只有本群管理员可以开启或关闭本群的回访。"),
    "followups_quiet_hours": ("Quiet hours are two hours of the day, from-until, e.g. /followups quiet 22-9.",
                              "安静时段请写成两个整点，从-到，例如 /followups quiet 22-9。"),
    "bad_caller": ("I couldn't tell who you are. Please try again.", "无法识别你的身份，请重试。"),
    "too_long": ("That's too long: at most {limit} characters, please.", "太长了，最多 {limit} 个字符。"),
    "control_characters": ("That contains control characters I can't use. Please retype it.",
                           "内容里有无法使用的控制字符，请重新输入。"),
    "invisible_text": ("That has only invisible characters (spaces, zero-width or direction marks, fillers, "
                       "marks with nothing to sit on). Please type some words.",
                       "内容只有不可见的字符（空白、零宽字符、方向控制符、填充符或单独的组合符号），请输入文字。"),
    "bad_id": ("That isn't a valid number. Use the number shown in front of an item in its list (# and digits).",
               "编号无效，请使用列表里每一项前面显示的编号（# 加数字）。"),
    "which_reminder": ("Which reminder? Give its number, e.g. /{command} {example}. Open reminders: {ids} "
                       "(/reminders lists them).",
                       "哪一个提醒？请给出编号，例如 /{command} {example}。待提醒的有：{ids}（/reminders 可以查看）。"),
    "no_open_reminders": ("You have no open reminders, so there is none to name. /reminders lists them; "
                          "/remind tomorrow 9am call mom sets one.",
                          "你现在没有待提醒的事项，所以没有可以指定的编号。/reminders 可以查看，"
                          "/remind 明天早上9点 开会 可以新建一个。"),
    "bad_page": ("That page doesn't exist.", "没有这一页。"),
    "page_not_number": ("A page is a number from 1, e.g. /memories forgotten 2.",
                        "页码是从 1 开始的数字，例如 /memories forgotten 2。"),
    "search_empty": ("The search words are empty.", "搜索关键词是空的。"),
    "unknown_type": ("Unknown type. Use one of: {types}.", "未知类型，可选：{types}。"),
    "remember_empty": ("What should I remember? For example: /remember preference: oolong tea",
                       "要我记住什么？例如：/remember 偏好：喜欢乌龙茶"),
    "forget_empty": ("What should I forget? Give a number (#12), search words, or all.",
                     "要删除什么？请给出编号（#12）、关键词或 all。"),
    "forget_no_match": ("No memory and nothing we said matches “{search}”.",
                        "没有找到包含「{search}」的记忆或对话。"),
    "forget_too_many": ("{count} memories or exchanges match, more than {limit}. Narrow the search, or use "
                        "/forget all.",
                        "有 {count} 条记忆或对话匹配，超过了 {limit} 条。请缩小范围，或使用 /forget all。"),
    "memory_not_found": ("I can't find that memory.", "找不到这条记忆。"),
    "memory_not_in_bin": ("That memory is not among the forgotten ones (see /memories forgotten).",
                          "回收站里没有这条记忆（见 /memories forgotten）。"),
    "reminder_not_found": ("I can't find that reminder.", "找不到这个提醒。"),
    "reminder_empty": ("When, and what? For example: /remind tomorrow 9am call mom",
                       "什么时候提醒什么？例如：/remind 明天早上9点 开会"),
    "reminder_no_time": ("I couldn't find a time in that. Try “tomorrow 9am call mom” or “in 20 minutes stretch”.",
                         "没看懂时间。试试「明天早上9点 开会」或「20分钟后 休息一下」。"),
    "reminder_past": ("“{when}” has already passed, so nothing was set. Send it again with a time ahead: "
                      "/remind <when> {what}",
                      "「{when}」已经过去了，没有设置提醒。请换一个将来的时间再发：/remind <时间> {what}"),
    "zone_unknown": ("I don't know the time zone “{what}”. Try a city (Shanghai, Seattle), an IANA name "
                     "(Asia/Shanghai) or an offset (UTC+8, UTC-5:30).",
                     "不认识「{what}」这个时区。试试城市名（上海、西雅图）、IANA 名称（Asia/Shanghai）"
                     "或时差（UTC+8、UTC-5:30）。"),
    "zone_several": ("{place} has several time zones: name a city, e.g. /timezone {cities}.",
                     "{place}有好几个时区，请说一个城市，例如 /timezone {cities}。"),
    "reminder_out_of_range": ("I can't keep a reminder for “{when}”: pick a time between 1970 and 9998.",
                              "无法设置「{when}」的提醒：请选 1970 年到 9998 年之间的时间。"),
    "blocked_adding": ("Your account is blocked here: nothing can be added to what is kept. You can still see, "
                       "export and delete it.",
                       "你的账号已被屏蔽：不能再添加内容。你仍然可以查看、导出和删除已保存的内容。"),
    "snooze_out_of_range": ("I can't snooze it that far: a reminder's time stays between 1970 and 9998.",
                            "不能推迟到那么晚：提醒的时间只能在 1970 年到 9998 年之间。"),
    "reminder_no_content": ("Remind you of what? Add a few words after the time.",
                            "要提醒什么呢？请在时间后面写上内容。"),
    "reminder_not_pending": ("That reminder is already {status}.", "这个提醒{status}。"),
    "too_many_reminders": ("You have {limit} pending reminders, the most I keep. Cancel some first.",
                           "你已有 {limit} 个待提醒事项，已到上限。请先取消一些。"),
    "bad_minutes": ("Snooze for {low} to {high} minutes.", "稍后提醒的时间须在 {low} 到 {high} 分钟之间。"),
    "import_empty": ("Please attach an export file (JSON).", "请附上导出文件（JSON）。"),
    "import_no_path": ("Which file? /import <path of an export file> (a relative path starts at {cwd}).",
                       "导入哪个文件？/import <导出文件的路径>（相对路径从 {cwd} 算起）。"),
    "import_not_found": ("There is no file at {path}. Check the path (a relative one starts at {cwd}).",
                         "找不到文件 {path}。请检查路径（相对路径从 {cwd} 算起）。"),
    "import_unreadable": ("I can't read {path}: {reason}.", "无法读取 {path}：{reason}。"),
    "import_too_large": ("That file is larger than {limit_mb} MB.", "文件超过了 {limit_mb} MB。"),
    "import_too_many": ("That file holds {count} entries; one import takes at most {limit}. Split it, please.",
                        "文件里有 {count} 项，一次最多导入 {limit} 项，请拆分后再导入。"),
    "import_not_json": ("That file isn't valid JSON.", "这个文件不是有效的 JSON。"),
    "import_wrong_format": ("That isn't a Mnemo export file.", "这不是 Mnemo 的导出文件。"),
    "import_wrong_version": ("Export version {version} isn't supported.", "不支持版本为 {version} 的导出文件。"),
    "link_code_format": ("A link code has {length} letters and digits, like K7M2QX9P.",
                         "关联代码由 {length} 位字母和数字组成，例如 K7M2QX9P。"),
    "link_code_invalid": ("That code is unknown, used, expired or not for this account. Start again with /link.",
                          "这个代码无效、已使用、已过期或不属于这个账号。请用 /link 重新开始。"),
    "link_too_many_tries": ("Too many wrong codes ({limit}). Try again within {minutes} minutes at most.",
                            "错误代码次数过多（{limit} 次），请最多 {minutes} 分钟后再试。"),
    "link_self": ("That code belongs to this account. Send it from your other account.",
                  "这个代码就是本账号的，请在另一个账号上发送。"),
    "link_same_platform": ("That account already has a {platform} account linked; one per platform.",
                           "对方已关联了一个 {platform} 账号，每个平台只能关联一个。"),
    "link_unlink_first": ("This account is already linked to another one. Use /link unlink first.",
                          "这个账号已经关联了其他账号，请先使用 /link unlink。"),
    "unlink_only_identity": ("This account isn't linked to any other.", "这个账号没有关联其他账号。"),
    "confirmation_invalid": ("This confirmation is no longer valid (expired or already used). Please ask again.",
                             "这个确认已失效（过期或已使用），请重新操作。"),
    "bad_key": ("A key is 1 to {limit} characters without control characters.",
                "键名须为 1 到 {limit} 个字符，且不含控制字符。"),
    "bad_confidence": ("Confidence is a number from 0 to 1.", "置信度须为 0 到 1 之间的数字。"),
    "bad_value": ("The value must be JSON of at most {limit} bytes, without NUL characters.",
                  "值必须是不超过 {limit} 字节的 JSON，且不含 NUL 字符。"),
    "too_many_writes": ("You're saving things faster than I can keep up with: try again in {seconds} s.",
                        "你保存得太快了，请 {seconds} 秒后再试。"),
    "too_many_ids": ("Give 1 to {limit} ids at a time.", "一次请给出 1 到 {limit} 个编号。"),
    "session_not_found": ("There is no such conversation session.", "没有这个会话。"),
    "round_not_found": ("I can't find that exchange of ours.", "找不到这段对话。"),
    "user_not_found": ("There is no such user.", "没有这个用户。"),
    "panel_link_invalid": ("This sign-in link is unknown, used or expired. Send /panel for a new one.",
                           "这个登录链接无效、已使用或已过期。请发送 /panel 获取新链接。"),
    "not_found": ("I can't find that.", "找不到。"),
    "unexpected": ("Something went wrong. Please try again.", "出了点问题，请重试。"),
    "database_unavailable": ("My memory store can't be reached right now, so nothing was changed. Please try "
                             "again in a minute.", "我的记忆库暂时连不上，什么都没有改动。请过一会儿再试。"),
    "access_operators_only": ("Only the operators of this bot can change who may talk to it.",
                              "只有这个机器人的运营者可以修改谁能和它聊天。"),
    "access_usage": ("Use /access list, or /access allow|block|remove <user|chat|guild|channel|role> <id>; a user is "
                     "platform:id (telegram:42) or an id on this platform.",
                     "用法：/access list，或 /access allow|block|remove <user|chat|guild|channel|role> <编号>；"
                     "用户写作 平台:编号（telegram:42），或本平台的编号。"),
    "access_bad_target": ("That isn't a {kind} id on {platforms}: digits, and a user as platform:id.",
                          "这不是 {platforms} 上的 {kind} 编号：请用数字，用户写作 平台:编号。"),
    "access_in_settings": ("That comes from the setting {setting}: change it there.",
                           "这一条来自设置 {setting}，请在设置里修改。"),
    "access_not_listed": ("That isn't on the allow or the block list.", "它不在允许名单或屏蔽名单里。"),
}


def _pick(locale: str | None, en: str, zh: str) -> str:
    return zh if is_chinese(locale) else en


def help_text(locale: str | None) -> str:
    zh = is_chinese(locale)
    lines = ["我能做的事：" if zh else "What I can do:"]
    lines += [f"/{name} — {described_zh if zh else described_en}" for name, described_en, described_zh in COMMANDS]
    lines.append(_pick(locale, "/remind cancel 4, /remind done 4 and /remind snooze 4 30 work too.",
                       "也可以用 /remind 取消 4、/remind 完成 4、/remind 推迟 4 30。"))
    lines.append(_pick(locale, "/link gives a code; send /link <code> from the other account, then /link confirm "
                               "<second code> back here; /link unlink separates.",
                       "/link 获取代码，在另一个账号发送 /link <代码>，再回到这里发送 /link confirm <第二个代码>；"
                       "/link unlink 解除关联。"))
    lines.append(_pick(locale, "What you tell me stays until you forget it. Passing remarks I have not used for 90 "
                               "days go to a recycle bin for 30 days: /memories forgotten lists them, /memories "
                               "restore <id> brings one back.",
                       "你告诉我的事会一直保留，直到你让我忘掉。90 天没用到的零碎小事会先放进回收站 30 天："
                       "/memories forgotten 查看，/memories restore <编号> 找回。"))
    lines.append(_pick(locale, "Your memories, exports and confirmations are only ever shown to you.",
                       "你的记忆、导出文件和确认按钮只会给你本人看到。"))
    return "\n".join(lines)


def memory_page_text(page: Any, locale: str | None) -> str:
    zh = is_chinese(locale)
    if getattr(page, "forgotten", False):
        return forgotten_page_text(page, locale)
    if not page.items:
        if page.type_filter or page.search:
            return _pick(locale, "No memory matches.", "没有找到匹配的记忆。")
        return _pick(locale, "I don't remember anything about you yet.", "我还没有记住关于你的事。")
    head = f"我记得的关于你的事（共 {page.total} 条）" if zh else f"What I remember about you ({page.total})"
    if page.type_filter:
        head += f" · {'类型' if zh else 'type'} {page.type_filter}"
    if page.search:
        head += f" · {'搜索' if zh else 'search'} {_param(page.search)}"
    footer = f"第 {page.page}/{page.pages} 页" if zh else f"page {page.page}/{page.pages}"
    return "\n".join([head, *(memory_line(item, locale) for item in page.items), footer])


def forgotten_page_text(page: Any, locale: str | None) -> str:
    """``/memories forgotten``: the recycle bin, each line with the day it will be purged."""
    if not page.items:
        return _pick(locale, "Nothing is in the recycle bin: I have forgotten nothing on my own.",
                     "回收站是空的：我没有自己忘掉任何事。")
    zh = is_chinese(locale)
    head = (f"我因为久未提起而放进回收站的记忆（共 {page.total} 条，/memories restore <编号> 可以找回）" if zh else
            f"Memories I set aside after long disuse ({page.total}; /memories restore <id> brings one back)")
    lines = []
    for item in page.items:
        purge = f"{(item.binned_at + BIN_LIFETIME).astimezone(UTC):%Y-%m-%d}" if item.binned_at else "—"
        content = _clip(" ".join(item.content.split()), LIST_CONTENT_CHARS)
        lines.append(f"#{item.id} · {item.type} · {content} · " + (f"{purge} 彻底删除" if zh else f"purged {purge}"))
    footer = f"第 {page.page}/{page.pages} 页" if zh else f"page {page.page}/{page.pages}"
    return "\n".join([head, *lines, footer])


def restored_text(item: Any, locale: str | None) -> str:
    return _pick(locale, f"Restored #{item.id}: {_clip(item.content, LIST_CONTENT_CHARS)}",
                 f"已找回 #{item.id}：{_clip(item.content, LIST_CONTENT_CHARS)}")


def memory_line(item: Any, locale: str | None) -> str:
    """``#12 · preference · 喜欢乌龙茶 · 置信度 0.9 · 用过 3 次 · 上次 2026-11-20 · 来源 对话``."""
    zh = is_chinese(locale)
    last = f"{item.last_accessed.astimezone(UTC):%Y-%m-%d}" if item.last_accessed else "—"
    kind = "remembered" if item.source == "user_stated" and getattr(item, "verified", False) else item.source
    source = _SOURCES.get(kind, (kind, kind))[zh]
    content = _clip(" ".join(item.content.split()), LIST_CONTENT_CHARS)
    if zh:
        details = f"置信度 {_number(item.confidence)} · 用过 {item.access_count} 次 · 上次 {last} · 来源 {source}"
    else:
        times = "time" if item.access_count == 1 else "times"
        details = (f"confidence {_number(item.confidence)} · used {item.access_count} {times} · last {last}"
                   f" · source {source}")
    return f"#{item.id} · {item.type} · {content} · {details}"


def origin_text(origin: Any, locale: str | None, link: str | None) -> str:
    memory = origin.memory
    lines = [f"#{memory.id} · {memory.type} · {_clip(memory.content, QUOTE_CHARS)}"]
    if origin.message_text is not None:
        when = f"{origin.message_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC" if origin.message_at else ""
        quote = _clip(origin.message_text, QUOTE_CHARS)
        lines.append(_pick(locale, f"From your message {when}: “{quote}”", f"来自你 {when} 的消息：「{quote}」"))
    elif memory.source in ("manual", "imported") or getattr(memory, "verified", False):
        lines.append(_pick(locale, "You added this yourself (/remember or an import).",
                           "这是你自己添加的（/remember 或导入）。"))
    else:
        lines.append(_pick(locale, "I no longer have the message this came from.", "原始消息已经不在了。"))
    if link:
        lines.append(link)
    return "\n".join(lines + _fate_lines(origin, locale))


def _fate_lines(origin: Any, locale: str | None) -> list[str]:
    """What became of a memory no longer in use: the version that replaced it (and the one in use now), or
    when it was forgotten."""
    lines = []
    if origin.replaced_by is not None:
        newer = origin.replaced_by
        lines.append(_pick(locale, f"Replaced by #{newer.id}: “{_clip(newer.content, QUOTE_CHARS)}”",
                           f"已被 #{newer.id} 取代：「{_clip(newer.content, QUOTE_CHARS)}」"))
    if origin.current is not None:
        now = origin.current
        lines.append(_pick(locale, f"In use now: #{now.id}: “{_clip(now.content, QUOTE_CHARS)}”",
                           f"现在用的是 #{now.id}：「{_clip(now.content, QUOTE_CHARS)}」"))
    if origin.forgotten_at is not None:
        day = f"{origin.forgotten_at.astimezone(UTC):%Y-%m-%d}"
        purge = f"{(origin.forgotten_at + BIN_LIFETIME).astimezone(UTC):%Y-%m-%d}"
        lines.append(_pick(locale, f"Set aside on {day} after long disuse: in the recycle bin until {purge} "
                                   f"(/memories restore {origin.memory.id} brings it back).",
                           f"已于 {day} 因久未用到放进回收站，{purge} 彻底删除"
                           f"（/memories restore {origin.memory.id} 可以找回）。"))
    return lines


def confirmation_text(conf: Any, locale: str | None, now: datetime | None = None, *, typed: bool = False) -> str:
    """What a forget asks; ``typed`` where the answer is typed (the console has no buttons)."""
    zh = is_chinese(locale)
    minutes = _minutes_left(conf.expires_at, now)
    reminders = getattr(conf, "reminders", None)
    if getattr(conf, "everything", False) and reminders is not None:
        head = (f"要删除我知道的关于你的一切吗？包括 {conf.count} 条记忆、聊天记录、摘要、档案和全部提醒"
                f"（{reminders} 个待提醒）。网页面板的登录也会失效。" if zh else
                f"Forget everything I know about you? That is {conf.count} {_plural(conf.count, 'memory')}, "
                f"our conversations, summaries, your profile and all your reminders ({reminders} pending). "
                "You are signed out of the web panel too.")
    elif getattr(conf, "everything", False):
        head = (f"要删除我知道的关于你的一切吗？包括 {conf.count} 条记忆、聊天记录、摘要和档案"
                "（提醒会保留；连提醒一起删除请用 /forget all reminders）。网页面板的登录也会失效。" if zh else
                f"Forget everything I know about you? That is {conf.count} {_plural(conf.count, 'memory')}, "
                "our conversations, summaries and your profile (reminders stay; to clear them too, use "
                "/forget all reminders). You are signed out of the web panel too.")
    else:
        head = _forget_what(conf.count, getattr(conf, "rounds", 0), zh)
    lines = [head, *(f"• {item}" for item in conf.preview)]
    if conf.count > len(conf.preview) and conf.preview:
        more = conf.count - len(conf.preview)
        lines.append(f"……还有 {more} 条" if zh else f"… and {more} more")
    lines += _round_lines(conf, zh)
    if typed:
        lines.append(f"删除后无法恢复。请在 {minutes} 分钟内输入 y 确认，或输入 n 取消。" if zh else
                     f"This cannot be undone. Type y to forget or n to keep, within {minutes} "
                     f"{_plural(minutes, 'minute')}.")
    else:
        lines.append(f"删除后无法恢复。确认按钮 {minutes} 分钟内有效。" if zh else
                     f"This cannot be undone. The buttons work for {minutes} {_plural(minutes, 'minute')}.")
    return "\n".join(lines)


def _forget_what(memories: int, rounds: int, zh: bool) -> str:
    """The question of a /forget by id or search: the memories, and the rounds of conversation it matched."""
    if zh:
        parts = ([f"{memories} 条记忆"] if memories else []) + ([f"{rounds} 段对话"] if rounds else [])
        return f"确定删除这 {'和'.join(parts)}吗？"
    parts = ([("this memory" if memories == 1 else f"these {memories} memories")] if memories else []) + (
        [("this exchange of ours" if rounds == 1 else f"{rounds} exchanges of ours")] if rounds else [])
    return f"Forget {' and '.join(parts)}?"


def _round_lines(conf: Any, zh: bool) -> list[str]:
    """The rounds a forget takes with it: the newest few (your line and its day), and how many more."""
    rounds, preview = getattr(conf, "rounds", 0), getattr(conf, "round_preview", ())
    if not rounds or not preview:
        return []
    you = "你说" if zh else "you said"
    lines = [f"• {day} {you}: {line}" for day, _, line in (item.partition(" ") for item in preview)]
    if getattr(conf, "everything", False):
        lines.insert(0, f"对话 {rounds} 段，最近的：" if zh else f"{rounds} {_plural(rounds, 'exchange')}, the newest:")
    if rounds > len(preview):
        more = rounds - len(preview)
        lines.append(f"……还有 {more} 段对话" if zh else f"… and {more} more {_plural(more, 'exchange')}")
    return lines


def confirm_button_labels(locale: str | None) -> tuple[str, str]:
    return ("确认删除", "取消") if is_chinese(locale) else ("Yes, forget", "Cancel")


def forgotten_text(count: int, locale: str | None) -> str:
    if count == 0:
        return _pick(locale, "Done: forgotten for good.", "已彻底删除。")
    return _pick(locale, f"Done: {count} {_plural(count, 'memory')} forgotten for good.",
                 f"已彻底删除 {count} 条记忆。")


def exported_text(count: int, path: object, locale: str | None) -> str:
    """Where an export was written (the console writes it to a file)."""
    return _pick(locale, f"Exported {count} {_plural(count, 'memory')} (and our conversations) to {path}",
                 f"已把 {count} 条记忆（及聊天记录）导出到 {path}")


def cancelled_text(locale: str | None) -> str:
    return _pick(locale, "Okay, nothing was deleted.", "好的，什么都没有删除。")


def remembered_text(item: Any, locale: str | None) -> str:
    content = _clip(item.content, QUOTE_CHARS)
    return _pick(locale, f"Got it, I'll remember: {content} (#{item.id}, {item.type})",
                 f"好的，我记住了：{content}（#{item.id}，{item.type}）")


def reminders_text(items: Sequence[Any], locale: str | None) -> str:
    """``/reminders``: each with when it pings and, for a deadline, when it is due."""
    if not items:
        return _pick(locale, "No pending reminders. Try /remind tomorrow 9am call mom",
                     "没有待提醒的事项。试试 /remind 明天早上9点 开会")
    lines = [_pick(locale, "Your reminders:", "你的提醒：")]
    for item in items:
        due = f" · {_pick(locale, 'due', '截止')} {_when(item, locale, item.deadline)}" if _deadline(item) else ""
        lines.append(f"#{item.id} · {_when(item, locale)} · {_clip(item.content, LIST_CONTENT_CHARS)}{due}")
    return "\n".join(lines)


def reminder_added_text(item: Any, locale: str | None) -> str:
    content = _clip(item.content, QUOTE_CHARS)
    if _deadline(item):
        return _pick(locale, f"⏰ Due {_when(item, locale, item.deadline)}: {content}. I'll remind you "
                             f"{_when(item, locale)} (#{item.id}).",
                     f"⏰ 好的，{content}，{_when(item, locale, item.deadline)} 截止。我会在 {_when(item, locale)} "
                     f"提前提醒你（#{item.id}）。")
    return _pick(locale, f"⏰ I'll remind you {_when(item, locale)}: {content} (#{item.id})",
                 f"⏰ 好的，我会在 {_when(item, locale)} 提醒你：{content}（#{item.id}）")


def reminder_change_text(change: Any, locale: str | None) -> str:
    """After ``/remind``: a new reminder (and, the first time one used the default zone, which zone that is), or
    one cancelled, done or snoozed."""
    if change.action == "add":
        hint = getattr(change, "default_zone", None)
        added = reminder_added_text(change.item, locale)
        return f"{added}\n{default_zone_text(hint, locale)}" if hint else added
    return reminder_updated_text(change.item, locale)


def reminder_updated_text(item: Any, locale: str | None) -> str:
    """After cancel, done or snooze."""
    if item.status == TodoStatus.CANCELLED:
        return _pick(locale, f"Reminder #{item.id} cancelled.", f"已取消提醒 #{item.id}。")
    if item.status == TodoStatus.DONE:
        return _pick(locale, f"Reminder #{item.id} marked done.", f"提醒 #{item.id} 已完成。")
    return _pick(locale, f"Okay, I'll remind you again {_when(item, locale)}.",
                 f"好的，{_when(item, locale)} 再提醒你。")


def import_report_text(report: Any, locale: str | None) -> str:
    zh = is_chinese(locale)
    counts = [f"{name_zh} {report.imported.get(key, 0)}" if zh else
              f"{report.imported.get(key, 0)} {_plural(report.imported.get(key, 0), name_en)}"
              for key, name_en, name_zh in _SECTIONS]
    if threads := report.imported.get("threads", 0):  # only in files of users who mentioned something coming up
        counts.append(f"待回访的事 {threads}" if zh else f"{threads} {_plural(threads, 'follow-up thread')}")
    lines = [("已导入：" + "、".join(counts)) if zh else ("Imported: " + ", ".join(counts))]
    duplicates = getattr(report, "duplicates", 0)
    if duplicates:
        lines.append(f"已跳过重复的 {duplicates} 项。" if zh else f"Skipped {duplicates} you already had.")
    missed = getattr(report, "missed", 0)
    if missed:
        lines.append(f"{missed} 个提醒早已过期，已记为错过，不会再发送。" if zh else
                     f"{missed} {_plural(missed, 'reminder')} long past due {'was' if missed == 1 else 'were'} "
                     "kept as missed and won't be sent.")
    if report.refused:
        lines.append(f"未导入 {len(report.refused)} 项：" if zh else f"Not imported ({len(report.refused)}):")
        lines += [f"• {reason}" for reason in report.refused[:REPORT_LINES]]
        if len(report.refused) > REPORT_LINES:
            rest = len(report.refused) - REPORT_LINES
            lines.append(f"……还有 {rest} 项" if zh else f"… and {rest} more")
    return "\n".join(lines)


def paused_text(paused: bool, locale: str | None) -> str:
    if paused:
        return _pick(locale, "Paused: I won't remember anything new from our chats until you /resume. "
                             "(/remember still works.)",
                     "已暂停：在你 /resume 之前，我不会从聊天中记住新内容。（/remember 仍然可用。）")
    return _pick(locale, "I'm remembering again.", "已恢复，我会继续记住你说的事。")


def link_code_text(code: Any, locale: str | None, now: datetime | None = None) -> str:
    text = getattr(code, "code", code)
    expires_at = getattr(code, "expires_at", None)
    minutes = _minutes_left(expires_at, now) if expires_at else None
    within_en = f" within {minutes} {_plural(minutes, 'minute')}" if minutes else ""
    within_zh = f"请在 {minutes} 分钟内，" if minutes else "请"
    return _pick(locale, f"Your link code: {text}\nSend /link {text} from your other account (Discord or Telegram)"
                         f"{within_en}. It works once, and joins nothing until you confirm here with the code "
                         "that account then shows. Never give it to anyone else.",
                 f"你的关联代码：{text}\n{within_zh}在另一个账号（Discord 或 Telegram）发送 /link {text}。"
                 "代码只能用一次；那个账号会显示第二个代码，你在这里确认之前不会关联任何账号。不要把代码给别人。")


def link_request_text(request: Any, locale: str | None, now: datetime | None = None) -> str:
    """To the account that entered a code: whose account it is, and how to confirm from there."""
    minutes = _minutes_left(request.expires_at, now)
    owner = _accounts(request.owner, locale)
    return _pick(locale, f"That code belongs to {owner}. Nothing is joined yet.\n"
                         f"If that account is yours, send /link confirm {request.code} from it within {minutes} "
                         f"{_plural(minutes, 'minute')}: both accounts will then share every memory, reminder and "
                         "export. If it isn't yours, ignore this and don't pass the code on.",
                 f"这个代码属于{owner}。目前还没有关联。\n"
                 f"如果那是你的账号，请在 {minutes} 分钟内从那个账号发送 /link confirm {request.code}："
                 "之后两个账号会共用全部记忆、提醒和导出。如果不是你的账号，请忽略，也不要把代码交给别人。")


def panel_link_text(link: Any, locale: str | None, now: datetime | None = None) -> str:
    minutes = _minutes_left(link.expires_at, now)
    return _pick(locale, f"Your memories on the web: {link.url}\nThe link signs you in once, within {minutes} "
                         f"{_plural(minutes, 'minute')}. Don't share it: it opens your memories.",
                 f"网页记忆面板：{link.url}\n请在 {minutes} 分钟内打开，链接只能用一次。"
                 "不要分享给别人：它能打开你的记忆。")


def linked_text(joined: Any, locale: str | None) -> str:
    """To the owner who confirmed: which account joined."""
    who = _accounts((joined,), locale)
    return _pick(locale, f"Linked with {who}! Both accounts now share one memory. /link unlink separates them.",
                 f"已与{who}关联！两个账号现在共用同一份记忆。/link unlink 可以解除关联。")


def _accounts(accounts: Sequence[Any], locale: str | None) -> str:
    """``the Telegram account “alice”`` (and more, joined), in the user's language."""
    zh = is_chinese(locale)
    named = [f"{_PLATFORMS.get(a.platform, a.platform)} 账号「{_param(a.name)}」" if zh else
             f"the {_PLATFORMS.get(a.platform, a.platform)} account “{_param(a.name)}”" for a in accounts]
    return ("、".join(named) if zh else " and ".join(named)) or ("未知账号" if zh else "an unknown account")


def unlinked_text(locale: str | None) -> str:
    return _pick(locale, "Unlinked. This account starts fresh; your memories stay with your other account.",
                 "已解除关联。这个账号从头开始，记忆保留在另一个账号上。")


def busy_text(locale: str | None) -> str:
    """Said once when a message waits for the model because many are being answered: the reply follows."""
    return _pick(locale, "Lots of people are talking to me right now. One moment, I'll answer you shortly.",
                 "现在找我聊天的人有点多，请稍等，我马上回复你。")


def waiting_for_database_text(locale: str | None) -> str:
    """Said once when a message has to wait for the database: it is kept and answered when it is back."""
    return _pick(locale, "My memory store is out of reach for a moment. I've kept your message and will answer "
                         "as soon as it's back.",
                 "我的记忆库暂时连不上。你的消息我留着，一恢复就回复你。")


def answered_late_text(said: str, locale: str | None) -> str:
    """Before an answer to a message left unanswered when the bot stopped (where it cannot quote it)."""
    quoted = _param(said)
    return _pick(locale, f"(Sorry, I stopped before answering “{quoted}”.)",
                 f"（抱歉，我刚才没来得及回复“{quoted}”。）")


def error_text(exc: BaseException, locale: str | None) -> str:
    """The message for a command error: its key and parameters in the user's language."""
    key = getattr(exc, "key", None) or (exc.args[0] if exc.args and isinstance(exc.args[0], str) else None)
    if key not in ERRORS:
        key = "not_found" if type(exc).__name__ == "NotFound" else "unexpected"
    params = {name: _param(value, QUOTE_CHARS if name in WHOLE_PARAMS else PARAM_CHARS)
              for name, value in (getattr(exc, "params", None) or {}).items()}
    if key == "reminder_not_pending":
        params["status"] = _STATUSES.get(params.get("status", ""), (params.get("status", ""),) * 2)[
            is_chinese(locale)]
    template = ERRORS[key][is_chinese(locale)]
    try:
        return template.format(**params)
    except (KeyError, IndexError, ValueError):
        return ERRORS["unexpected"][is_chinese(locale)]


def _deadline(item: Any) -> bool:
    return getattr(item, "kind", TodoKind.REMINDER) == TodoKind.DEADLINE and getattr(item, "deadline", None) is not None


def _when(item: Any, locale: str | None, moment: datetime | None = None) -> str:
    due = moment or item.due_at
    if is_chinese(locale):
        return f"{due.month}月{due.day}日 周{_WEEKDAYS_ZH[due.weekday()]} {due:%H:%M}（{item.timezone}）"
    return f"{due:%a %d %b %H:%M} ({item.timezone})"


def _minutes_left(expires_at: datetime, now: datetime | None) -> int:
    seconds = (expires_at - (now or datetime.now(UTC))).total_seconds()
    return max(1, math.ceil(seconds / 60))


def _number(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _plural(count: int, word: str) -> str:
    if count == 1:
        return word
    return word[:-1] + "ies" if word.endswith("y") else word + "s"


def _param(value: object, limit: int = PARAM_CHARS) -> str:
    return _clip(" ".join(str(value).split()), limit)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
