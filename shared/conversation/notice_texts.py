"""A reply's notices: typed codes with parameters, and the one table that words them. Pure rules, no database.

A notice is what the user is told beside the reply (today's allowance is spent, the reminder the rules set, a
photo the model could not see). The hot path never writes its words: it makes a :class:`Notice`, a
:class:`NoticeCode` and the values that vary (a count, the reminder's words, a wait in seconds, a zone's name).
Each front-end shows a reply's notices in the reader's language with :func:`notices_text`, from
:data:`NOTICE_TEXTS`: one line a code, English and Chinese with the same ``{placeholders}``, worded the way
warnings are (:func:`shared.conversation.coded_texts.worded`). A code without its line, or a line naming a
setting, fails the tests. A few lines are shared with a command's or the offline responder's answer and are kept
where those are (the follow-up offer, the default zone, a reminder's confirmation); the table points at them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from shared.conversation import offline_replies as say
from shared.conversation.coded_texts import Coded, worded
from shared.followups.texts import OFFER
from shared.reminders.zone_lines import DEFAULT_ZONE_LINES, MOVED_LINES


class NoticeCode(StrEnum):
    """What the user is told beside a reply; the value is stable (tests and logs may name it)."""

    QUOTA_SPENT = "quota_spent"
    GROUP_QUOTA_SPENT = "group_quota_spent"
    BUSY = "busy"
    FLOODED = "flooded"
    MESSAGE_CUT = "message_cut"
    KNOWN_COUNT = "known_count"
    REMINDER_SET = "reminder_set"
    DEADLINE_SET = "deadline_set"
    REMINDER_NEEDS_TIME = "reminder_needs_time"
    REMINDER_DUE_NOW = "reminder_due_now"
    ZONE_SET = "zone_set"
    SEVERAL_ZONES = "several_zones"
    CLOCK_KEPT_ONE = "clock_kept_one"
    CLOCK_KEPT = "clock_kept"
    MOMENT_KEPT_ONE = "moment_kept_one"
    MOMENT_KEPT = "moment_kept"
    DEFAULT_ZONE = "default_zone"
    FOLLOWUPS_OFFER = "followups_offer"
    PHOTO_UNSEEN = "photo_unseen"
    FILE_TOO_LARGE = "file_too_large"
    FILE_UNREAD_TYPE = "file_unread_type"
    FILE_NOT_FETCHED = "file_not_fetched"
    VOICE_UNHEARD = "voice_unheard"
    FILE_CUT = "file_cut"
    VOICE_NOT_TRANSCRIBED = "voice_not_transcribed"
    FILES_OVER_LIMIT = "files_over_limit"


@dataclass(frozen=True)
class Notice(Coded[NoticeCode]):
    """One notice of a reply: its code and its parameters."""

    def __str__(self) -> str:
        """In English, for logs and an operator's tools."""
        return notice_text(self, chinese=False)


