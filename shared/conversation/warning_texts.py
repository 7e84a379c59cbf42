"""A reply's warnings: typed codes with parameters, and the one table that words them. Pure rules, no database.

The hot path never writes a warning's words: it makes a :class:`TurnWarning`, a :class:`WarningCode` and the
values that vary (a count, a reminder's words). Each front-end (the console, Discord, Telegram) shows it in
the reader's language with :func:`warning_text`, from :data:`WARNING_TEXTS` (worded as a notice is,
:mod:`shared.conversation.coded_texts`): one line a code, English and Chinese with the same ``{placeholders}``. A
code without its line, or a line naming a setting, fails the tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from shared.conversation.coded_texts import Coded, worded
from shared.llm.turn_answer import PROBLEM_TEXTS


class WarningCode(StrEnum):
    """What went wrong or was left out in a turn; the value is stable (tests and logs may name it)."""

    OFFLINE = "offline"
    FLOODED = "flooded"
    BUSY = "busy"
    MODEL_UNAVAILABLE = "model_unavailable"
    MODEL_SILENT = "model_silent"
    MODEL_ANSWER_UNTRUSTED = "model_answer_untrusted"
    MODEL_NON_ANSWER = "model_non_answer"
    CONTEXT_OVERFLOW = "context_overflow"
    REPLY_NOT_SAVED = "reply_not_saved"
    MEMORIES_LEFT_OUT = "memories_left_out"
    MESSAGE_SHORTENED = "message_shortened"
    VECTOR_SEARCH_DOWN = "vector_search_down"
    REMEMBERING_PAUSED = "remembering_paused"
    REMINDER_WITHOUT_FUTURE_TIME = "reminder_without_future_time"
    REMINDERS_FULL = "reminders_full"


@dataclass(frozen=True)
class TurnWarning(Coded[WarningCode]):
    """One warning of a reply: its code and its parameters."""

    def __str__(self) -> str:
        """In English, for logs and an operator's tools."""
        return warning_text(self, chinese=False)


OFFLINE_WARNING = TurnWarning(WarningCode.OFFLINE)
"""The warning every offline reply carries; front-ends may show it as a label, not a line."""
CONTEXT_CUT = frozenset({WarningCode.MEMORIES_LEFT_OUT, WarningCode.MESSAGE_SHORTENED})
"""The codes that say part of the context was left out (Telegram says so in one short note)."""
OFFLINE_REASONS = frozenset({WarningCode.FLOODED, WarningCode.BUSY, WarningCode.MODEL_UNAVAILABLE,
                             WarningCode.MODEL_SILENT, WarningCode.MODEL_NON_ANSWER, WarningCode.CONTEXT_OVERFLOW})
"""The codes that say why a reply is offline (Telegram's note says only that it is)."""

WARNING_TEXTS: dict[WarningCode, tuple[str, str]] = {
    WarningCode.OFFLINE: ("offline mode", "离线模式"),
    WarningCode.FLOODED: ("Many messages in a short time; this is an offline reply.",
                          "短时间内消息太多，这是一条离线回复。"),
    WarningCode.BUSY: ("Every model slot stayed busy; this is an offline reply.", "模型一直很忙，这是一条离线回复。"),
    WarningCode.MODEL_UNAVAILABLE: ("The language model is unavailable; this is an offline reply.",
                                    "语言模型暂时不可用，这是一条离线回复。"),
    WarningCode.MODEL_SILENT: ("The language model gave no usable answer; this is an offline reply.",
                               "语言模型没有给出可用的回答，这是一条离线回复。"),
    WarningCode.MODEL_ANSWER_UNTRUSTED: (
        "The model's answer was {problem}: its reply was kept, nothing was remembered from it (the worker still "
        "reads the message).",
        "模型的回答{problem}：回复照常显示，但没有从中记住任何内容（后台仍会读取这条消息）。"),
    WarningCode.MODEL_NON_ANSWER: ("The model's answer was unusable ({reason}); this is an offline reply.",
                                   "模型的回答无法使用，这是一条离线回复。"),
    WarningCode.CONTEXT_OVERFLOW: (
        "The conversation did not fit the language model's context window; this is an offline reply.",
        "对话超出了语言模型的上下文长度，这是一条离线回复。"),
    WarningCode.REPLY_NOT_SAVED: ("The database went away before this reply could be saved; it will not be "
                                  "remembered.", "回复保存之前数据库断开了，这条回复不会被记住。"),
    WarningCode.MEMORIES_LEFT_OUT: ("{count} remembered item(s) did not fit the context budget.",
                                    "有 {count} 条记忆超出了上下文长度，这次没有用上。"),
    WarningCode.MESSAGE_SHORTENED: ("Your message was long; only the first {count} characters were read.",
                                    "消息太长，只读了前 {count} 个字符。"),
    WarningCode.VECTOR_SEARCH_DOWN: ("Vector search was unavailable for this message.", "这条消息没能用上向量检索。"),
    WarningCode.REMEMBERING_PAUSED: ("Remembering is paused; nothing new was stored.", "记忆已暂停，没有记下新内容。"),
    WarningCode.REMINDER_WITHOUT_FUTURE_TIME: ("Could not schedule a reminder for “{what}”: no future time in "
                                               "“{when}”.", "无法设置「{what}」的提醒：「{when}」不是将来的时间。"),
    WarningCode.REMINDERS_FULL: ("Could not schedule a reminder for “{what}”: {count} reminders are already "
                                 "pending.", "无法设置「{what}」的提醒：已有 {count} 个待提醒事项。"),
}
"""(English, Chinese) of every warning code."""

PROBLEMS_ZH = {"blank": "是空的", "schema_echo": "只是把格式要求抄了一遍", "cut": "被截断了",
               "invalid": "不是要求的 JSON", "note_echo": "只是抄回了它的指令"}
"""Each :attr:`shared.llm.turn_answer.TurnReading.problem` (the ``problem`` of
:attr:`WarningCode.MODEL_ANSWER_UNTRUSTED`) in Chinese, beside its English in ``PROBLEM_TEXTS``."""
PROBLEMS = {problem: (english, PROBLEMS_ZH[problem]) for problem, english in PROBLEM_TEXTS.items()}
"""(English, Chinese) of each problem; any other problem is "unusable"."""
_UNUSABLE = ("unusable", "无法使用")


def warning_text(warning: TurnWarning, chinese: bool) -> str:
    """``warning`` as its reader reads it: in Chinese or in English."""
    values = dict(warning.params)
    if "problem" in values:
        values["problem"] = PROBLEMS.get(str(values["problem"]), _UNUSABLE)[chinese]
    return worded(WARNING_TEXTS, warning, chinese, values)
