"""The console's commands through the real chat loop: same service and texts as the bots."""

from __future__ import annotations

import asyncio
import json
import re
import stat
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

from sqlalchemy import select

from bot.console import chat_loop, console_locale
from bot.console_commands import ConsoleCommands
from shared.commands import texts
from shared.commands.service import Caller, MemoryCommands
from shared.conversation.config import ConversationConfig
from shared.conversation.service import ConversationService
from shared.db.memory_models import Memory
from shared.errors import ConfirmationInvalid, InvalidCommand

CONFIG = ConversationConfig(bot_name="Mnemo", personality="a friend", emotion_enabled=True, retrieval_limit=5,
                            memory_budget_tokens=700, history_turns=15, idle=timedelta(minutes=30),
                            default_timezone="Asia/Shanghai")


def run_console(uow_factory, tmp_path, lines: list[str], answers: list[str] = (), locale: str = "en") -> list[str]:
    """What the console printed for each line (after its greeting, before its goodbye)."""
    script, replies, out = iter(lines), iter(answers), []

    def read_line(_prompt: str) -> str:
        try:
            return next(script)
        except StopIteration:
            raise EOFError from None

    caller = Caller(platform="console", platform_user_id="tester", locale=locale, platform_chat_id="console")
    commands = ConsoleCommands(MemoryCommands(uow_factory, default_timezone="Asia/Shanghai"), caller,
                               ask=lambda _question: next(replies), export_dir=tmp_path)
    service = ConversationService(uow_factory, CONFIG, chat_model=None)
    asyncio.run(chat_loop(service, user_id="tester", bot_name="Mnemo", read_line=read_line, write=out.append,
                          commands=commands))
    return out[1:-1]


def test_remember_list_and_forget_with_confirmation(uow_factory, tmp_path):
    remembered, stated, before, forgotten, after = run_console(
        uow_factory, tmp_path, ["/remember preference: oolong tea", "I live in Lisbon", "/memories",
                                "/forget oolong", "/memories"], answers=["y"])
    assert "oolong tea" in remembered and "Lisbon" in stated
    assert "oolong tea" in before and "Lisbon" in before
    assert "1" in forgotten
    assert "oolong tea" not in after and "Lisbon" in after


def test_answering_no_keeps_everything(uow_factory, tmp_path):
    *_, listing = run_console(uow_factory, tmp_path, ["/remember I have a cat named Mochi", "/forget all",
                                                      "/memories"], answers=["n"])
    assert "Mochi" in listing


def test_export_then_import_into_a_fresh_start_restores_the_memories(uow_factory, tmp_path):
    path = tmp_path / "export.json"
    run_console(uow_factory, tmp_path, ["/remember likes hiking", f"/export {path}"])
    assert json.loads(path.read_text())["format"] == "mnemo-export"
    _forgotten, _imported, listing = run_console(uow_factory, tmp_path, ["/forget all", f"/import {path}",
                                                                        "/memories"], answers=["y"])
    assert "likes hiking" in listing


def test_hostile_arguments_get_a_clear_message_and_change_nothing(uow_factory, tmp_path):
    answers = run_console(uow_factory, tmp_path, [
        "/memories why 999999999999999999999", "/forget #-1", "/remember " + "x" * 100_000, "/snooze abc",
        "/import /nonexistent", "/remind whenever", "/link ???", "/remember a\x00b\x07c", "/memories"])
    *errors, listing = answers
    assert all(len(answer) < 300 for answer in errors), errors
    assert "x" * 600 not in listing


def test_why_on_a_replaced_memory_shows_it_with_the_message_and_the_version_that_replaced_it(uow_factory, tmp_path):
    run_console(uow_factory, tmp_path, ["I live in Lisbon", "I live in Porto"])
    with uow_factory() as uow:
        ids = {m.content: m.id for m in uow.session.scalars(select(Memory))}

    [why] = run_console(uow_factory, tmp_path, [f"/memories why {ids['I live in Lisbon']}"])

    lines = why.splitlines()
    assert lines[0] == f"#{ids['I live in Lisbon']} · fact · I live in Lisbon"
    assert lines[1].startswith("From your message") and lines[1].endswith("“I live in Lisbon”")
    assert lines[2:] == [f"Replaced by #{ids['I live in Porto']}: “I live in Porto”"]


def test_command_texts_follow_a_chinese_locale(uow_factory, tmp_path):
    [help_text] = run_console(uow_factory, tmp_path, ["/help"], locale="zh-CN")
    assert "我能做的事" in help_text


def test_panel_prints_a_one_time_sign_in_link(uow_factory, tmp_path):
    [first, second] = run_console(uow_factory, tmp_path, ["/panel", "/panel"])
    assert "/panel/sign-in?token=" in first and "/panel/sign-in?token=" in second
    assert first.split("token=")[1].split()[0] != second.split("token=")[1].split()[0]


