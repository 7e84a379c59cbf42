"""A reply's warnings in the user's language. Pure rules, no database.

The hot path writes its warnings in English (they are logged and counted as such); a front-end that
shows them under a reply (the console, Discord) shows each in the language of the reply with
:func:`warning_text`. Each warning the hot path makes has a line in :data:`WARNINGS`: its English with
``{placeholders}`` for what varies (numbers, a reminder's words), and its Chinese with the same ones. A
warning without a line stays in English; the tests make every warning of the conversation service and
check that none does.
"""

from __future__ import annotations

import ast
import string

OFFLINE_WARNING = "offline mode"
"""The warning every offline reply carries; front-ends show it as a label, not a line."""

WARNINGS: tuple[tuple[str, str], ...] = (
    (OFFLINE_WARNING, "离线模式"),
    ("Many messages in a short time; this is an offline reply.", "短时间内消息太多，这是一条离线回复。"),
    ("Every model slot stayed busy; this is an offline reply.", "模型一直很忙，这是一条离线回复。"),
    ("The language model is unavailable; this is an offline reply.", "语言模型暂时不可用，这是一条离线回复。"),
    ("The language model gave no usable answer; this is an offline reply.",
     "语言模型没有给出可用的回答，这是一条离线回复。"),
    ("The model's answer was {problem}: its reply was kept{_}",
     "模型的回答{problem}：回复照常显示，但没有从中记住任何内容（后台仍会读取这条消息）。"),
    ("The database went away before this reply could be saved; it will not be remembered.",
     "回复保存之前数据库断开了，这条回复不会被记住。"),
    ("{count} remembered item(s) did not fit the context budget.", "有 {count} 条记忆超出了上下文长度，这次没有用上。"),
    ("Your message was long; only the first {count} characters were read.", "消息太长，只读了前 {count} 个字符。"),
    ("Vector search was unavailable for this message.", "这条消息没能用上向量检索。"),
    ("The conversation did not fit the language model's context window; this is an offline reply.",
     "对话超出了语言模型的上下文长度，这是一条离线回复。"),
    ("Your message was too long for the model: it read the first {count} characters.",
     "消息对模型来说太长，它只读了前 {count} 个字符。"),
    ("The model's answer was unusable ({reason}); this is an offline reply.",
     "模型的回答无法使用，这是一条离线回复。"),
    ("Remembering is paused; nothing new was stored.", "记忆已暂停，没有记下新内容。"),
    ("Could not schedule a reminder for {what}: no future time in {when}.",
     "无法设置「{what}」的提醒：「{when}」不是将来的时间。"),
    ("Could not schedule a reminder for {what}: {count} reminders are already pending.",
     "无法设置「{what}」的提醒：已有 {count} 个待提醒事项。"),
)
"""(English, Chinese) of every warning a reply can carry; ``{_}`` in the English stands for any ending."""
PROBLEMS_ZH = {"blank": "是空的", "a copy of the schema": "只是把格式要求抄了一遍", "cut short": "被截断了",
               "not the JSON asked for": "不是要求的 JSON", "copying its instructions back": "只是抄回了它的指令"}
"""The words of :data:`shared.llm.turn_answer.PROBLEM_TEXTS` in Chinese; any other problem is "无法使用"."""
_UNUSABLE_ZH = "无法使用"


def warning_text(warning: str, chinese: bool) -> str:
    """``warning`` as the user reads it: in Chinese when the reply is, else as written."""
    if not chinese:
        return warning
    for english, translated in WARNINGS:
        values = _read(english, warning.strip())
        if values is not None:
            if "problem" in values:
                values["problem"] = PROBLEMS_ZH.get(values["problem"], _UNUSABLE_ZH)
            return translated.format(**values)
    return warning


def _read(template: str, warning: str) -> dict[str, str] | None:
    """The placeholders' values when ``warning`` is ``template`` filled in (its final stop optional), else None.
    Plain string search, left to right: linear in the warning's length."""
    parts = list(string.Formatter().parse(template.removesuffix(".")))
    text, at, values, name = warning.removesuffix("."), 0, {}, None
    for literal, field, _spec, _conversion in parts:
        found = text.find(literal, at) if name is not None else (0 if text.startswith(literal) else -1)
        if found < 0 or (name is not None and found == at):
            return None
        if name is not None:
            values[name] = _unquoted(text[at:found])
        at, name = found + len(literal), field
    if name is None:
        return values if at == len(text) else None
    if at == len(text) and name != "_":
        return None
    values[name] = _unquoted(text[at:])
    return values


def _unquoted(value: str) -> str:
    """A value the warning quoted with ``!r`` ('feed the fish'), without its quotes."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        try:
            shown = ast.literal_eval(value)
        except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
            return value[1:-1]
        return shown if isinstance(shown, str) else value[1:-1]
    return value
