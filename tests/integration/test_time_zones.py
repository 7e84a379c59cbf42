"""A user's time zone on real PostgreSQL: /timezone, what their reminders do when it changes, the one-time note
on the default zone, deadlines set by /remind, linked accounts, export and the migration that made it the
person's."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from shared.commands.service import Caller, MemoryCommands
from shared.db import migrate
from shared.db.engine import make_engine
from shared.db.memory_models import Todo
from shared.errors import InvalidCommand
from shared.reminders.service import claim_due_reminders

NOW = datetime(2027, 3, 10, 1, 15, tzinfo=UTC)  # Wednesday 09:15 in Hangzhou, 01:15 on the UTC clock
ANN = Caller("telegram", "501", "Ann", "en")
LI = Caller("discord", "502", "小李", "zh-CN")


@pytest.fixture
def commands(uow_factory) -> MemoryCommands:
    return MemoryCommands(uow_factory, default_timezone="UTC", clock=lambda: NOW,
                          deadline_heads_up=timedelta(minutes=45))


def todo(uow_factory, reminder_id: int) -> Todo:
    with uow_factory() as uow:
        return uow.session.get(Todo, reminder_id)


def test_timezone_shows_the_default_sets_a_city_an_offset_or_the_default_again(commands):
    shown = commands.timezone(LI)
    assert (shown.after.name, shown.after.own) == ("UTC", False)
    assert commands.timezone(LI, "杭州").after.name == "Asia/Shanghai"
    assert (commands.timezone(LI).after.name, commands.timezone(LI).after.own) == ("Asia/Shanghai", True)
    assert commands.timezone(LI, "GMT-3:30").after.name == "UTC-03:30"
    assert commands.timezone(LI, "america/chicago").after.name == "America/Chicago"
    back = commands.timezone(LI, "默认")
    assert (back.before.name, back.after.name, back.after.own) == ("America/Chicago", "UTC", False)


@pytest.mark.parametrize(("words", "key"), [("Atlantis", "zone_unknown"), ("Canada", "zone_several"),
                                            ("UTC+15", "zone_unknown"), ("\x07", "control_characters")])
def test_a_zone_that_names_none_or_several_is_refused_and_nothing_changes(commands, words, key):
    commands.timezone(ANN, "Lisbon")
    with pytest.raises(InvalidCommand) as refused:
        commands.timezone(ANN, words)
    assert refused.value.key == key
    assert commands.timezone(ANN).after.name == "Europe/Lisbon"


def test_pending_reminders_keep_their_clock_time_and_amounts_of_time_their_moment(commands, uow_factory):
    school = commands.add_reminder(LI, "明天早上8点半 送朵朵去幼儿园")  # set while Mnemo assumed UTC
    stretch = commands.add_reminder(LI, "45分钟后 起来活动一下")
    assert todo(uow_factory, school.id).due_at == datetime(2027, 3, 11, 8, 30, tzinfo=UTC)

    change = commands.timezone(LI, "杭州")

    assert (change.moved, change.kept) == (1, 1)
    moved, kept = todo(uow_factory, school.id), todo(uow_factory, stretch.id)
    assert moved.due_at == moved.remind_at == datetime(2027, 3, 11, 0, 30, tzinfo=UTC)  # 08:30 in Hangzhou
    assert kept.due_at == NOW + timedelta(minutes=45)
    assert (moved.timezone, kept.timezone) == ("Asia/Shanghai",) * 2
    [soonest, later] = commands.list_reminders(LI)
    assert f"{soonest.due_at:%H:%M %z}" == "10:00 +0800"
    assert f"{later.due_at:%a %H:%M}" == "Thu 08:30"


def test_a_deadline_moves_with_its_heads_up_and_a_clock_time_that_has_passed_is_sent_at_once(commands, uow_factory):
    report = commands.add_reminder(ANN, "the budget is due today 11am")  # 11:00 UTC, heads-up 10:15
    memo = commands.add_reminder(ANN, "tomorrow 2am read the memo")
    commands.timezone(ANN, "Auckland")  # UTC+13 in March: 11:00 there was 22:00 UTC yesterday, already past
    deadline, early = todo(uow_factory, report.id), todo(uow_factory, memo.id)
    assert deadline.due_at == datetime(2027, 3, 9, 22, 0, tzinfo=UTC)
    assert deadline.due_at - deadline.remind_at == timedelta(minutes=45)
    assert early.due_at == datetime(2027, 3, 10, 13, 0, tzinfo=UTC)  # 02:00 on the 11th in Auckland
    claimed = {claim.todo_id for claim in claim_due_reminders(uow_factory, NOW)}
    assert claimed == {report.id}  # due before now in the new zone: claimed by the first scan, never dropped


def test_remind_tells_a_user_without_a_zone_which_one_it_used_once(commands):
    first = commands.remind(ANN, "tomorrow 9am call the bank")
    second = commands.remind(ANN, "tomorrow 10am call the dentist")
    assert (first.default_zone, second.default_zone) == ("UTC", None)
    commands.timezone(LI, "Seoul")
    assert commands.remind(LI, "明天上午10点 交水费").default_zone is None  # has a zone of their own


def test_remind_with_a_deadline_pings_ahead_and_a_plain_time_pings_at_it(commands):
    deadline = commands.remind(LI, "周五下午五点前 交报告").item
    plain = commands.remind(LI, "周五下午五点 交报告").item
    assert (deadline.kind, deadline.content, f"{deadline.due_at:%a %H:%M}", f"{deadline.deadline:%a %H:%M}") == (
        "deadline", "交报告", "Fri 16:15", "Fri 17:00")
    assert (plain.kind, plain.deadline, f"{plain.due_at:%a %H:%M}") == ("reminder", None, "Fri 17:00")


def test_linked_accounts_share_one_zone_and_an_unlinked_one_keeps_it(commands, uow_factory):
    commands.timezone(ANN, "Denver")
    code = commands.link_code(ANN)
    request = commands.link(Caller("discord", "601", "Ann"), code.code)
    commands.confirm_link(ANN, request.code)
    assert commands.timezone(Caller("discord", "601", "Ann")).after.name == "America/Denver"
    commands.unlink(Caller("discord", "601", "Ann"))
    assert commands.timezone(Caller("discord", "601", "Ann")).after.name == "America/Denver"
    commands.timezone(ANN, "Phoenix")
    assert commands.timezone(Caller("discord", "601", "Ann")).after.name == "America/Denver"  # two people now


def test_the_export_carries_the_zone_and_each_reminders_kind(commands):
    commands.timezone(LI, "UTC+05:45")
    commands.add_reminder(LI, "明天下午三点前 交表")
    exported = json.loads(commands.export_data(LI).data)
    assert {identity["timezone"] for identity in exported["identities"]} == {"UTC+05:45"}
    [entry] = exported["todos"]
    assert (entry["kind"], entry["wall_clock"], entry["timezone"]) == ("deadline", True, "UTC+05:45")
    commands.import_data(ANN, json.dumps(exported).encode())
    [imported] = commands.list_reminders(ANN)
    assert (imported.kind, imported.timezone) == ("deadline", "UTC+05:45")


def test_the_migration_makes_the_first_zone_of_a_users_accounts_theirs(fresh_system_db):
    migrate.upgrade(fresh_system_db, revision="0025")
    engine = make_engine(fresh_system_db)
    try:
        with engine.begin() as connection:
            connection.execute(text("INSERT INTO users (id) VALUES (1), (2)"))
            connection.execute(text(
                "INSERT INTO identities (user_id, platform, platform_user_id, timezone) VALUES "
                "(1, 'telegram', 'a', NULL), (1, 'discord', 'b', 'Europe/Oslo'), (1, 'console', 'c', 'Asia/Dubai'),"
                "(2, 'telegram', 'd', NULL)"))
        migrate.upgrade(fresh_system_db)
        with engine.begin() as connection:
            zones = dict(connection.execute(text("SELECT id, timezone FROM users ORDER BY id")).all())
            columns = connection.execute(text("SELECT column_name FROM information_schema.columns "
                                              "WHERE table_name = 'identities'")).scalars().all()
        assert zones == {1: "Europe/Oslo", 2: None}
        assert "timezone" not in columns
        migrate.downgrade(fresh_system_db, "0025")
        with engine.begin() as connection:
            back = connection.execute(text("SELECT platform_user_id, timezone FROM identities ORDER BY id")).all()
        assert back == [("a", "Europe/Oslo"), ("b", "Europe/Oslo"), ("c", "Europe/Oslo"), ("d", None)]
    finally:
        engine.dispose()