NOTICE_TEXTS: dict[NoticeCode, tuple[str, str]] = {
    NoticeCode.QUOTA_SPENT: (
        "You've used today's allowance, so I'm answering in simple mode until {resets} UTC. Everything you say is "
        "kept, and I'll catch up on it tomorrow.",
        "你今天的额度已经用完，UTC {resets} 之前我先用简单模式回复。你说的话都会保留，明天我会接着整理。"),
    NoticeCode.GROUP_QUOTA_SPENT: (
        "This group has used today's allowance, so I'm answering in simple mode until {resets} UTC. Everything "
        "said here is kept.",
        "这个群今天的额度已经用完，UTC {resets} 之前我先用简单模式回复。大家说的话都会保留。"),
    NoticeCode.BUSY: (
        "I'm swamped right now, so this is a quick reply in simple mode. What you said is kept, and I'll catch up "
        "on it.",
        "我这会儿太忙了，先简单回你一句。你说的话我都记着，稍后会整理。"),
    NoticeCode.FLOODED: (
        "You're sending messages faster than I can think, so this is a quick reply; in about {seconds} s I'll "
        "answer properly again. Everything you said is kept.",
        "你发消息有点快，我先简单回一句；大约 {seconds} 秒后我会认真回复。你说的话都记着。"),
    NoticeCode.MESSAGE_CUT: ("Your message was too long for the model: it read the first {count:,} characters.",
                             "你的消息太长，模型只读了前 {count} 个字。"),
    NoticeCode.KNOWN_COUNT: ("I remember {count} things about you in all: /memories shows them all.",
                             "我一共记得关于你的 {count} 件事，/memories 可以看全部。"),
    NoticeCode.REMINDER_SET: say.lines("reminder"),
    NoticeCode.DEADLINE_SET: say.lines("deadline"),
    NoticeCode.REMINDER_NEEDS_TIME: say.lines("reminder_needs_time"),
    NoticeCode.REMINDER_DUE_NOW: (
        "(The time for “{what}” came while I was answering: I'll remind you right away.)",
        "（“{what}”的时间在我回复时已经到了，马上提醒你。）"),
    NoticeCode.ZONE_SET: ("Time zone set to {zone}, from “{said}” (/timezone changes it).",
                          "已按“{said}”把你的时区设为 {zone}（/timezone 可以修改）。"),
    NoticeCode.SEVERAL_ZONES: (
        "{said} has several time zones, so I left yours as it was. Tell me your city, or use /timezone {city} "
        "(or {cities}).",
        "{said}有好几个时区，我没有改你的时区。告诉我城市，或发送 /timezone {city}（可选：{cities}）。"),
    NoticeCode.CLOCK_KEPT_ONE: MOVED_LINES["clock_one"],
    NoticeCode.CLOCK_KEPT: MOVED_LINES["clock"],
    NoticeCode.MOMENT_KEPT_ONE: MOVED_LINES["moment_one"],
    NoticeCode.MOMENT_KEPT: MOVED_LINES["moment"],
    NoticeCode.DEFAULT_ZONE: DEFAULT_ZONE_LINES,
    NoticeCode.FOLLOWUPS_OFFER: OFFER,
    NoticeCode.PHOTO_UNSEEN: ("I can't see images with this setup, so I only read your words.",
                              "现在的配置下我看不到图片，只读了你写的文字。"),
    NoticeCode.FILE_TOO_LARGE: ("{name} is too large for me to open (limit {limit}).",
                                "{name} 太大了，我打不开（上限 {limit}）。"),
    NoticeCode.FILE_UNREAD_TYPE: ("I can't read {name}: I only read text files (txt, md, csv, json).",
                                  "我读不了 {name}：我只读文本文件（txt、md、csv、json）。"),
    NoticeCode.FILE_NOT_FETCHED: ("I couldn't fetch {name}; please try sending it again.",
                                  "{name} 没能取到，请再发一次。"),
    NoticeCode.VOICE_UNHEARD: ("I can't hear voice messages with this setup; please type it instead.",
                               "现在的配置下我听不了语音，请打字告诉我。"),
    NoticeCode.FILE_CUT: ("{name} was long: I read only its beginning.", "{name} 太长了，我只读了开头部分。"),
    NoticeCode.VOICE_NOT_TRANSCRIBED: ("I couldn't make out your voice message; please try again or type it.",
                                       "我没能听清你的语音，请再试一次或打字。"),
    NoticeCode.FILES_OVER_LIMIT: (
        "You've sent a lot of files just now, so I didn't open {name}; please send it again in a minute.",
        "你刚才发的文件有点多，{name} 我先没打开，请过一分钟再发一次。"),
}
"""(English, Chinese) of every notice code."""

UNNAMED_FILE = ("the file", "文件")
"""The ``{name}`` of a file that came without one."""
NOTICE_JOINS = (" ", "")
"""How a reply's notices are joined into one line in English and in Chinese (each ends its own sentence)."""


def notice_text(notice: Notice, chinese: bool) -> str:
    """``notice`` as its reader reads it: in Chinese or in English. A reminder's time (``due``, ``now`` and
    ``zone``) is said on the user's clock in the reader's words (``{when}``)."""
    values = dict(notice.params)
    if "due" in values:
        values["when"] = say.when_text(datetime.fromisoformat(str(values["due"])),
                                       datetime.fromisoformat(str(values["now"])), str(values["zone"]), chinese)
    if values.get("name") == "":
        values["name"] = UNNAMED_FILE[chinese]
    return worded(NOTICE_TEXTS, notice, chinese, values)


def notices_text(notices: Iterable[Notice], chinese: bool) -> str | None:
    """A reply's notices as one line in the reader's language, each once (None: there are none)."""
    return NOTICE_JOINS[chinese].join(notice_text(notice, chinese) for notice in dict.fromkeys(notices)) or None
