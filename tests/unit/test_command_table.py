"""The one command table: how a typed line reads, and that every front-end offers exactly its commands."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from discord import AppCommandOptionType
from telegram.ext import CommandHandler

from bot import discord_commands
from bot.console_commands import ConsoleCommands
from bot.discord_render import slash_spelling
from bot.telegram_access import BUTTONS
from bot.telegram_bot import build_application
from shared.access.rule import OWN_DATA_COMMANDS
from shared.commands import table, texts
from shared.commands.service import Caller, MemoryCommands
from shared.commands.table import COMMANDS, Frontend, Kind, read
from shared.db.kinds import MEMORY_TYPES
from shared.errors import InvalidCommand
from shared.settings import Settings

TEXT_FRONT_ENDS = (Frontend.CONSOLE, Frontend.TELEGRAM)
DISCORD_OPTION_TYPES = {Kind.TYPE: AppCommandOptionType.string, Kind.WORDS: AppCommandOptionType.string,
                        Kind.MEMORY_ID: AppCommandOptionType.integer, Kind.PAGE: AppCommandOptionType.integer,
                        Kind.NUMBER: AppCommandOptionType.integer, Kind.FILE: AppCommandOptionType.attachment}


def reading(typed: str, frontend: Frontend = Frontend.CONSOLE) -> table.Reading:
    head, _, rest = typed.removeprefix("/").partition(" ")
    found = read(head, rest, frontend)
    assert found is not None
    return found


@pytest.mark.parametrize("frontend", TEXT_FRONT_ENDS)
@pytest.mark.parametrize(("typed", "kind", "words"), [
    ("/memories 偏好", "preference", ""),
    ("/memories preference", "preference", ""),
    ("/memories Preference tea", "preference", "tea"),
    ("/memories 人物 大伟", "person", "大伟"),
    ("/memories 习惯", "pattern", ""),
    ("/memories 喜欢喝茶", None, "喜欢喝茶"),
    ("/memories green tea", None, "green tea"),
    ("/memories", None, ""),
])
def test_a_word_that_names_a_type_filters_by_it_on_every_text_front_end_and_any_other_is_searched(
        frontend, typed, kind, words):
    found = reading(typed, frontend)
    assert (found.command.name, found.memory_type, found.words) == ("memories", kind, words)


def test_every_memory_type_is_named_in_english_and_in_chinese():
    assert {table.memory_type(kind) for kind in MEMORY_TYPES} == set(MEMORY_TYPES)
    chinese = {word for word in table.TYPE_WORDS if not word.isascii()}
    assert {table.TYPE_WORDS[word] for word in chinese} == set(MEMORY_TYPES)


@pytest.mark.parametrize("frontend", TEXT_FRONT_ENDS)
def test_the_words_after_memories_choose_why_forgotten_and_restore_with_their_numbers(frontend):
    assert (reading("/memories why #12", frontend).command.name, reading("/memories why #12").memory_id) == (
        "memories_why", 12)
    assert reading("/memories WHY 7", frontend).command.name == "memories_why"
    assert (reading("/memories forgotten", frontend).command.name, reading("/memories forgotten").page) == (
        "memories_forgotten", 1)
    assert reading("/memories forgotten 3", frontend).page == 3
    assert reading("/memories restore 5", frontend).named_memory() == 5


@pytest.mark.parametrize(("typed", "key"), [
    ("/memories forgotten abc", "page_not_number"), ("/memories forgotten 0", "page_not_number"),
    ("/memories forgotten ²", "page_not_number"), ("/memories forgotten 2 3", "page_not_number"),
    ("/memories why", "bad_id"), ("/memories why tea", "bad_id"),
    ("/memories restore 12 13", "bad_id"),
])
def test_bad_numbers_get_a_clear_message_in_both_languages(typed, key):
    with pytest.raises(InvalidCommand) as refused:
        reading(typed)
    assert refused.value.key == key
    english, chinese = texts.error_text(refused.value, "en"), texts.error_text(refused.value, "zh-CN")
    assert english and chinese and english != chinese and re.search(r"[\u4e00-\u9fff]", chinese)


def test_what_the_service_reads_is_handed_on_as_typed_line_breaks_kept():
    assert reading("/remember a\nb").words == "a\nb"
    assert reading("/remind tomorrow 9am call mom").words == "tomorrow 9am call mom"
    assert reading("/forget 全部 提醒").words == "全部 提醒"
    assert reading("/followups quiet 22-9").words == "quiet 22-9"
    assert reading("/snooze 4 30", Frontend.TELEGRAM).words == "4 30"


def test_a_command_is_read_only_where_it_is_offered():
    assert read("more", "", Frontend.CONSOLE) is not None and read("more", "", Frontend.TELEGRAM) is None
    assert read("start", "", Frontend.TELEGRAM) is not None and read("start", "", Frontend.CONSOLE) is None
    assert read("memories_why", "12", Frontend.CONSOLE) is None  # Discord's spelling of /memories why
    assert read("nonsense", "", Frontend.CONSOLE) is None


def test_every_command_has_a_description_in_both_languages_that_fits_the_menus():
    for command in COMMANDS:
        assert re.fullmatch(r"[a-z0-9_]{1,32}", command.name)
        english, chinese = texts.DESCRIPTIONS[command.name]
        assert 1 <= len(english) <= 100 and 1 <= len(chinese) <= 100
    assert set(texts.DESCRIPTIONS) == {command.name for command in COMMANDS}


@pytest.mark.parametrize("frontend", list(Frontend))
def test_a_name_is_one_command_on_each_front_end(frontend):
    names = [command.name for command in table.commands_on(frontend)]
    assert len(names) == len(set(names))


def test_help_and_the_menus_list_the_menu_commands_of_the_table_in_its_order():
    assert [name for name, _, _ in texts.COMMANDS] == [command.name for command in table.menu()]
    assert [command.name for command in table.menu(Frontend.CONSOLE)] == [
        command.name for command in table.menu(Frontend.DISCORD)] == [name for name, _, _ in texts.COMMANDS]


def test_binding_refuses_handlers_out_of_step_with_the_table():
    handlers = dict.fromkeys(table.heads(Frontend.TELEGRAM), "handler")
    assert [name for name, _ in table.bind(Frontend.TELEGRAM, handlers)] == list(table.heads(Frontend.TELEGRAM))
    with pytest.raises(ValueError, match="without a handler \\['start'\\]"):
        table.bind(Frontend.TELEGRAM, {name: h for name, h in handlers.items() if name != "start"})
    with pytest.raises(ValueError, match="not in the table \\['extra'\\]"):
        table.bind(Frontend.TELEGRAM, {**handlers, "extra": "handler"})


def test_the_consoles_commands_are_the_tables():
    caller = Caller(platform="console", platform_user_id="tester")
    console = ConsoleCommands(MemoryCommands(lambda: None), caller, ask=input, export_dir=Path("."))
    assert set(console._handlers) == set(table.names(Frontend.CONSOLE))


def test_the_telegram_bots_commands_and_buttons_are_the_tables():
    application = build_application(Settings(telegram_token="123:abc", _env_file=None), None,
                                    MemoryCommands(lambda: None))
    registered = [name for handler in application.handlers[0] if isinstance(handler, CommandHandler)
                  for name in handler.commands]
    assert sorted(registered) == sorted(table.heads(Frontend.TELEGRAM))
    assert set(BUTTONS.values()) <= set(table.names(Frontend.TELEGRAM))


def test_the_discord_slash_commands_and_their_options_are_the_tables():
    defined = discord_commands.COMMANDS
    assert set(defined) == set(table.names(Frontend.DISCORD))
    for command in table.commands_on(Frontend.DISCORD):
        options = [(p.display_name, p.required, p.type) for p in defined[command.name].parameters]
        assert options == [(a.name, a.required, DISCORD_OPTION_TYPES[a.kind]) for a in command.arguments]


def test_what_a_refused_user_may_still_do_names_commands_of_the_table():
    assert not OWN_DATA_COMMANDS - {command.name for command in COMMANDS}


@pytest.mark.parametrize("locale", ["en", "zh-CN"])
def test_discord_shows_the_commands_the_shared_texts_name_with_its_own_slash_names(locale):
    shown = slash_spelling(texts.help_text(locale))
    assert "/memories_forgotten" in shown and "/memories_restore" in shown
    assert "/memories forgotten" not in shown and "/memories restore" not in shown
    assert slash_spelling("see /memories why 12, /memoriesx and /memories") == (
        "see /memories_why 12, /memoriesx and /memories")
