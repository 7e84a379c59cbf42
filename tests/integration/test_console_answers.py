"""What the console answers a new user, through its real chat loop on real PostgreSQL: the commands /help
advertises do what it says, refusals say what is true and what to type instead, a Chinese user is answered in
Chinese down to the warnings, a goodbye gets a goodbye, and "what do you remember about me" says how much
there is."""

from __future__ import annotations

import asyncio
import re
from datetime import timedelta

import pytest

from bench.fakes.openai_server import FakeOpenAI
from bot.console import chat_loop
from bot.console_commands import ConsoleCommands
from shared.commands import texts
from shared.commands.service import Caller, MemoryCommands
from shared.conversation.config import ConversationConfig
from shared.conversation.service import ConversationService
from shared.errors import InvalidCommand
from shared.llm.client import ChatModel
from tests.builders import typed
from tests.integration.test_console_commands import run_console

CONFIG = ConversationConfig(bot_name="Mnemo", personality="a friend", emotion_enabled=True, retrieval_limit=5,
                            memory_budget_tokens=700, history_turns=15, idle=timedelta(minutes=30),
                            default_timezone="Europe/Lisbon")


def test_link_unlink_as_help_advertises_it_separates_linked_accounts(uow_factory, tmp_path):
    service = MemoryCommands(uow_factory, default_timezone="Europe/Lisbon")
    laptop = ConsoleCommands(service, Caller("console", "lin", display_name="lin", locale="en"),
                             ask=lambda _question: "n", export_dir=tmp_path)
    phone = ConsoleCommands(service, Caller("telegram", "777", display_name="Lin", locale="en"),
                            ask=lambda _question: "n", export_dir=tmp_path)
    assert laptop.run("/link Unlink") == texts.error_text(InvalidCommand("unlink_only_identity"), "en")
    laptop.run("/remember I keep bees")
    code = re.search(r"/link ([A-Z0-9]{8})", laptop.run("/link")).group(1)
    second = re.search(r"/link confirm ([A-Z0-9]{8})", phone.run(f"/link {code}")).group(1)
    laptop.run(f"/link confirm {second}")
    assert "bees" in phone.run("/memories")
    assert laptop.run("/link unlink") == texts.unlinked_text("en")
    assert "bees" not in laptop.run("/memories") and "bees" in phone.run("/memories")  # this account starts afresh
    assert "/link unlink" in laptop.run("/help")


def test_done_without_an_id_names_a_real_open_reminder_or_says_there_is_none(uow_factory, tmp_path):
    none_yet, set_one, set_two, done, snooze, worded, chinese = run_console(uow_factory, tmp_path, [
        "/done", "/remind in 3 hours call the plumber", "/remind tomorrow 7am jog", "/done", "/snooze please",
        "/remind done", "/remind 取消"])
    assert "no open reminders" in none_yet and "/reminders" in none_yet and "#" not in none_yet
    plumber, jog = (re.search(r"\(#(\d+)\)", line)[1] for line in (set_one, set_two))
    for answer, command in ((done, "/done"), (snooze, "/snooze"), (worded, "/done")):
        assert f"{command} {plumber}." in answer and f"#{plumber}, #{jog}" in answer, answer
        assert set(re.findall(r"#(\d+)", answer)) == {plumber, jog}, answer  # no made-up example (#12)
    assert f"/cancel {plumber}" in chinese and "哪一个提醒" in chinese


def test_a_reminder_for_a_time_gone_by_is_refused_with_its_words_to_send_again(uow_factory, tmp_path):
    english, chinese, listing = run_console(uow_factory, tmp_path, [
        "/remind yesterday at 5pm return the library books", "/remind 昨天晚上8点 给花浇水", "/reminders"])
    assert english.startswith("“yesterday at 5pm” has already passed, so nothing was set")
    assert english.endswith("/remind <when> return the library books")
    assert chinese.startswith("「昨天晚上8点」已经过去了") and chinese.endswith("/remind <时间> 给花浇水")
    assert "No pending reminders" in listing or "没有待提醒" in listing


def test_import_finds_a_relative_path_from_the_current_directory_and_says_which_file_is_missing(
        uow_factory, tmp_path, monkeypatch):
    (tmp_path / "backups").mkdir()
    monkeypatch.chdir(tmp_path / "backups")
    run_console(uow_factory, tmp_path, ["/remember I collect old maps", "/export ../my maps.json"])
    assert (tmp_path / "my maps.json").is_file()
    _forgot, missing, empty, imported, quoted, listing = run_console(uow_factory, tmp_path, [
        "/forget all", "/import maps.json", "/import", "/import ../my maps.json", "/import '../my maps.json'",
        "/memories"], answers=["y"])
    here = tmp_path / "backups"
    assert missing == f"There is no file at {here / 'maps.json'}. Check the path (a relative one starts at {here})."
    assert empty.startswith("Which file? /import <path") and str(here) in empty
    assert "attach" not in missing + empty
    assert "old maps" in listing and imported != quoted  # the second import of the same file adds nothing new


