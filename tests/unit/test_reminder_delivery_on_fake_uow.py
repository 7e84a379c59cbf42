"""Reminder delivery (shared/reminders/service.py) on the fake unit of work: leased claims, one send per
claim, and what each kind of platform failure leaves behind. The platform is a recording sender."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from shared.db.memory_models import Todo
from shared.db.models import Chat
from shared.reminders.service import (
    SEND_WINDOW,
    ChatMoved,
    DeliveryOutcome,
    DeliveryRefused,
    ReminderClaim,
    ReminderTarget,
    RetryLater,
    SenderMisconfigured,
    claim_due_reminders,
    console_reminders_sent_since,
    deliver_reminder,
)
from shared.repositories.reminders import CLAIMS_PER_USER
from tests.fakes.uow import FakeDatabase

NOW = datetime(2026, 11, 22, 1, 30, tzinfo=UTC)  # 09:30 in Shanghai
LEASE = timedelta(seconds=30)


class RecordingSender:
    """A platform that accepts every message, or raises the next of ``failures``."""

    def __init__(self, *failures: Exception) -> None:
        self.failures = list(failures)
        self.sent: list[tuple[ReminderTarget, str, str]] = []

    def send(self, target: ReminderTarget, text: str, *, idempotency_key: str) -> None:
        if self.failures:
            raise self.failures.pop(0)
        self.sent.append((target, text, idempotency_key))


@pytest.fixture
def database() -> FakeDatabase:
    return FakeDatabase(lambda: NOW)


def add_todo(database: FakeDatabase, content: str = "drink water", *, platform: str = "telegram", user: str = "1001",
             chat: str | None = None, kind: str = "private", remind_at: datetime = NOW, locale: str | None = None,
             in_chat: bool = True) -> int:
    with database.unit_of_work() as uow:
        identity = uow.users.identify(platform, user, locale=locale)
        chat_id = uow.chats.get_or_create(platform, chat or user, kind).id if in_chat else None
        todo = uow.todos.add(Todo(user_id=identity.user_id, chat_id=chat_id, content=content, due_at=remind_at,
                                  remind_at=remind_at, timezone="Asia/Shanghai"))
        uow.commit()
    return todo.id


def todo_row(database: FakeDatabase, todo_id: int) -> Todo:
    return next(todo for todo in database.rows(Todo) if todo.id == todo_id)


def claim_one(database: FakeDatabase, now: datetime = NOW) -> ReminderClaim:
    [claim] = claim_due_reminders(database.unit_of_work, now, lease=LEASE)
    return claim


def deliver(database: FakeDatabase, senders: dict, claim: ReminderClaim, now: datetime = NOW) -> DeliveryOutcome:
    return deliver_reminder(database.unit_of_work, senders, claim.todo_id, claim.attempt, now)


def test_only_due_reminders_are_claimed_and_a_claim_is_not_given_twice_within_its_lease(database):
    due = add_todo(database)
    later = add_todo(database, "later", remind_at=NOW + LEASE)
    assert claim_due_reminders(database.unit_of_work, NOW, lease=LEASE) == [ReminderClaim(due, 1)]
    assert claim_due_reminders(database.unit_of_work, NOW + LEASE - timedelta(seconds=1), lease=LEASE) == []
    again = claim_due_reminders(database.unit_of_work, NOW + LEASE + timedelta(seconds=1), lease=LEASE)
    assert set(again) == {ReminderClaim(due, 2), ReminderClaim(later, 1)}


def test_a_claim_is_sent_once_to_its_chat_in_the_todos_zone_and_marked_sent(database):
    todo_id = add_todo(database, "drink water", locale="en")
    claim, telegram = claim_one(database), RecordingSender()
    assert deliver(database, {"telegram": telegram}, claim).kind == "sent"
    assert deliver(database, {"telegram": telegram}, claim).kind == "skipped"
    assert telegram.sent == [(ReminderTarget("telegram", "1001", "1001", "private"), "⏰ Reminder: drink water (09:30)",
                              f"mnemo-todo-{todo_id}")]
    row = todo_row(database, todo_id)
    assert (row.status, row.sent_at, row.claimed_until) == ("sent", NOW, None)


def test_a_stale_claim_or_one_whose_lease_ran_out_sends_nothing(database):
    add_todo(database)
    stale = claim_one(database)
    later = NOW + LEASE + timedelta(seconds=1)
    expired = deliver(database, {"telegram": RecordingSender()}, stale, later)
    assert (expired.kind, expired.reason) == ("skipped", "the claim's lease ran out")
    current = claim_one(database, later)
    telegram = RecordingSender()
    superseded = deliver(database, {"telegram": telegram}, stale, later)
    assert (superseded.kind, superseded.reason) == ("skipped", "claim 1 was superseded by claim 2")
    assert telegram.sent == [] and current.attempt == 2


def test_a_refused_reminder_is_cancelled_with_the_reason_and_never_claimed_again(database):
    todo_id = add_todo(database)
    claim = claim_one(database)
    blocked = RecordingSender(DeliveryRefused("bot was blocked by the user"))
    outcome = deliver(database, {"telegram": blocked}, claim)
    assert (outcome.kind, outcome.reason) == ("refused", "bot was blocked by the user")
    row = todo_row(database, todo_id)
    assert (row.status, row.last_error, row.claimed_until) == ("cancelled", "refused: bot was blocked by the user",
                                                               None)
    assert claim_due_reminders(database.unit_of_work, NOW + timedelta(days=1)) == []


def test_a_rate_limited_reminder_holds_its_claim_past_the_wait_and_is_sent_on_the_retry(database):
    todo_id = add_todo(database)
    claim = claim_one(database)
    telegram = RecordingSender(RetryLater(60, "429 Too Many Requests"))
    outcome = deliver(database, {"telegram": telegram}, claim)
    assert (outcome.kind, outcome.retry_after) == ("retry", 60)
    row = todo_row(database, todo_id)
    assert (row.status, row.last_error) == ("pending", "429 Too Many Requests")
    assert row.claimed_until == NOW + timedelta(seconds=60) + SEND_WINDOW
    assert claim_due_reminders(database.unit_of_work, NOW + timedelta(seconds=61)) == []
    retry_at = NOW + timedelta(seconds=60)
    assert deliver(database, {"telegram": telegram}, claim, retry_at).kind == "sent"
    assert len(telegram.sent) == 1


@pytest.mark.parametrize("senders", [{}, {"telegram": RecordingSender(SenderMisconfigured("401 Unauthorized"))}],
                         ids=["no sender", "token rejected"])
def test_when_our_side_cannot_send_the_reminder_stays_pending_for_the_next_scan(database, senders):
    todo_id = add_todo(database)
    claim = claim_one(database)
    assert deliver(database, senders, claim).kind == "refused"
    row = todo_row(database, todo_id)
    assert row.status == "pending" and row.last_error in ("no sender configured for telegram", "401 Unauthorized")
    assert claim_one(database, NOW + timedelta(minutes=1)) == ReminderClaim(todo_id, 2)


def test_a_reminder_whose_chat_is_gone_is_cancelled_without_a_send(database):
    todo_id = add_todo(database, in_chat=False)
    claim, telegram = claim_one(database), RecordingSender()
    outcome = deliver(database, {"telegram": telegram}, claim)
    assert (outcome.kind, telegram.sent) == ("refused", [])
    row = todo_row(database, todo_id)
    assert (row.status, row.last_error) == ("cancelled", "refused: the chat of this reminder no longer exists")


def test_a_reminder_to_a_group_that_became_a_supergroup_is_retried_at_once_to_the_new_id(database):
    add_todo(database, chat="-100", kind="group")
    claim = claim_one(database)
    telegram = RecordingSender(ChatMoved("-100999", "group chat was upgraded to a supergroup chat"))
    outcome = deliver(database, {"telegram": telegram}, claim)
    assert (outcome.kind, outcome.retry_after) == ("retry", 0.0)
    assert [chat.platform_chat_id for chat in database.rows(Chat)] == ["-100999"]
    assert deliver(database, {"telegram": telegram}, claim).kind == "sent"
    assert [target.platform_chat_id for target, _, _ in telegram.sent] == ["-100999"]


def test_when_the_supergroup_is_already_known_pending_reminders_move_to_it(database):
    old = add_todo(database, "old group", chat="-100", kind="group")
    add_todo(database, "new group", chat="-100999", kind="group", remind_at=NOW + timedelta(days=1))
    claim = claim_one(database)
    telegram = RecordingSender(ChatMoved("-100999", "group chat was upgraded to a supergroup chat"))
    deliver(database, {"telegram": telegram}, claim)
    deliver(database, {"telegram": telegram}, claim)
    chats = {chat.platform_chat_id: chat.id for chat in database.rows(Chat)}
    assert sorted(chats) == ["-100", "-100999"] and todo_row(database, old).chat_id == chats["-100999"]
    assert [target.platform_chat_id for target, _, _ in telegram.sent] == ["-100999"]


def test_the_console_shows_only_this_users_console_reminders_sent_in_the_window(database):
    mine = add_todo(database, "喝水", platform="console", user="me")
    add_todo(database, "not mine", platform="console", user="you")
    add_todo(database, "on telegram", user="1001")
    with database.unit_of_work() as uow:
        me = uow.users.identity("console", "me")
    for claim in claim_due_reminders(database.unit_of_work, NOW):
        with database.unit_of_work() as uow:
            todo = uow.todos.lock_for_delivery(claim.todo_id)
            uow.todos.mark_sent(todo.user_id, todo.id, claim.attempt, NOW)
            uow.commit()
    assert todo_row(database, mine).status == "sent"
    shown = console_reminders_sent_since(database.unit_of_work, me.user_id, NOW - timedelta(minutes=1))
    assert shown == [(NOW, "⏰ 提醒：喝水（09:30）")]
    assert console_reminders_sent_since(database.unit_of_work, me.user_id, NOW) == []


def test_a_scan_claims_at_most_a_few_of_one_users_backlog_so_others_are_not_held_back():
    database = FakeDatabase()
    with database.unit_of_work() as uow:
        flooded, other = uow.users.identify("telegram", "7001"), uow.users.identify("telegram", "7002")
        chat = uow.chats.get_or_create("telegram", "7001", "private")
        for n in range(250):
            uow.todos.add(Todo(user_id=flooded.user_id, chat_id=chat.id, content=f"from 2021 #{n}",
                               due_at=NOW - timedelta(days=1500), remind_at=NOW - timedelta(days=1500, minutes=n),
                               timezone="UTC"))
        mine = uow.todos.add(Todo(user_id=other.user_id, chat_id=chat.id, content="stand-up", due_at=NOW,
                                  remind_at=NOW, timezone="UTC"))
        uow.commit()
    claims = claim_due_reminders(database.unit_of_work, NOW, limit=40)
    assert mine.id in {claim.todo_id for claim in claims}
    assert len(claims) == CLAIMS_PER_USER + 1
