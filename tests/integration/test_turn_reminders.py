"""Reminders and time zones set in conversation, on real PostgreSQL with a fake OpenAI-compatible server: a time
counts from when the message was sent, one that passed while the model thought is sent at once, a deadline pings
ahead of it, and saying where one is sets one's zone."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest

from bench.fakes.openai_server import FakeOpenAI
from shared.conversation.warning_texts import WarningCode
from shared.db.memory_models import Todo
from shared.reminders.service import claim_due_reminders
from shared.reminders.zone_texts import default_zone_text
from tests.builders import Clock, conversation, conversation_config, message, model_turn
from tests.told import told

SENT = datetime(2027, 3, 10, 1, 15, tzinfo=UTC)  # 09:15 in Hangzhou
CONFIG = conversation_config(deadline_heads_up=timedelta(minutes=30))


def turn(response: str, *, todos=(), timezone: str | None = None) -> dict:
    return model_turn(response, todos=todos, timezone=timezone)


@pytest.fixture
def clock():
    return Clock(SENT)


@pytest.fixture
def model(uow_factory, llm, clock):
    return conversation(uow_factory, CONFIG, llm, clock=clock)


@pytest.fixture
def offline(uow_factory, clock):
    return conversation(uow_factory, CONFIG, clock=clock)


def say(service, text: str, *, sent: datetime = SENT, user: str = "u7"):
    return asyncio.run(service.handle_message(message(text, user=user, sent=sent, name="Li")))


def slow(llm: FakeOpenAI, clock: Clock, seconds: float, answer: dict) -> None:
    """The next answer takes ``seconds`` of the clock: the model's time, as a slow local model spends it."""
    def think(_request: dict) -> str:
        clock.now += timedelta(seconds=seconds)
        llm.set_responder(None)
        return json.dumps(answer)
    llm.set_responder(think)


def todos(uow_factory, reply) -> list[Todo]:
    with uow_factory() as uow:
        return [uow.session.get(Todo, todo_id) for todo_id in reply.todo_ids]


def user_zone(uow_factory, platform_user_id: str = "u7") -> str | None:
    with uow_factory() as uow:
        return uow.users.get(uow.users.identity("telegram", platform_user_id).user_id).timezone


def test_a_relative_reminder_counts_from_when_it_was_sent_and_is_sent_at_once_when_the_model_was_slower(
        model, llm, clock, uow_factory):
    # the model answers 208 s later, with its own arithmetic from the prompt's time: 5 minutes, not 3
    slow(llm, clock, 208, turn("Sure!", todos=[("take the bread out", "2027-03-10T01:20:00+00:00", "reminder")]))
    reply = say(model, "remind me in 3 minutes to take the bread out of the oven")
    [todo] = todos(uow_factory, reply)
    assert todo.due_at == SENT + timedelta(minutes=3) and todo.remind_at == clock.now  # pings now, not dropped
    assert not todo.wall_clock and reply.warnings == ()
    assert "while I was answering" in told(reply)
    assert [claim.todo_id for claim in claim_due_reminders(uow_factory, clock.now)] == [todo.id]


def test_a_relative_reminder_read_by_the_rules_counts_from_the_sent_time_in_chinese(offline, clock, uow_factory):
    clock.now = SENT + timedelta(seconds=40)  # the message reached the bot 40 s after it was sent
    reply = say(offline, "7分钟后提醒我关火")
    [todo] = todos(uow_factory, reply)
    assert (todo.content, todo.due_at) == ("关火", SENT + timedelta(minutes=7))


def test_a_time_before_the_message_was_sent_is_still_refused(model, llm, uow_factory):
    llm.queue_reply(turn("OK", todos=[("feed the fish", "2027-03-09T15:00:00+00:00", "reminder")]))
    reply = say(model, "remind me at 3pm yesterday to feed the fish")
    assert reply.todo_ids == () and [warning.code for warning in reply.warnings] == [
        WarningCode.REMINDER_WITHOUT_FUTURE_TIME]


def test_a_deadline_from_the_model_pings_its_heads_up_before_and_a_plain_time_at_it(model, llm, uow_factory):
    llm.queue_reply(turn("好的", todos=[("交季度报告", "2027-03-12T17:00:00+00:00", "deadline"),
                                        ("给妈妈打电话", "2027-03-12T15:00:00+00:00", "reminder")]))
    reply = say(model, "周五下午五点前交季度报告，还有下午三点给妈妈打电话")
    report, call = todos(uow_factory, reply)
    assert (report.kind, report.remind_at) == ("deadline", datetime(2027, 3, 12, 16, 30, tzinfo=UTC))
    assert (call.kind, call.remind_at) == ("reminder", call.due_at)


