"""A reply's notices: one line of words a code, in English and Chinese with the same placeholders, naming no
setting, and every code made somewhere on the hot path (a code no one makes is a word no one reads)."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest

import shared.conversation
from shared.conversation.notice_texts import NOTICE_TEXTS, Notice, NoticeCode, notice_text, notices_text
from shared.settings import Settings

CONVERSATION = Path(shared.conversation.__file__).parent
SETTING_NAMES = sorted(name.upper() for name in Settings.model_fields)
_HAN = re.compile(r"[\u4e00-\u9fff]")
_ENGLISH_WORD = re.compile(r"[A-Za-z]{3,}")
PARAMS: dict[str, str | int | tuple[str, ...]] = {
    "count": 2140, "what": "买花", "resets": "00:00", "seconds": 42, "said": "美国", "city": "纽约",
    "cities": ("纽约", "芝加哥"), "zone": "Asia/Shanghai", "name": "笔记.txt", "limit": "512 KB",
    "due": "2027-03-11T09:00:00+08:00", "now": "2027-03-10T20:00:00+08:00"}
"""A value for every parameter a notice takes; ``due``, ``now`` and ``zone`` are said as ``{when}``."""
_SAID_AS = {"when": ("due", "now", "zone")}


def fields(template: str) -> set[str]:
    return {field for _literal, field, _spec, _conversion in string.Formatter().parse(template) if field}


def params_of(code: NoticeCode) -> dict[str, str | int | tuple[str, ...]]:
    names = fields(NOTICE_TEXTS[code][0])
    names = {given for name in names for given in _SAID_AS.get(name, (name,))}
    return {name: PARAMS[name] for name in sorted(names)}


def test_every_code_has_english_and_chinese_with_the_same_placeholders():
    assert set(NOTICE_TEXTS) == set(NoticeCode)
    for code, (english, chinese) in NOTICE_TEXTS.items():
        assert fields(english) == fields(chinese), code
        assert _HAN.search(chinese), code
        assert not _HAN.search(english), code


@pytest.mark.parametrize("code", list(NoticeCode))
def test_no_notice_names_a_setting_in_either_language(code):
    for words in NOTICE_TEXTS[code]:
        assert not any(name in words for name in SETTING_NAMES), words
        assert not re.search(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|README|\.md\b", words), words


@pytest.mark.parametrize("code", list(NoticeCode))
def test_the_chinese_of_a_notice_has_no_english_words_but_commands_zones_and_the_users_own(code):
    shown = notice_text(Notice.of(code, **params_of(code)), chinese=True)
    assert "{" not in shown
    words = re.sub(r"/\w+( on)?|Asia/Shanghai|UTC|KB|txt|md|csv|json", "", shown)
    assert not _ENGLISH_WORD.search(words), (code, shown)


@pytest.mark.parametrize("code", list(NoticeCode))
def test_every_code_is_made_on_the_hot_path(code):
    source = "\n".join(path.read_text() for path in CONVERSATION.glob("*.py")
                       if path.name not in ("notice_texts.py", "coded_texts.py"))
    assert f"NoticeCode.{code.name}" in source, code


def test_a_reminders_time_is_said_on_the_users_clock_in_the_readers_words():
    reminder = Notice.of(NoticeCode.REMINDER_SET, what="water the bees", due="2027-03-11T09:00:00+08:00",
                         now="2027-03-10T20:00:00+08:00", zone="Asia/Shanghai")
    assert str(reminder) == "Okay — I'll remind you tomorrow at 09:00 (Asia/Shanghai): water the bees."
    assert notice_text(reminder, chinese=True) == "好的，明天 09:00（Asia/Shanghai）提醒你：water the bees。"


def test_a_list_is_joined_as_the_readers_language_joins_one_and_a_file_without_a_name_is_the_file():
    several = Notice.of(NoticeCode.SEVERAL_ZONES, said="USA", city="New York", cities=("New York", "Chicago"))
    assert str(several).endswith("(or New York, Chicago).")
    assert notice_text(several, chinese=True).endswith("（可选：New York、Chicago）。")
    unnamed = Notice.of(NoticeCode.FILE_CUT, name="")
    assert (str(unnamed), notice_text(unnamed, True)) == ("the file was long: I read only its beginning.",
                                                          "文件 太长了，我只读了开头部分。")


def test_a_replys_notices_are_joined_each_once_with_a_space_in_english_and_none_in_chinese():
    busy, offer = Notice(NoticeCode.BUSY), Notice(NoticeCode.FOLLOWUPS_OFFER)
    assert notices_text((), chinese=False) is None
    assert notices_text((busy, offer, busy), chinese=False) == f"{busy} {offer}"
    assert notices_text((busy, offer), chinese=True) == notice_text(busy, True) + notice_text(offer, True)
    assert Notice.of(NoticeCode.FLOODED, seconds=3) == Notice.of(NoticeCode.FLOODED, seconds=3)
