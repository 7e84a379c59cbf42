"""A time something is due by pings ahead of it; a time to be reminded at pings at it (pure)."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from shared.reminders.deadlines import DEFAULT_HEADS_UP, deadline_todo, reads_as_deadline, timing, todo_content
from shared.reminders.timeparse import resolve_when

TOKYO = "Asia/Tokyo"
WEDNESDAY = datetime(2027, 3, 10, 9, 15, tzinfo=ZoneInfo(TOKYO))


@pytest.mark.parametrize(("message", "due", "what"), [
    ("周四下午四点前交方案", "2027-03-11 16:00", "交方案"),
    ("下周一之前要把发票寄出去", "2027-03-15 09:00", "把发票寄出去"),
    ("报名表明晚八点截止", "2027-03-11 20:00", "报名表"),
    ("the grant application is due Thursday 4pm", "2027-03-11 16:00", "the grant application"),
    ("I have to return the library books by Saturday noon", "2027-03-13 12:00",
     "I have to return the library books"),
    ("deadline for the tax form is March 15", "2027-03-15 09:00", "the tax form"),
])
def test_a_to_do_with_a_deadline_is_read_without_remind_me(message, due, what):
    found = deadline_todo(message, WEDNESDAY, TOKYO)
    assert (f"{found.due:%Y-%m-%d %H:%M}", found.rest) == (due, what)


@pytest.mark.parametrize("message", [
    "周四下午四点开会",  # a time, no deadline word
    "周四下午四点前交了方案", "我三点前就到家了", "方案已经在周四之前交了",  # the past
    "方案周四前要交吗？", "When is the grant application due Thursday?",  # questions
    "the rent was due Monday", "I missed the Friday deadline",
    "in 20 minutes before the meeting",  # an amount of time is no deadline
    "周四前",  # nothing to do
])
def test_a_message_without_a_to_do_due_ahead_is_no_deadline(message):
    assert deadline_todo(message, WEDNESDAY, TOKYO) is None


@pytest.mark.parametrize(("text", "deadline"), [
    ("提醒我周四下午四点前交方案", True), ("提醒我周四下午四点交方案", False),
    ("remind me at 3 to call the plumber", False), ("remind me the essay is due at 3", True),
    ("remind me to leave before 6pm", True), ("remind me in 2 hours to leave", False),
])
def test_a_deadline_word_next_to_the_time_makes_it_a_deadline(text, deadline):
    assert reads_as_deadline(text, resolve_when(text, WEDNESDAY, TOKYO)) is deadline


def test_a_deadline_pings_its_heads_up_before_it_and_a_reminder_at_its_time():
    due = WEDNESDAY + timedelta(days=1)
    assert timing("reminder", due, WEDNESDAY).remind_at == due
    assert timing("deadline", due, WEDNESDAY).remind_at == due - DEFAULT_HEADS_UP
    assert timing("deadline", due, WEDNESDAY, timedelta(minutes=25)).remind_at == due - timedelta(minutes=25)


def test_a_deadline_nearer_than_its_heads_up_pings_halfway_and_one_already_past_at_its_time():
    soon = WEDNESDAY + timedelta(minutes=40)
    assert timing("deadline", soon, WEDNESDAY).remind_at == WEDNESDAY + timedelta(minutes=20)
    past = WEDNESDAY - timedelta(minutes=5)
    assert timing("deadline", past, WEDNESDAY).remind_at == past


def test_what_is_to_be_done_loses_the_deadline_words_around_it():
    assert todo_content("前，要交方案") == "交方案"
    assert todo_content("the slides are due on") == "the slides"
    assert todo_content("作业的截止时间是") == "作业"
    assert todo_content("is is is is is due") == "is is"  # at most four words are taken off the end


def test_a_time_put_first_is_a_deadline_when_the_words_after_it_end_in_due():
    text = "Friday 5pm the tax return is due"
    found = resolve_when(text, WEDNESDAY, TOKYO)
    assert reads_as_deadline(text, found)
    assert todo_content(found.rest) == "the tax return"
    other = "Friday 5pm pay Sam what is due to him"
    assert not reads_as_deadline(other, resolve_when(other, WEDNESDAY, TOKYO))