def test_the_rules_tell_a_deadline_the_model_called_a_reminder_and_set_one_it_missed(model, llm, uow_factory):
    llm.queue_reply(turn("Noted!", todos=[("the grant form", "2027-03-11T16:00:00+00:00", "reminder")]))
    [form] = todos(uow_factory, say(model, "the grant form is due Thursday 4pm"))
    assert (form.kind, form.due_at - form.remind_at) == ("deadline", timedelta(minutes=30))
    llm.queue_reply(turn("加油！"))  # a small model set none
    reply = say(model, "下周一中午之前把发票寄出去")
    [invoice] = todos(uow_factory, reply)
    assert (invoice.kind, invoice.content, invoice.due_at) == ("deadline", "把发票寄出去",
                                                               datetime(2027, 3, 15, 12, 0, tzinfo=UTC))
    assert told(reply).startswith("好的，把发票寄出去")


def test_saying_where_one_is_sets_the_zone_and_moves_a_reminder_set_in_the_default(offline, uow_factory):
    school = todos(uow_factory, say(offline, "明天早上8点半提醒我送朵朵去幼儿园"))[0]
    assert school.due_at == datetime(2027, 3, 11, 8, 30, tzinfo=UTC)
    reply = say(offline, "对了，我现在在杭州")
    assert user_zone(uow_factory) == "Asia/Shanghai"
    assert "已按“杭州”把你的时区设为 Asia/Shanghai (UTC+08:00)" in told(reply) and "保持原来的钟点" in told(reply)
    with uow_factory() as uow:
        assert uow.session.get(Todo, school.id).due_at == datetime(2027, 3, 11, 0, 30, tzinfo=UTC)
    later = say(offline, "明天晚上7点提醒我买牛奶")  # in the new zone, and no note on the default any more
    assert todos(uow_factory, later)[0].due_at == datetime(2027, 3, 11, 11, 0, tzinfo=UTC) and later.notices == ()


def test_a_user_without_a_zone_is_told_once_which_one_their_reminders_use(offline):
    first = say(offline, "remind me tomorrow at 7am to water the ferns")
    second = say(offline, "remind me tomorrow at 8am to call Grandpa")
    assert told(first) == default_zone_text("UTC", "en") and second.notices == ()


def test_the_models_zone_is_kept_only_when_the_message_names_that_place(model, llm, uow_factory):
    llm.queue_reply(turn("Welcome to Iceland!", timezone="Atlantic/Reykjavik"))
    reply = say(model, "just landed, staying near Reykjavik for a month", user="u8")
    assert user_zone(uow_factory, "u8") == "Atlantic/Reykjavik" and "Atlantic/Reykjavik" in told(reply)
    llm.queue_reply(turn("在家挺好", timezone="Asia/Shanghai"))  # a guess: the message names no place
    say(model, "我在家", user="u8")
    assert user_zone(uow_factory, "u8") == "Atlantic/Reykjavik"


def test_the_rules_read_a_zone_the_model_did_not_and_a_paused_user_keeps_theirs(model, llm, offline, uow_factory):
    llm.queue_reply(turn("Seattle is lovely"))
    say(model, "I'm in Seattle, so my time zone is Pacific time", user="u9")
    assert user_zone(uow_factory, "u9") == "America/Los_Angeles"
    with uow_factory() as uow:
        uow.users.set_paused(uow.users.identity("telegram", "u9").user_id, SENT)
        uow.commit()
    say(offline, "我搬到成都了", user="u9")
    assert user_zone(uow_factory, "u9") == "America/Los_Angeles"


def test_a_country_with_several_zones_is_asked_about_and_changes_nothing(offline, uow_factory):
    reply = say(offline, "I live in Australia", user="u10")
    assert user_zone(uow_factory, "u10") is None and "/timezone Sydney" in told(reply)


def test_the_prompt_and_the_note_use_the_users_zone(model, llm, uow_factory, offline):
    say(offline, "my time zone is UTC-3", user="u11")
    llm.queue_reply(turn("ok"))
    say(model, "what day is it?", user="u11")
    system = llm.chat_requests()[-1]["messages"]
    note = system[-1]["content"]
    assert "2027-03-09 22:15" in note and "UTC-03:00" in note  # 01:15 UTC is the evening before, three hours west
