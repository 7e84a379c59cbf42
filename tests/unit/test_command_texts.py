"""The words of the memory commands, in Chinese and English; no database needed."""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from shared.commands import texts
from shared.commands.service import (
    Account,
    Confirmation,
    ImportReport,
    LinkCode,
    LinkRequest,
    MemoryItem,
    MemoryOrigin,
    MemoryPage,
    ReminderChange,
    ReminderItem,
)
from shared.conversation.notice_texts import notices_text
from shared.conversation.turn_reminders import zone_notices
from shared.errors import ConfirmationInvalid, InvalidCommand, NotFound
from shared.reminders.service import reminder_text
from shared.reminders.user_zone import UserZone, ZoneChange
from shared.reminders.zone_texts import zone_text
from shared.reminders.zones import SeveralZones

NOW = datetime(2026, 11, 22, 2, 0, tzinfo=UTC)
SHARED = Path(__file__).resolve().parents[2] / "shared"
TEA = MemoryItem(id=12, type="preference", content="喜欢乌龙茶", confidence=0.9, access_count=3,
                 last_accessed=datetime(2026, 11, 20, 8, 0, tzinfo=UTC), created_at=NOW, source="user_stated")
NEW = MemoryItem(id=13, type="fact", content="lives\nin  Berlin", confidence=1.0, access_count=1, last_accessed=None,
                 created_at=NOW, source="manual")
MEETING = ReminderItem(id=3, content="开会", due_at=datetime(2026, 11, 23, 9, 0, tzinfo=ZoneInfo("Asia/Shanghai")),
                       timezone="Asia/Shanghai", status="pending")


def page(*items: MemoryItem, number: int = 1, pages: int = 3, type_filter=None, search=None) -> MemoryPage:
    return MemoryPage(items=items, page=number, pages=pages, total=25, type_filter=type_filter, search=search)


def test_a_chinese_memory_line_shows_id_type_content_confidence_use_last_use_and_source():
    assert texts.memory_line(TEA, "zh-CN") == (
        "#12 · preference · 喜欢乌龙茶 · 置信度 0.9 · 用过 3 次 · 上次 2026-11-20 · 来源 对话")


def test_an_english_memory_line_flattens_whitespace_and_says_when_it_was_never_used():
    assert texts.memory_line(NEW, "en-US") == (
        "#13 · fact · lives in Berlin · confidence 1 · used 1 time · last — · source manual")


def test_a_remembered_memory_says_so_and_an_imported_one_says_where_it_came_from():
    remembered = dataclasses.replace(NEW, source="user_stated", verified=True)
    imported = dataclasses.replace(NEW, source="imported")
    assert texts.memory_line(remembered, "en").endswith("source /remember")
    assert texts.memory_line(imported, "zh-CN").endswith("来源 导入")


def test_the_recycle_bin_lists_each_memory_with_the_day_it_will_be_purged():
    binned = dataclasses.replace(TEA, binned_at=NOW)
    listing = MemoryPage(items=(binned,), page=1, pages=1, total=1, type_filter=None, search=None, forgotten=True)
    assert "#12 · preference · 喜欢乌龙茶 · 2026-12-22 彻底删除" in texts.memory_page_text(listing, "zh-CN")
    assert "purged 2026-12-22" in texts.memory_page_text(listing, "en")
    empty = MemoryPage(items=(), page=1, pages=1, total=0, type_filter=None, search=None, forgotten=True)
    assert texts.memory_page_text(empty, "en") == "Nothing is in the recycle bin: I have forgotten nothing on my own."


def test_a_memory_page_has_a_header_with_the_filters_and_a_page_footer():
    english = texts.memory_page_text(page(TEA, NEW, type_filter="preference", search="茶"), "en")
    assert english.splitlines()[0] == "What I remember about you (25) · type preference · search 茶"
    assert english.splitlines()[-1] == "page 1/3"
    assert texts.memory_page_text(page(TEA, number=2), "zh").splitlines()[-1] == "第 2/3 页"


def test_an_empty_page_says_so_differently_with_and_without_a_filter():
    empty = MemoryPage(items=(), page=1, pages=1, total=0, type_filter=None, search=None)
    assert texts.memory_page_text(empty, "en") == "I don't remember anything about you yet."
    assert texts.memory_page_text(MemoryPage((), 1, 1, 0, None, "x"), "zh") == "没有找到匹配的记忆。"


