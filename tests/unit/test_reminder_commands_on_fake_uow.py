"""/remind and its friends (shared/commands/service.py) on the fake unit of work: times in the caller's
zone, the pending cap, one user's reminders out of another's reach, status rules, nothing left by a refusal."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from shared.commands.service import MAX_PENDING_REMINDERS, Caller, MemoryCommands
from shared.db.memory_models import Todo
from shared.db.models import Chat, Identity, User
from shared.errors import InvalidCommand, NotFound
from tests.fakes.uow import Clock, FakeDatabase
from tests.unit.conftest import START

SHANGHAI = ZoneInfo("Asia/Shanghai")
ALICE = Caller("telegram", "1001", display_name="Alice", locale="zh-CN")
BOB = Caller("telegram", "2002", display_name="Bob", locale="en")


@pytest.fixture
def commands(database: FakeDatabase, clock: Clock) -> MemoryCommands:
    return MemoryCommands(database.unit_of_work, default_timezone="Asia/Shanghai", clock=clock)


def test_a_reminder_is_due_in_the_callers_zone_and_the_list_is_soonest_first(commands):
    later = commands.add_reminder(BOB, "in 2 hours water the plants")
    sooner = commands.add_reminder(BOB, "in 20 minutes stretch")
    tomorrow = commands.add_reminder(BOB, "tomorrow 8am run")
    assert (later.content, later.status, later.timezone) == ("water the plants", "pending", "Asia/Shanghai")
    assert later.due_at == START + timedelta(hours=2) and later.due_at.tzinfo == SHANGHAI
    assert tomorrow.due_at == datetime(2026, 11, 23, 8, 0, tzinfo=SHANGHAI)
    assert [r.id for r in commands.list_reminders(BOB)] == [sooner.id, later.id, tomorrow.id]


def test_a_reminder_set_in_a_group_pings_that_group_and_one_set_in_private_the_private_chat(commands, database):
    in_group = Caller("telegram", "1001", platform_chat_id="-100123", chat_kind="group")
    commands.add_reminder(in_group, "tomorrow 9am call mom")
    commands.add_reminder(ALICE, "tomorrow 10am call dad")
    chats = {chat.id: (chat.platform_chat_id, chat.kind) for chat in database.rows(Chat)}
    assert [chats[todo.chat_id] for todo in database.rows(Todo)] == [("-100123", "group"), ("1001", "private")]
    stored = database.rows(Todo)[0]
    assert (stored.source, stored.attempts, stored.claimed_until) == ("command", 0, None)


def test_one_users_reminders_are_neither_listed_nor_changed_for_another(commands):
    theirs = commands.add_reminder(ALICE, "明天早上9点 开会")
    assert commands.list_reminders(BOB) == ()
    for change in (commands.cancel_reminder, commands.complete_reminder, commands.snooze_reminder):
        with pytest.raises(NotFound):
            change(BOB, theirs.id)
    assert [r.status for r in commands.list_reminders(ALICE)] == ["pending"]


def test_the_pending_cap_refuses_one_more_and_a_cancelled_one_frees_a_place(commands, database):
    first = commands.add_reminder(ALICE, "in 1 hour 喝水")
    with database.unit_of_work() as uow:
        me = uow.users.identity("telegram", "1001")
        for n in range(MAX_PENDING_REMINDERS - 1):
            uow.todos.add(Todo(user_id=me.user_id, content=f"todo {n}", due_at=START + timedelta(days=1),
                               remind_at=START + timedelta(days=1), timezone="Asia/Shanghai"))
        uow.commit()
    before = database.dump()
    with pytest.raises(InvalidCommand) as refused:
        commands.add_reminder(ALICE, "in 2 hours 开会")
    assert (refused.value.key, refused.value.params) == ("too_many_reminders", {"limit": MAX_PENDING_REMINDERS})
    assert database.dump() == before
    commands.add_reminder(BOB, "in 2 hours call mom")  # the cap is per user
    commands.cancel_reminder(ALICE, first.id)
    assert commands.add_reminder(ALICE, "in 2 hours 开会").status == "pending"


@pytest.mark.parametrize(("text", "key"), [("买牛奶", "reminder_no_time"), ("今天早上8点 开会", "reminder_past"),
                                           ("明天早上9点", "reminder_no_content"), ("  ", "reminder_empty")])
def test_a_reminder_without_a_future_time_or_content_is_refused_and_nobody_is_created(commands, database, text, key):
    with pytest.raises(InvalidCommand) as refused:
        commands.add_reminder(ALICE, text)
    assert refused.value.key == key
    assert database.rows(User) == [] and database.rows(Identity) == [] and database.rows(Todo) == []


def test_cancel_complete_and_snooze_follow_the_status_rules(commands, database, clock):
    cancelled = commands.add_reminder(BOB, "in 20 minutes stretch")
    done = commands.add_reminder(BOB, "in 2 hours water the plants")
    sent = commands.add_reminder(BOB, "tomorrow 8am run")
    assert commands.cancel_reminder(BOB, cancelled.id).status == "cancelled"
    with pytest.raises(InvalidCommand, match="reminder_not_pending"):
        commands.cancel_reminder(BOB, f"#{cancelled.id}")
    with pytest.raises(InvalidCommand, match="reminder_not_pending"):
        commands.snooze_reminder(BOB, cancelled.id)
    assert commands.complete_reminder(BOB, str(done.id)).status == "done"
    clock.now = START + timedelta(days=1)
    with database.unit_of_work() as uow:
        [claimed] = uow.todos.claim_due(clock.now)
        assert uow.todos.mark_sent(claimed.user_id, claimed.id, claimed.attempts, clock.now)
        uow.commit()
    snoozed = commands.snooze_reminder(BOB, sent.id, 15)
    assert (snoozed.status, snoozed.due_at) == ("pending", clock.now + timedelta(minutes=15))
    [row] = [todo for todo in database.rows(Todo) if todo.id == sent.id]
    assert (row.sent_at, row.claimed_until, row.due_at) == (None, None, datetime(2026, 11, 23, 8, 0, tzinfo=SHANGHAI))
    assert [r.id for r in commands.list_reminders(BOB)] == [sent.id]


def test_a_snooze_while_the_reminder_is_being_sent_still_pings_at_the_snoozed_time(commands, database, clock):
    made = commands.add_reminder(ALICE, "in 30 minutes call the bank")
    clock.now = START + timedelta(minutes=31)
    with database.unit_of_work() as uow:
        [claimed] = uow.todos.claim_due(clock.now)
        attempt = claimed.attempts
        uow.commit()
    commands.snooze_reminder(ALICE, made.id, 20)  # typed while the worker is sending
    with database.unit_of_work() as uow:
        assert not uow.todos.mark_sent(claimed.user_id, made.id, attempt, clock.now), "the old claim marked it sent"
        uow.commit()
    [row] = [todo for todo in database.rows(Todo) if todo.id == made.id]
    assert (row.status, row.remind_at) == ("pending", clock.now + timedelta(minutes=20))
    clock.now += timedelta(minutes=21)
    with database.unit_of_work() as uow:
        assert [todo.id for todo in uow.todos.claim_due(clock.now)] == [made.id]


@pytest.mark.parametrize("minutes", [0, -5, 7 * 24 * 60 + 1, "10", True, 1.5, None])
def test_a_snooze_outside_one_minute_to_one_week_is_refused_and_changes_nothing(commands, database, minutes):
    mine = commands.add_reminder(BOB, "in 20 minutes stretch")
    before = database.dump()
    with pytest.raises(InvalidCommand, match="bad_minutes"):
        commands.snooze_reminder(BOB, mine.id, minutes)
    assert database.dump() == before


def test_a_snooze_of_a_reminder_not_yet_due_moves_it_later_than_it_was_due_never_earlier(commands, database, clock):
    upcoming = commands.add_reminder(BOB, "in 3 days renew the passport")
    snoozed = commands.snooze_reminder(BOB, upcoming.id, 45)
    assert snoozed.due_at == upcoming.due_at + timedelta(minutes=45)
    again = commands.snooze_reminder(BOB, upcoming.id, 5)
    assert again.due_at == upcoming.due_at + timedelta(minutes=50)
    [row] = database.rows(Todo)
    assert row.due_at == upcoming.due_at  # when it was first due is kept


@pytest.mark.parametrize(("words", "action", "status"), [
    ("cancel {id}", "cancel", "cancelled"), ("done #{id}", "done", "done"), ("取消 {id}", "cancel", "cancelled"),
    ("完成{id}", "done", "done"), ("snooze {id} 25", "snooze", "pending"), ("推迟 {id} 25分钟", "snooze", "pending")])
def test_remind_followed_by_an_action_word_and_a_number_changes_that_reminder(commands, words, action, status):
    made = commands.add_reminder(BOB, "in 40 minutes feed the cat")
    change = commands.remind(BOB, words.format(id=made.id))
    assert (change.action, change.item.id, change.item.status) == (action, made.id, status)
    if action == "snooze":
        assert change.item.due_at == made.due_at + timedelta(minutes=25)
    assert len(commands.list_reminders(BOB)) == (1 if status == "pending" else 0)


def test_remind_with_an_action_word_that_is_part_of_a_sentence_sets_a_new_reminder(commands):
    change = commands.remind(BOB, "done 5 pushups tomorrow 7am")
    assert (change.action, change.item.content, change.item.status) == ("add", "done 5 pushups", "pending")


def test_the_short_commands_refuse_a_missing_id_and_bad_minutes_and_change_nothing(commands, database):
    made = commands.add_reminder(BOB, "in 40 minutes feed the cat")
    before = database.dump()
    for action, argument, key in [("cancel", "", "which_reminder"), ("done", "soon", "which_reminder"),
                                  ("snooze", f"{made.id} later", "bad_minutes"),
                                  ("snooze", f"{made.id} 0", "bad_minutes")]:
        with pytest.raises(InvalidCommand) as refused:
            commands.reminder_command(BOB, action, argument)
        assert refused.value.key == key, (action, argument)
    assert database.dump() == before
    assert commands.reminder_command(BOB, "snooze", f"#{made.id}").item.due_at == made.due_at + timedelta(minutes=10)


@pytest.mark.parametrize("text", ["0000-01-01 new year", "9999-12-31 23:59 the end", "1969-12-31 9am party"])
def test_a_reminder_outside_the_stored_years_is_refused_with_a_reason(commands, database, text):
    with pytest.raises(InvalidCommand) as refused:
        commands.add_reminder(BOB, text)
    assert refused.value.key == "reminder_out_of_range" and refused.value.params["when"] in text
    assert database.rows(Todo) == []


def test_a_reminder_command_without_an_id_names_the_callers_own_open_reminders_or_says_there_are_none(commands):
    with pytest.raises(InvalidCommand) as refused:
        commands.reminder_command(ALICE, "done", "")
    assert (refused.value.key, refused.value.params) == ("no_open_reminders", {})
    theirs = commands.add_reminder(BOB, "in 3 hours take out the bins")
    made = [commands.add_reminder(ALICE, f"in {hours} hours 喝水") for hours in range(2, 9)]
    commands.complete_reminder(ALICE, made[0].id)
    for action, argument in [("snooze", ""), ("cancel", "the first one"), ("done", "#")]:
        with pytest.raises(InvalidCommand) as refused:
            commands.reminder_command(ALICE, action, argument)
        assert refused.value.key == "which_reminder"
        assert refused.value.params["command"] == action and refused.value.params["example"] == made[1].id
        assert refused.value.params["ids"] == ", ".join(f"#{item.id}" for item in made[1:6]) + " …"
        assert f"#{theirs.id}," not in refused.value.params["ids"]
    with pytest.raises(InvalidCommand) as refused:
        commands.remind(ALICE, "完成")
    assert (refused.value.key, refused.value.params["command"]) == ("which_reminder", "done")


def test_a_reminder_for_a_day_gone_by_is_refused_with_its_words_and_nothing_is_set(commands, database):
    before = database.dump()
    for text, when, what in [("yesterday at 6pm buy stamps", "yesterday at 6pm", "buy stamps"),
                             ("昨天下午4点 取快递", "昨天下午4点", "取快递"),
                             ("last monday 9am", "last monday 9am", "…")]:
        with pytest.raises(InvalidCommand) as refused:
            commands.add_reminder(ALICE, text)
        assert (refused.value.key, refused.value.params) == ("reminder_past", {"when": when, "what": what})
    assert database.dump() == before