def test_remind_cancel_done_and_snooze_work_after_remind_and_as_their_own_commands(uow_factory, tmp_path):
    added = run_console(uow_factory, tmp_path, ["/remind in 2 hours water the ferns", "/remind in 3 hours call the vet",
                                                "/remind in 4 hours pay rent"])
    ferns, vet, rent = (re.search(r"\(#(\d+)\)", line)[1] for line in added)
    cancelled, done, snoozed, snoozed_again, listing, help_text = run_console(uow_factory, tmp_path, [
        f"/remind cancel {ferns}", f"/done {vet}", f"/remind snooze {rent} 15", f"/snooze {rent}", "/reminders",
        "/help"])
    assert f"#{ferns} cancelled" in cancelled and f"#{vet} marked done" in done
    assert "remind you again" in snoozed and "remind you again" in snoozed_again
    assert "pay rent" in listing and "ferns" not in listing and "vet" not in listing
    for command in ("/cancel", "/done", "/snooze", "/remind cancel"):
        assert command in help_text


def test_link_names_both_accounts_and_joins_only_when_the_first_code_owner_confirms(uow_factory, tmp_path):
    service = MemoryCommands(uow_factory, default_timezone="Asia/Shanghai")

    def console_of(caller: Caller) -> ConsoleCommands:
        return ConsoleCommands(service, caller, ask=lambda _question: "n", export_dir=tmp_path)

    desk = console_of(Caller("console", "desk-user", display_name="desk", locale="en"))
    phone = console_of(Caller("telegram", "4242", display_name="Kai", locale="zh-CN"))
    desk.run("/remember likes rainy days")

    code = re.search(r"/link ([A-Z0-9]{8})", desk.run("/link")).group(1)
    asked = phone.run(f"/link {code}")
    assert "console 账号「desk」" in asked and "likes rainy days" not in phone.run("/memories")
    second = re.search(r"/link confirm ([A-Z0-9]{8})", asked).group(1)
    refused = texts.error_text(ConfirmationInvalid("link_code_invalid"), "zh-CN")
    assert phone.run(f"/link confirm {second}") == refused  # only the first code's owner confirms
    assert "the Telegram account “Kai”" in desk.run(f"/link confirm {second}")
    assert "likes rainy days" in phone.run("/memories")


def test_command_texts_follow_the_language_the_user_writes_in_not_the_terminals(uow_factory, tmp_path):
    _said, reminder, listing, _said_too, help_text = run_console(uow_factory, tmp_path, [
        "我每天晚上都去公园散步", "/remind 明天下午3点 给妈妈打电话", "/reminders", "I walk my dog after dinner",
        "/help"], locale="en_GB")
    assert reminder.startswith("⏰ 好的，我会在") and "给妈妈打电话" in reminder
    assert listing.startswith("你的提醒")
    assert help_text.startswith("What I can do")


def test_a_command_without_words_keeps_the_language_last_written(uow_factory, tmp_path):
    _said, memories, refused = run_console(uow_factory, tmp_path, ["我养了一只叫豆豆的狗", "/memories", "/forget #-1"],
                                           locale="en")
    assert memories.startswith("我记得的关于你的事")
    assert refused == "找不到这条记忆。"


