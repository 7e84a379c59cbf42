"""The access lists on PostgreSQL: operators' changes kept in the table, seen by every process within the
refresh time, the settings as the baseline, and refused users' own-data commands."""

from __future__ import annotations

import pytest

from shared.access.rule import Entry, Facts, Policy
from shared.access.service import AccessChange, AccessListing, AccessService
from shared.commands import texts
from shared.commands.service import Caller, MemoryCommands
from shared.errors import DatabaseUnavailable, InvalidCommand, NotFound
from tests.builders import Clock
from tests.integration.test_console_commands import run_console

OPERATOR = Facts("telegram", "5", chat_id="5")
ALICE = Facts("telegram", "1001", chat_id="1001")
STRANGER = Facts("telegram", "1002", chat_id="1002")
BASELINE = Policy(frozenset({Entry("block", "user", "telegram", "13"), Entry("allow", "guild", "discord", "60")}),
                  frozenset({("telegram", "5")}))


@pytest.fixture
def clock() -> Clock:
    return Clock(0.0)


@pytest.fixture
def access(uow_factory, clock) -> AccessService:
    return AccessService(uow_factory, BASELINE, refresh_seconds=10, clock=clock)


def test_a_block_from_chat_refuses_at_once_here_and_within_the_refresh_time_in_another_process(
        uow_factory, access, clock):
    other_process = AccessService(uow_factory, BASELINE, refresh_seconds=10, clock=clock)
    assert other_process.admit(ALICE).allowed

    change = access.run(OPERATOR, "block user 1001")

    assert change == AccessChange("block", Entry("block", "user", "telegram", "1001"), True)
    assert access.admit(ALICE).decision.reason == "blocked"
    assert other_process.admit(ALICE).allowed  # its copy is younger than the refresh time
    clock.now = 10
    assert other_process.admit(ALICE).decision.reason == "blocked"


def test_allowing_a_blocked_target_moves_it_and_removing_takes_it_off(uow_factory, access):
    access.run(OPERATOR, "block user 1001")
    moved = access.run(OPERATOR, "allow user 1001")
    again = access.run(OPERATOR, "allow user 1001")
    assert (moved.changed, again.changed) == (True, False)
    assert moved.restricted is True  # Telegram's first allow entry: only the allow list gets in now
    assert access.admit(ALICE).decision.reason == "allowed"
    assert access.admit(STRANGER).decision.reason == "not_allowed"

    removed = access.run(OPERATOR, "remove user 1001")

    assert removed.entry.effect == "allow"
    assert removed.restricted is False
    assert access.admit(STRANGER).allowed
    with uow_factory() as uow:
        assert uow.access.entries() == []


def test_the_settings_entries_are_listed_and_can_only_be_changed_in_the_settings(access):
    with pytest.raises(InvalidCommand) as in_settings:
        access.run(OPERATOR, "remove user 13")
    assert in_settings.value.params == {"setting": "ACCESS_BLOCK_USERS"}
    with pytest.raises(NotFound):
        access.run(OPERATOR, "remove chat -100777")
    assert access.run(OPERATOR, "allow user 13").overruled_by == "ACCESS_BLOCK_USERS"
    assert access.admit(Facts("telegram", "13")).decision.reason == "blocked"  # the settings' block still holds

    listing = access.run(OPERATOR, "list")

    assert isinstance(listing, AccessListing)
    assert [(item.entry, item.setting, item.added_by) for item in listing.entries] == [
        (Entry("allow", "guild", "discord", "60"), "DISCORD_ALLOW_GUILDS", None),
        (Entry("block", "user", "telegram", "13"), "ACCESS_BLOCK_USERS", None),
        (Entry("allow", "user", "telegram", "13"), None, "telegram:5")]
    assert listing.operators == ("telegram:5",)
    assert listing.restricted == ("discord", "telegram")


def test_only_operators_change_or_read_the_lists_and_the_console_is_one(access):
    with pytest.raises(InvalidCommand) as refused:
        access.run(ALICE, "list")
    assert refused.value.key == "access_operators_only"
    assert isinstance(access.run(Facts("console", "me"), "block user telegram:1001"), AccessChange)


def test_a_refused_user_keeps_the_commands_about_their_own_data_only_if_the_bot_holds_some(uow_factory, access):
    access.run(OPERATOR, "block user 1001")
    assert not access.admit(ALICE, "memories").allowed  # nothing held: nothing to show, nothing is stored
    with uow_factory() as uow:
        assert uow.users.identity("telegram", "1001") is None
    MemoryCommands(uow_factory).remember(Caller("telegram", "1001"), "I like tea")  # before the block, say

    admitted = access.admit(ALICE, "forget")

    assert admitted.allowed
    assert admitted.known
    assert admitted.decision.reason == "blocked"
    assert not access.admit(ALICE, "remember").allowed
    assert not access.admit(ALICE).allowed


def test_when_the_database_cannot_be_read_the_last_lists_read_stay_in_force(uow_factory, clock):
    reachable = [True]

    def units_of_work():
        if not reachable[0]:
            raise DatabaseUnavailable("database_unavailable")
        return uow_factory()

    access = AccessService(units_of_work, BASELINE, refresh_seconds=10, clock=clock)
    access.run(OPERATOR, "block user 1001")
    assert access.admit(ALICE).decision.reason == "blocked"
    reachable[0], clock.now = False, 60

    assert access.policy().entries >= {Entry("block", "user", "telegram", "1001")}
    assert AccessService(units_of_work, BASELINE).policy() == BASELINE  # never read: the settings alone
    assert access.admit(ALICE, "export").allowed  # goes on, to say the database cannot be reached
    assert not access.admit(ALICE, "remember").allowed


def test_the_console_is_the_local_operator_and_its_changes_hold_for_the_bots(uow_factory, tmp_path):
    changed, listing, bare_id = run_console(uow_factory, tmp_path, [
        "/access block user telegram:1001", "/access list", "/access block user 1001"])

    assert changed == "Put user telegram:1001 on the block list."
    assert "• user telegram:1001 · added by console:tester on" in listing
    assert bare_id == texts.error_text(InvalidCommand("access_bad_target", kind="user",
                                                      platforms="discord, telegram"), "en")
    assert AccessService(uow_factory, Policy()).admit(ALICE).decision.reason == "blocked"