def test_the_locale_picks_chinese_only_for_zh():
    assert texts.is_chinese("zh-TW")
    assert texts.is_chinese("ZH")
    assert texts.is_chinese("zh_Hans")
    assert not texts.is_chinese("en-US")
    assert not texts.is_chinese(None)
    assert not texts.is_chinese("")


@pytest.mark.parametrize("locale", ["en", "zh-CN"])
def test_help_lists_every_command_with_a_description(locale):
    help_text = texts.help_text(locale)
    for name, english, chinese in texts.COMMANDS:
        assert f"/{name} — {chinese if locale == 'zh-CN' else english}" in help_text
    assert "/link unlink" in help_text


def test_the_command_menu_has_every_command_with_descriptions_that_fit_discord_and_telegram():
    names = [name for name, _, _ in texts.COMMANDS]
    assert names == ["memories", "forget", "remember", "reminders", "remind", "done", "snooze", "cancel", "timezone",
                     "followups",
                     "export", "import", "pause", "resume", "link", "panel", "usage", "help"]
    for name, english, chinese in texts.COMMANDS:
        assert re.fullmatch(r"[a-z0-9_]{1,32}", name)
        assert 1 <= len(english) <= 100
        assert 1 <= len(chinese) <= 100


def test_an_origin_quotes_the_message_and_its_link_or_says_where_it_came_from():
    origin = MemoryOrigin(TEA, "我很喜欢乌龙茶！", datetime(2026, 11, 20, 8, 3, tzinfo=UTC), "discord", "9", "42")
    shown = texts.origin_text(origin, "zh", "https://discord.com/channels/@me/9/42")
    assert "来自你 2026-11-20 08:03 UTC 的消息：「我很喜欢乌龙茶！」" in shown
    assert shown.endswith("https://discord.com/channels/@me/9/42")
    assert "/remember" in texts.origin_text(MemoryOrigin(NEW, None, None, None, None, None), "en", None)


def test_a_confirmation_names_what_goes_counts_the_rest_and_when_the_buttons_stop_working():
    some = Confirmation("t" * 22, "forget", 7, ("喜欢乌龙茶", "喜欢绿茶"), NOW + timedelta(minutes=5))
    shown = texts.confirmation_text(some, "en", now=NOW)
    assert shown.startswith("Forget these 7 memories?")
    assert "• 喜欢乌龙茶" in shown
    assert "… and 5 more" in shown
    assert "5 minutes" in shown
    everything = Confirmation("t" * 22, "forget", 2, (), NOW + timedelta(minutes=5), everything=True)
    assert "一切" in texts.confirmation_text(everything, "zh", now=NOW)
    assert "reminders stay" in texts.confirmation_text(everything, "en", now=NOW)
    assert texts.confirm_button_labels("zh") == ("确认删除", "取消")


def test_a_forget_by_search_names_the_exchanges_it_takes_beside_the_memories():
    both = Confirmation("t" * 22, "forget", 1, ("喜欢乌龙茶",), NOW + timedelta(minutes=5), rounds=3,
                        round_preview=("2026-11-20 我在喝乌龙茶",))
    shown = texts.confirmation_text(both, "en", now=NOW)
    assert shown.startswith("Forget this memory and 3 exchanges of ours?")
    assert "• 2026-11-20 you said: 我在喝乌龙茶" in shown
    assert "… and 2 more exchanges" in shown
    only_said = Confirmation("t" * 22, "forget", 0, (), NOW + timedelta(minutes=5), rounds=1,
                             round_preview=("2026-11-20 tea time",))
    assert texts.confirmation_text(only_said, "zh", now=NOW).startswith("确定删除这 1 段对话吗？")


def test_results_read_naturally_in_both_languages():
    assert texts.forgotten_text(1, "en") == "Done: 1 memory forgotten for good."
    assert texts.forgotten_text(3, "zh") == "已彻底删除 3 条记忆。"
    assert texts.remembered_text(TEA, "zh") == "好的，我记住了：喜欢乌龙茶（#12，preference）"
    assert texts.paused_text(True, "en").startswith("Paused") and texts.paused_text(False, "zh") == (
        "已恢复，我会继续记住你说的事。")
    assert texts.unlinked_text("en")
    assert texts.cancelled_text("en")


