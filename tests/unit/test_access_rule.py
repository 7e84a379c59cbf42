"""Who may be answered: the pure rule over a message's facts, the /access arguments, the settings' lists."""

from __future__ import annotations

import pytest

from shared.access.config import setting_of
from shared.access.requests import AccessRequest, parse_request
from shared.access.rule import (
    OWN_DATA_COMMANDS,
    Decision,
    Entry,
    Facts,
    Policy,
    decide,
    may_use_command,
)
from shared.errors import ConfigError, InvalidCommand
from shared.settings import Settings, load_settings

ALICE_TG = Facts("telegram", "1001", chat_id="1001")
ALICE_IN_GROUP = Facts("telegram", "1001", chat_id="-100777", private=False)
DC_IN_GUILD = Facts("discord", "42", chat_id="70", private=False, guild_id="60", role_ids=frozenset({"60", "61"}))
DC_IN_THREAD = Facts("discord", "42", chat_id="71", private=False, guild_id="60", parent_id="70")
DC_DM = Facts("discord", "42", chat_id="99")


def policy(*entries: tuple[str, str, str, str], operators=(), default="open") -> Policy:
    return Policy(frozenset(Entry(*entry) for entry in entries), frozenset(operators), default)


def test_without_any_list_everyone_is_answered_and_the_console_always():
    assert decide(ALICE_TG, Policy()) == Decision(True, "open")
    assert decide(Facts("console", "me"), policy(("block", "user", "telegram", "1001"), default="closed")).allowed


def test_a_blocked_user_is_refused_everywhere_on_that_platform_only():
    lists = policy(("block", "user", "telegram", "1001"))
    assert decide(ALICE_TG, lists).reason == "blocked"
    assert decide(ALICE_IN_GROUP, lists).reason == "blocked"
    assert decide(Facts("discord", "1001"), lists).allowed  # the same number on Discord is someone else


def test_an_allow_entry_limits_its_platform_and_leaves_the_other_open():
    lists = policy(("allow", "guild", "discord", "60"))
    assert decide(DC_IN_GUILD, lists) == Decision(True, "allowed")
    assert decide(Facts("discord", "42", chat_id="80", private=False, guild_id="61"), lists).reason == "not_allowed"
    assert decide(DC_DM, lists).reason == "not_allowed"  # a DM has no server: only a user entry lets it in
    assert decide(ALICE_TG, lists).reason == "open"


def test_closed_by_default_lets_in_only_the_allow_lists_and_the_operators():
    lists = policy(("allow", "chat", "telegram", "-100777"), operators={("telegram", "5")}, default="closed")
    assert decide(ALICE_IN_GROUP, lists).allowed
    assert decide(ALICE_TG, lists).reason == "not_allowed"
    assert decide(Facts("discord", "42"), lists).reason == "not_allowed"
    assert decide(Facts("telegram", "5", chat_id="5"), lists).reason == "operator"


def test_a_block_outranks_an_allow_but_never_an_operator():
    lists = policy(("allow", "user", "discord", "42"), ("block", "role", "discord", "61"),
                   operators={("discord", "42")})
    assert decide(DC_IN_GUILD, lists).reason == "operator"
    without_operator = policy(("allow", "user", "discord", "42"), ("block", "role", "discord", "61"))
    blocked = decide(DC_IN_GUILD, without_operator)
    assert blocked == Decision(False, "blocked")
    assert blocked.entry == Entry("block", "role", "discord", "61")
    assert decide(DC_DM, without_operator).allowed  # roles belong to a server: none in a DM


@pytest.mark.parametrize(("entry", "facts"), [
    (("allow", "channel", "discord", "70"), DC_IN_GUILD),
    (("allow", "channel", "discord", "70"), DC_IN_THREAD),  # a thread of an allowed channel
    (("allow", "role", "discord", "61"), DC_IN_GUILD),
    (("allow", "role", "discord", "60"), DC_IN_GUILD),  # @everyone: the role whose id is the server's
    (("allow", "user", "telegram", "1001"), ALICE_IN_GROUP),
    (("allow", "chat", "telegram", "-100777"), ALICE_IN_GROUP),
])
def test_any_matching_allow_entry_lets_the_message_in(entry, facts):
    assert decide(facts, policy(entry)).reason == "allowed"


def test_an_entry_matches_only_the_kind_it_names():
    assert not decide(ALICE_TG, policy(("allow", "chat", "telegram", "-100777"))).allowed
    assert not decide(DC_IN_GUILD, policy(("allow", "guild", "discord", "70"))).allowed  # a channel id, not a server