def test_the_next_console_starts_in_the_language_stored_from_the_last_one(uow_factory, tmp_path, monkeypatch):
    for variable in ("LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("LANG", "pt_PT.UTF-8")
    run_console(uow_factory, tmp_path, ["我在杭州工作"], locale="en")
    runtime = SimpleNamespace(uow=uow_factory)  # console_locale reads only the runtime's unit of work
    assert console_locale(runtime, "tester") == "zh"
    assert console_locale(runtime, "someone-new") == "pt-PT"  # nothing stored yet: the terminal's


def test_forget_asks_for_a_typed_answer_and_mentions_no_buttons(uow_factory, tmp_path):
    asked: list[str] = []
    caller = Caller(platform="console", platform_user_id="ruth", locale="en", platform_chat_id="console")
    commands = ConsoleCommands(MemoryCommands(uow_factory, default_timezone="Europe/Madrid"), caller,
                               ask=lambda question: asked.append(question) or "n", export_dir=tmp_path)
    commands.run("/remember I grow tomatoes on the roof")
    commands.run("/remember 我喜欢吃饺子")
    assert commands.run("/forget tomatoes") == "Okay, nothing was deleted."
    assert commands.run("/forget 饺子") == "好的，什么都没有删除。"
    assert "Type y to forget or n to keep" in asked[0] and "button" not in asked[0]
    assert "输入 y 确认" in asked[1] and "按钮" not in asked[1]


def test_export_says_how_many_memories_it_wrote_and_where(uow_factory, tmp_path):
    path = tmp_path / "mine.json"
    _remembered, _second, exported = run_console(uow_factory, tmp_path, [
        "/remember 我的生日是三月五号", "/remember 我住在成都", f"/export {path}"])
    assert exported == f"已把 2 条记忆（及聊天记录）导出到 {path}"


def console_of(uow_factory, export_dir, user: str, now: datetime) -> ConsoleCommands:
    caller = Caller(platform="console", platform_user_id=user, locale="en", platform_chat_id="console")
    return ConsoleCommands(MemoryCommands(uow_factory, default_timezone="UTC", clock=lambda: now), caller,
                           ask=lambda _question: "n", export_dir=export_dir)


def test_console_exports_are_private_and_one_file_per_user_and_moment(uow_factory, tmp_path):
    export_dir = tmp_path / "exports"
    export_dir.mkdir(mode=0o755)
    export_dir.chmod(0o755)  # as an older version left it
    moment = datetime(2027, 3, 9, 16, 45, 12, tzinfo=UTC)
    users = ["gwen", "Gwen", "gwen smith", "gwen/smith"]
    for user in users:
        console = console_of(uow_factory, export_dir, user, moment)
        console.run(f"/remember {user} keeps bees")
        console.run("/export")
    console_of(uow_factory, export_dir, "gwen", moment).run("/export")  # the same user, the same moment
    files = sorted(export_dir.iterdir())
    assert len(files) == len(users) + 1
    assert all(stat.S_IMODE(path.stat().st_mode) == 0o600 for path in files)
    assert stat.S_IMODE(export_dir.stat().st_mode) == 0o700
    contents = {json.loads(path.read_bytes())["memories"][0]["content"] for path in files}
    assert contents == {f"{user} keeps bees" for user in users}


def test_an_export_to_a_named_file_is_private_even_over_a_readable_one(uow_factory, tmp_path):
    named = tmp_path / "backup" / "mine.json"
    named.parent.mkdir()
    named.write_text("old")
    named.chmod(0o644)
    console = console_of(uow_factory, tmp_path, "hal", datetime(2027, 1, 2, 3, 4, 5, tzinfo=UTC))
    console.run("/remember hal likes radishes")
    console.run(f"/export {named}")
    assert stat.S_IMODE(named.stat().st_mode) == 0o600
    assert json.loads(named.read_bytes())["memories"][0]["content"] == "hal likes radishes"


def test_memories_forgotten_lists_the_recycle_bin_and_restore_brings_one_back(uow_factory, tmp_path):
    run_console(uow_factory, tmp_path, ["I like the band Low"])
    with uow_factory() as uow:
        [memory] = uow.session.scalars(select(Memory)).all()
        memory.deleted_at = memory.created_at + timedelta(days=90)  # as the 90-day rule does
        uow.commit()
    listed, restored, again, kept = run_console(uow_factory, tmp_path, [
        "/memories forgotten", f"/memories restore {memory.id}", "/memories forgotten", "/memories"])
    assert f"#{memory.id}" in listed and "band Low" in listed and "purged" in listed
    assert f"Restored #{memory.id}" in restored
    assert "Nothing is in the recycle bin" in again and "band Low" in kept


def test_a_type_named_in_chinese_or_english_filters_memories_as_on_telegram_and_other_words_are_searched(
        uow_factory, tmp_path):
    *_, chinese, english, searched, bad_page = run_console(uow_factory, tmp_path, [
        "/remember preference: oolong tea", "/remember fact: I have a cat named Mochi", "/memories 偏好",
        "/memories Preference", "/memories Mochi", "/memories forgotten two"])
    assert "oolong tea" in chinese and "Mochi" not in chinese
    assert "oolong tea" in english and "Mochi" not in english
    assert "Mochi" in searched and "oolong" not in searched
    assert bad_page == texts.error_text(InvalidCommand("page_not_number"), "en")


def test_the_time_zone_is_shown_set_by_command_or_in_chat_and_reminders_follow_it(uow_factory, tmp_path):
    shown, remind, said, again, listed, bad, deadline, listed_after = run_console(uow_factory, tmp_path, [
        "/timezone", "/remind tomorrow 7:45am walk the dog", "I live in Vancouver now", "/timezone",
        "/reminders", "/timezone Narnia", "/remind Friday 5pm the tax return is due", "/reminders"])
    assert shown.startswith("You haven't set a time zone, so I use Asia/Shanghai")
    assert "(Times are in Asia/Shanghai, this bot's default" in remind  # once, with the first reminder
    assert "Time zone set to America/Vancouver" in said and "1 pending reminder keeps its clock time" in said
    assert again.startswith("Your time zone: America/Vancouver (UTC-0")
    assert "07:45 (America/Vancouver) · walk the dog" in listed
    assert bad.startswith("I don't know the time zone “Narnia”")
    assert "Due Fri" in deadline and "17:00 (America/Vancouver): the tax return" in deadline
    assert "Times are in" not in deadline
    assert "16:00 (America/Vancouver) · the tax return · due Fri" in listed_after
