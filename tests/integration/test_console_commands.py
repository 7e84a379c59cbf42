"""The console's commands through the real chat loop: same service and texts as the bots."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import timedelta

from bot.console import chat_loop
from bot.console_commands import ConsoleCommands
from shared.commands.service import Caller, MemoryCommands
from shared.conversation.config import ConversationConfig
from shared.conversation.service import ConversationService

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