def test_a_chinese_users_commands_with_english_syntax_words_are_answered_in_chinese(uow_factory, tmp_path):
    _said, by_type, why, forget_all, remind_done = run_console(uow_factory, tmp_path, [
        "我哥哥叫大伟", "/memories person", "/memories why 424242", "/forget all", "/remind done"],
        answers=["n"], locale="en")
    assert by_type.startswith("我记得的关于你的事") and "大伟" in by_type
    assert why == "找不到这条记忆。"
    assert forget_all == texts.cancelled_text("zh")
    assert remind_done.startswith("你现在没有待提醒的事项")


def test_warnings_under_a_reply_come_in_the_language_of_the_user(uow_factory, tmp_path):
    _paused, chinese, _english_paused, english = run_console(uow_factory, tmp_path, [
        "/pause", "我住在厦门", "/pause", "I live in Bristol"], locale="en")
    assert chinese.startswith("Mnemo（离线）> ")
    assert chinese.splitlines()[1:] == ["  · 记忆已暂停，没有记下新内容。"]
    assert english.startswith("Mnemo (offline)> ")
    assert english.splitlines()[1:] == ["  · Remembering is paused; nothing new was stored."]


@pytest.mark.parametrize(("goodbye", "kind"), [("thanks a lot, that's everything for tonight", "thanks"),
                                               ("ok, talk to you tomorrow", "bye"),
                                               ("谢谢你，今天先到这里吧", "thanks"), ("好的，回头聊", "bye")])
def test_a_goodbye_is_answered_with_a_goodbye(uow_factory, tmp_path, goodbye, kind):
    [reply] = run_console(uow_factory, tmp_path, [goodbye])
    words = {"thanks": ("welcome", "Any time", "Glad", "不客气", "不用谢", "帮上忙"),
             "bye": ("talk soon", "Take care", "see you", "回头见", "下次聊", "来找我聊")}[kind]
    assert any(word in reply for word in words), reply
    assert not any(cheer in reply for cheer in ("great news", "Love to hear", "wonderful", "很棒", "高兴", "开心"))


def test_what_is_remembered_of_the_user_says_how_many_more_there_are_offline(uow_factory, tmp_path):
    facts = ["我住在成都", "我是一名建筑师", "我喜欢爬山", "我养了一只叫团子的猫", "我妹妹叫小雨",
             "我最喜欢的菜是麻婆豆腐"]
    *_told, answer = run_console(uow_factory, tmp_path, [*facts, "你都记得关于我的哪些事？"], locale="en")
    listed = answer.split("我记得：")[1]
    shown = sum(fact.removeprefix("我")[:2] in listed for fact in facts)
    assert 0 < shown < len(facts) and f"还有{len(facts) - shown}条，/memories 可以看全部" in answer


def test_a_models_answer_about_the_user_is_followed_by_how_many_memories_there_are(uow_factory, tmp_path):
    remembered = ["I grow tomatoes", "I work night shifts", "My brother is Tom", "I live in Porto",
                  "I like jazz", "My cat is Miso", "I speak Greek", "I run on Sundays"]
    with FakeOpenAI(models=("fake-chat",)) as llm:
        llm.set_responder(lambda _request: {
            "emotion": {"primary": "neutral", "category": "neutral", "confidence": 0.9, "indicators": []},
            "response": "You grow tomatoes and work night shifts.", "memory_update": {"should_store": False,
                                                                                     "entries": []},
            "todos": [], "topic": None, "context_variables": []})
        model = ChatModel(base_url=llm.base_url, api_key="test", model="fake-chat", timeout_seconds=10)
        service = ConversationService(uow_factory, CONFIG, chat_model=model)
        caller = Caller(platform="console", platform_user_id="tester", locale="en", platform_chat_id="console")
        commands = ConsoleCommands(MemoryCommands(uow_factory, default_timezone="Europe/Lisbon"), caller,
                                   ask=lambda _question: "n", export_dir=tmp_path)
        read_line = typed([*(f"/remember {fact}" for fact in remembered), "What have you learned about me so far?",
                           "what's the weather like?"])
        out: list[str] = []

        asyncio.run(chat_loop(service, user_id="tester", bot_name="Mnemo", read_line=read_line, write=out.append,
                              commands=commands))
    asked, other = out[-3], out[-2]
    assert asked.startswith("Mnemo> You grow tomatoes")
    assert asked.splitlines()[1] == "  · I remember 8 things about you in all: /memories shows them all."
    assert "/memories" not in other