def test_reminders_show_their_local_time_and_zone():
    assert texts.reminders_text((MEETING,), "zh") == "你的提醒：\n#3 · 11月23日 周一 09:00（Asia/Shanghai） · 开会"
    assert texts.reminder_added_text(MEETING, "en") == (
        "⏰ I'll remind you Mon 23 Nov 09:00 (Asia/Shanghai): 开会 (#3)")
    assert "/remind" in texts.reminders_text((), "en")
    done = ReminderItem(3, "开会", MEETING.due_at, "Asia/Shanghai", "done")
    assert texts.reminder_updated_text(done, "en") == "Reminder #3 marked done."


def test_a_deadline_shows_when_it_pings_and_when_it_is_due():
    lisbon = ZoneInfo("Europe/Lisbon")
    report = ReminderItem(id=8, content="send the report", due_at=datetime(2027, 3, 12, 16, 0, tzinfo=lisbon),
                          timezone="Europe/Lisbon", status="pending", kind="deadline",
                          deadline=datetime(2027, 3, 12, 17, 0, tzinfo=lisbon))
    assert texts.reminders_text((report,), "en").splitlines()[1] == (
        "#8 · Fri 12 Mar 16:00 (Europe/Lisbon) · send the report · due Fri 12 Mar 17:00 (Europe/Lisbon)")
    assert texts.reminders_text((report,), "zh").endswith("send the report · 截止 3月12日 周五 17:00（Europe/Lisbon）")
    assert texts.reminder_added_text(report, "en") == (
        "⏰ Due Fri 12 Mar 17:00 (Europe/Lisbon): send the report. I'll remind you Fri 12 Mar 16:00 (Europe/Lisbon) "
        "(#8).")


def test_the_first_reminder_made_in_the_default_zone_says_so_and_how_to_change_it():
    added = texts.reminder_change_text(ReminderChange("add", MEETING, default_zone="Asia/Shanghai"), "zh")
    assert added.splitlines()[1] == ("（时间按本机器人默认的 Asia/Shanghai 计算，因为你还没设置时区。告诉我你在哪里，"
                                     "比如“我在上海”，或者发送 /timezone 城市名。）")
    assert "/timezone" not in texts.reminder_change_text(ReminderChange("add", MEETING), "zh")


def test_a_ping_says_when_a_deadline_is_due_and_a_reminder_its_time():
    tokyo = ZoneInfo("Asia/Tokyo")
    due = datetime(2027, 3, 12, 9, 0, tzinfo=tokyo)
    assert reminder_text("hand in the form", due, "Asia/Tokyo", "en") == "⏰ Reminder: hand in the form (09:00)"
    assert reminder_text("hand in the form", due, "Asia/Tokyo", "en", remind_at=due - timedelta(hours=1),
                         deadline=True) == "⏰ Heads-up: hand in the form (due 09:00)"
    assert reminder_text("交表", due, "Asia/Tokyo", "en", remind_at=due - timedelta(hours=10),
                         deadline=True) == "⏰ 提醒：交表（03-12 09:00 截止）"  # the day before: the date too
    assert reminder_text("交表", due, "UTC+05:30", "zh") == "⏰ 提醒：交表（05:30）"


def test_the_timezone_answer_names_the_zone_its_offset_and_what_the_reminders_did():
    shanghai, default = UserZone("Asia/Shanghai", True, "UTC"), UserZone("UTC", False, "UTC")
    assert zone_text(ZoneChange(default, default), "en", NOW).startswith(
        "You haven't set a time zone, so I use UTC, this bot's default.")
    assert zone_text(ZoneChange(shanghai, shanghai), "zh", NOW) == (
        "你的时区：Asia/Shanghai (UTC+08:00)。用 /timezone 城市名 可以修改。")
    assert zone_text(ZoneChange(default, shanghai, moved=2, kept=1), "en", NOW) == (
        "Time zone set to Asia/Shanghai (UTC+08:00). 2 pending reminders keep their clock time (08:30 is still "
        "08:30, now in this zone). 1 set as “in N minutes” keeps its moment.")
    assert zone_text(ZoneChange(shanghai, default), "zh", NOW) == "已恢复为本机器人默认的时区 UTC。"
    assert zone_notices(ZoneChange(shanghai, shanghai), "上海", NOW) == []  # nothing changed: nothing said
    assert notices_text(zone_notices(SeveralZones("美国", ("New York", "Chicago")), "美国", NOW), True) == (
        "美国有好几个时区，我没有改你的时区。告诉我城市，或发送 /timezone New York（可选：New York、Chicago）。")
    assert notices_text(zone_notices(ZoneChange(default, shanghai, moved=2, kept=1), "Hangzhou", NOW), False) == (
        "Time zone set to Asia/Shanghai (UTC+08:00), from “Hangzhou” (/timezone changes it). 2 pending reminders "
        "keep their clock time (08:30 is still 08:30, now in this zone). 1 set as “in N minutes” keeps its moment.")
    assert texts.error_text(InvalidCommand("zone_unknown", what="Atlantis"), "en").startswith(
        "I don't know the time zone “Atlantis”.")