def test_a_refused_user_keeps_the_commands_about_their_own_data_if_the_bot_holds_any():
    refused = Decision(False, "blocked")
    assert all(may_use_command(refused, command, known=True) for command in OWN_DATA_COMMANDS)
    assert not any(may_use_command(refused, command, known=False) for command in OWN_DATA_COMMANDS)
    for spending in ("remember", "remind", "import", "link", "panel", "snooze", "start", "help", "access"):
        assert not may_use_command(refused, spending, known=True)
    assert may_use_command(Decision(True, "open"), "remember", known=False)


@pytest.mark.parametrize(("typed", "platform", "request_"), [
    ("", "telegram", AccessRequest("list")),
    ("列表", "telegram", AccessRequest("list")),
    ("block user 42", "telegram", AccessRequest("block", "user", "telegram", "42")),
    ("allow user discord:0042", "telegram", AccessRequest("allow", "user", "discord", "42")),
    ("ALLOW user <@!42>", "discord", AccessRequest("allow", "user", "discord", "42")),
    ("屏蔽 群 -1001234", "telegram", AccessRequest("block", "chat", "telegram", "-1001234")),
    ("remove role <@&9>", "discord", AccessRequest("remove", "role", "discord", "9")),
    ("allow channel <#7>", "telegram", AccessRequest("allow", "channel", "discord", "7")),
    ("allow server 60", "discord", AccessRequest("allow", "guild", "discord", "60")),
])
def test_access_arguments_are_read_into_a_request(typed, platform, request_):
    assert parse_request(typed, platform) == request_


@pytest.mark.parametrize(("typed", "key"), [
    ("allow", "access_usage"), ("allow user", "access_usage"), ("grant user 1", "access_usage"),
    ("allow person 1", "access_usage"), ("allow user 1 2", "access_usage"), ("list all", "access_usage"),
    ("x" * 500, "access_usage"),
    ("allow user alice", "access_bad_target"), ("allow guild -5", "access_bad_target"),
    ("allow guild telegram:5", "access_bad_target"), ("allow user myspace:5", "access_bad_target"),
    ("allow user 1" + "0" * 20, "access_bad_target"), ("allow chat 1\x00", "access_bad_target"),
])
def test_bad_access_arguments_name_what_is_wrong(typed, key):
    with pytest.raises(InvalidCommand) as refused:
        parse_request(typed, "telegram")
    assert refused.value.key == key


def test_a_bare_user_id_typed_on_the_console_must_name_its_platform():
    with pytest.raises(InvalidCommand):
        parse_request("block user 42", "console")
    assert parse_request("block user telegram:42", "console").platform == "telegram"


@pytest.fixture
def clean_environment(monkeypatch, tmp_path):
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.chdir(tmp_path)


def test_the_settings_lists_become_the_baseline_policy(clean_environment, monkeypatch):
    monkeypatch.setenv("ACCESS_OPERATORS", "telegram:5, discord:6")
    monkeypatch.setenv("ACCESS_BLOCK_USERS", "telegram:13 discord:14")
    monkeypatch.setenv("DISCORD_ALLOW_ROLES", "61")
    monkeypatch.setenv("TELEGRAM_ALLOW_CHATS", "-100777,1001")
    monkeypatch.setenv("ACCESS_DEFAULT", "Closed")
    baseline = load_settings().access_policy()
    assert baseline.operators == {("telegram", "5"), ("discord", "6")}
    assert baseline.default == "closed"
    assert baseline.entries == {Entry("block", "user", "telegram", "13"), Entry("block", "user", "discord", "14"),
                                Entry("allow", "role", "discord", "61"), Entry("allow", "chat", "telegram", "-100777"),
                                Entry("allow", "chat", "telegram", "1001")}
    assert setting_of(Entry("allow", "role", "discord", "61")) == "DISCORD_ALLOW_ROLES"
    assert setting_of(Entry("block", "user", "telegram", "13")) == "ACCESS_BLOCK_USERS"


@pytest.mark.parametrize(("name", "value"), [
    ("ACCESS_OPERATORS", "42"), ("ACCESS_ALLOW_USERS", "telegram:alice"), ("DISCORD_ALLOW_GUILDS", "-5"),
    ("TELEGRAM_BLOCK_CHATS", "group"), ("ACCESS_DEFAULT", "maybe"),
])
def test_a_wrong_list_setting_stops_start_up_naming_it(clean_environment, monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=name):
        load_settings()