def test_an_import_report_counts_each_section_and_lists_some_refusals():
    report = ImportReport(imported={"memories": 3, "episodes": 1, "todos": 0, "turns": 10, "profile": 1},
                          refused=tuple(f"memories[{i}]: bad" for i in range(12)), duplicates=2)
    shown = texts.import_report_text(report, "en")
    assert shown.splitlines()[0] == "Imported: 3 memories, 1 summary, 0 reminders, 10 messages, 1 profile"
    assert "Skipped 2 you already had." in shown
    assert "… and 2 more" in shown
    assert texts.import_report_text(report, "zh").startswith("已导入：记忆 3、摘要 1、提醒 0、聊天记录 10、档案 1")


def test_an_import_report_names_the_follow_up_threads_when_the_file_had_some():
    report = ImportReport(imported={"memories": 0, "episodes": 0, "todos": 0, "turns": 2, "threads": 2, "profile": 0},
                          refused=())
    assert texts.import_report_text(report, "en").endswith(", 0 profiles, 2 follow-up threads")
    assert texts.import_report_text(report, "zh").endswith("、档案 0、待回访的事 2")


def test_a_link_code_says_how_to_use_it_and_for_how_long():
    shown = texts.link_code_text(LinkCode("K7M2QX9P", NOW + timedelta(minutes=4)), "en", now=NOW)
    assert "K7M2QX9P" in shown
    assert "/link K7M2QX9P" in shown
    assert "4 minutes" in shown


def test_a_link_request_names_the_account_it_would_join_and_how_to_confirm_there():
    request = LinkRequest("W3XR8TQA", NOW + timedelta(minutes=5), (Account("telegram", "Alice"),
                                                                   Account("console", "local")))
    english, chinese = texts.link_request_text(request, "en", now=NOW), texts.link_request_text(request, "zh", now=NOW)
    assert "the Telegram account “Alice” and the console account “local”" in english
    assert "Telegram 账号「Alice」、console 账号「local」" in chinese
    for shown in (english, chinese):
        assert "/link confirm W3XR8TQA" in shown
        assert "5" in shown
    assert "Discord account “mallory”" in texts.linked_text(Account("discord", "mallory"), "en")
    assert "Discord 账号「mallory」" in texts.linked_text(Account("discord", "mallory"), "zh")


def test_every_error_key_the_services_raise_has_a_text_in_both_languages():
    raised = set()
    for path in SHARED.rglob("*.py"):
        raised |= set(re.findall(r'(?:InvalidCommand|NotFound|ConfirmationInvalid)\("([a-z_]+)"', path.read_text()))
    assert raised, raised - set(texts.ERRORS)
    assert raised <= set(texts.ERRORS), raised - set(texts.ERRORS)
    for english, chinese in texts.ERRORS.values():
        assert english
        assert chinese
        assert english != chinese


def test_errors_are_rendered_with_their_parameters_and_unknown_ones_get_a_general_message():
    assert texts.error_text(InvalidCommand("too_long", limit=500), "en") == (
        "That's too long: at most 500 characters, please.")
    assert texts.error_text(InvalidCommand("reminder_not_pending", status="done"), "zh") == "这个提醒已完成。"
    assert texts.error_text(InvalidCommand("forget_no_match", search="x" * 500 + "{0}"), "en").count("x") < 100
    assert texts.error_text(NotFound("memory_not_found"), "zh") == "找不到这条记忆。"
    assert texts.error_text(NotFound(), "en") == "I can't find that."
    assert texts.error_text(ConfirmationInvalid(), "en").startswith("This confirmation is no longer valid")
    assert texts.error_text(RuntimeError("boom"), "zh") == "出了点问题，请重试。"
    assert texts.error_text(InvalidCommand("too_long"), "en") == texts.ERRORS["unexpected"][0]  # missing parameter
