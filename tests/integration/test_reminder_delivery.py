"""Reminder delivery on real PostgreSQL: atomic leased claims, exactly-once sends to fake platforms."""

from __future__ import annotations

import re
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from bench.fakes.discord_api import FakeDiscord
from bench.fakes.telegram_api import FakeTelegram
from shared.db.memory_models import Todo
from shared.delivery.platform_api import ConsoleSender, DiscordSender, TelegramSender
from shared.reminders.chat_moves import record_chat_move
from shared.reminders.service import (
    DeliveryOutcome,
    ReminderClaim,
    ReminderSender,
    claim_due_reminders,
    console_reminders_sent_since,
    deliver_reminder,
    reminder_text,
)
from shared.repositories.reminders import CLAIMS_PER_USER

NOW = datetime(2026, 11, 22, 1, 30, tzinfo=UTC)  # 09:30 in Shanghai
LEASE = timedelta(seconds=30)
DC_USER, DC_GUILD = "300000000000000001", "500000000000000001"


def senders_for(telegram: FakeTelegram, discord: FakeDiscord | None = None,
                console: list[str] | None = None) -> dict[str, ReminderSender]:
    senders: dict[str, ReminderSender] = {"telegram": TelegramSender(telegram.base_url, telegram.token)}
    if discord is not None:
        senders["discord"] = DiscordSender(discord.base_url, discord.token)
    if console is not None:
        senders["console"] = ConsoleSender(console.append)
    return senders


def add_todo(uow_factory, content: str = "drink water", *, platform: str = "telegram", user: str = "1001",
             chat: str | None = None, kind: str = "private", remind_at: datetime = NOW,
             timezone: str = "Asia/Shanghai", locale: str | None = None) -> int:
    with uow_factory() as uow:
        identity = uow.users.identify(platform, user, locale=locale)
        chat_row = uow.chats.get_or_create(platform, chat or user, kind)
        todo = uow.todos.add(Todo(user_id=identity.user_id, chat_id=chat_row.id, content=content,
                                  due_at=remind_at, remind_at=remind_at, timezone=timezone))
        uow.commit()
        return todo.id


def todo_row(uow_factory, todo_id: int) -> Todo:
    with uow_factory() as uow:
        return uow.session.get(Todo, todo_id)


def claim_one(uow_factory, now: datetime = NOW) -> ReminderClaim:
    [claim] = claim_due_reminders(uow_factory, now, lease=LEASE)
    return claim


def deliver(uow_factory, senders, claim: ReminderClaim, now: datetime = NOW) -> DeliveryOutcome:
    return deliver_reminder(uow_factory, senders, claim.todo_id, claim.attempt, now)


@pytest.mark.committed
def test_due_reminders_are_claimed_once_across_two_concurrent_claimers(uow_factory):
    todo_ids = {add_todo(uow_factory, f"task {i}", user=str(1001 + i % 3)) for i in range(3 * CLAIMS_PER_USER)}
    start = threading.Barrier(2)

    def claimer() -> list[ReminderClaim]:
        start.wait()
        return claim_due_reminders(uow_factory, NOW, limit=20, lease=LEASE)

    with ThreadPoolExecutor(2) as pool:
        first, second = (f.result() for f in [pool.submit(claimer), pool.submit(claimer)])

    assert {c.todo_id for c in first} | {c.todo_id for c in second} == todo_ids
    assert not {c.todo_id for c in first} & {c.todo_id for c in second}
    assert {c.attempt for c in first + second} == {1}


def test_reminders_not_yet_due_are_not_claimed(uow_factory):
    due = add_todo(uow_factory, "now")
    add_todo(uow_factory, "later", remind_at=NOW + timedelta(minutes=1))

    assert claim_due_reminders(uow_factory, NOW) == [ReminderClaim(due, 1)]


def test_delivering_a_claim_sends_the_reminder_and_marks_it_sent(uow_factory, telegram):
    todo_id = add_todo(uow_factory, "drink water")

    outcome = deliver(uow_factory, senders_for(telegram), claim_one(uow_factory))

    assert outcome == DeliveryOutcome("sent")
    assert telegram.sent == [{"chat_id": 1001, "text": "⏰ Reminder: drink water (09:30)", "message_id": 1}]
    todo = todo_row(uow_factory, todo_id)
    assert (todo.status, todo.sent_at, todo.claimed_until, todo.attempts) == ("sent", NOW, None, 1)


def test_a_reminder_to_a_group_that_became_a_supergroup_follows_it_to_the_new_id(uow_factory, telegram):
    todo_id = add_todo(uow_factory, "standup", chat="-100500", kind="group")
    telegram.migrate_chat(-100500, -1009876543210)
    claim = claim_one(uow_factory)

    moved = deliver(uow_factory, senders_for(telegram), claim)
    assert (moved.kind, moved.retry_after) == ("retry", 0.0)
    assert deliver(uow_factory, senders_for(telegram), claim) == DeliveryOutcome("sent")

    assert [m["chat_id"] for m in telegram.sent] == [-1009876543210]
    with uow_factory() as uow:
        chat = uow.chats.get(todo_row(uow_factory, todo_id).chat_id)
        assert (chat.platform_chat_id, chat.kind) == ("-1009876543210", "group")


def test_when_the_supergroup_is_already_known_pending_reminders_move_to_it(uow_factory):
    old_todo = add_todo(uow_factory, "standup", chat="-100500", kind="group")
    new_todo = add_todo(uow_factory, "retro", chat="-1009876543210", kind="group")

    assert record_chat_move(uow_factory, "telegram", "-100500", "-1009876543210")
    assert not record_chat_move(uow_factory, "telegram", "-404", "-1009876543210")  # unknown chat

    assert todo_row(uow_factory, old_todo).chat_id == todo_row(uow_factory, new_todo).chat_id
    with uow_factory() as uow:
        assert uow.chats.get(todo_row(uow_factory, new_todo).chat_id).platform_chat_id == "-1009876543210"


def test_the_reminder_speaks_chinese_to_chinese_users_and_about_chinese_content():
    assert reminder_text("喝水", NOW, "Asia/Shanghai", None) == "⏰ 提醒：喝水（09:30）"
    assert reminder_text("drink water", NOW, "Asia/Shanghai", "zh-CN") == "⏰ 提醒：drink water（09:30）"
    assert reminder_text("drink water", NOW, "Europe/London", "en") == "⏰ Reminder: drink water (01:30)"
    assert reminder_text("drink water", NOW, "Not/AZone", None) == "⏰ Reminder: drink water (01:30)"


def test_delivering_the_same_claim_twice_sends_once(uow_factory, telegram):
    add_todo(uow_factory)
    claim, senders = claim_one(uow_factory), senders_for(telegram)

    outcomes = [deliver(uow_factory, senders, claim), deliver(uow_factory, senders, claim)]

    assert [o.kind for o in outcomes] == ["sent", "skipped"] and len(telegram.sent) == 1


def test_a_stale_claim_is_skipped_once_the_reminder_was_claimed_again(uow_factory, telegram):
    add_todo(uow_factory)
    stale = claim_one(uow_factory)
    later = NOW + LEASE + timedelta(seconds=1)
    fresh = claim_one(uow_factory, later)  # the first worker died; its lease ran out

    stale_outcome = deliver(uow_factory, senders_for(telegram), stale, later)
    fresh_outcome = deliver(uow_factory, senders_for(telegram), fresh, later)

    assert fresh.attempt == 2 and stale_outcome.kind == "skipped" and "superseded" in stale_outcome.reason
    assert fresh_outcome.kind == "sent" and len(telegram.sent) == 1


def test_a_claim_whose_lease_ran_out_is_not_delivered_and_can_be_claimed_again(uow_factory, telegram):
    todo_id = add_todo(uow_factory)
    claim = claim_one(uow_factory)
    late = NOW + LEASE

    outcome = deliver(uow_factory, senders_for(telegram), claim, late)

    assert outcome.kind == "skipped" and "lease" in outcome.reason and telegram.sent == []
    assert todo_row(uow_factory, todo_id).status == "pending"
    assert claim_due_reminders(uow_factory, late + timedelta(seconds=1)) == [ReminderClaim(todo_id, 2)]


def test_a_reminder_cancelled_after_its_claim_is_not_sent(uow_factory, telegram):
    todo_id = add_todo(uow_factory)
    claim = claim_one(uow_factory)
    with uow_factory() as uow:
        uow.session.get(Todo, todo_id).status = "cancelled"
        uow.commit()

    outcome = deliver(uow_factory, senders_for(telegram), claim)

    assert outcome == DeliveryOutcome("skipped", "the reminder is already cancelled") and telegram.sent == []


def test_a_rate_limited_reminder_is_sent_when_retried_after_the_given_seconds(uow_factory, telegram):
    todo_id = add_todo(uow_factory)
    claim, senders = claim_one(uow_factory), senders_for(telegram)
    telegram.fail_next(429, retry_after=3)

    first = deliver(uow_factory, senders, claim)
    held = todo_row(uow_factory, todo_id)
    second = deliver(uow_factory, senders, claim, NOW + timedelta(seconds=first.retry_after))

    assert first.kind == "retry" and first.retry_after == 3
    assert held.status == "pending" and "Too Many Requests" in held.last_error
    assert held.claimed_until > NOW + timedelta(seconds=3)  # the claim outlives the wait
    assert second.kind == "sent" and len(telegram.sent) == 1 and todo_row(uow_factory, todo_id).status == "sent"


def test_a_retry_that_never_comes_leaves_the_reminder_to_the_next_scan(uow_factory, telegram):
    todo_id = add_todo(uow_factory)
    telegram.fail_next(500)
    outcome = deliver(uow_factory, senders_for(telegram), claim_one(uow_factory))

    much_later = NOW + timedelta(minutes=10)
    [again] = claim_due_reminders(uow_factory, much_later, lease=LEASE)

    assert outcome.kind == "retry" and again == ReminderClaim(todo_id, 2)
    assert deliver(uow_factory, senders_for(telegram), again, much_later).kind == "sent"


def test_a_refused_reminder_is_cancelled_with_the_reason_and_never_claimed_again(uow_factory, telegram):
    todo_id = add_todo(uow_factory)
    telegram.fail_next(403, description="Forbidden: bot was blocked by the user")

    outcome = deliver(uow_factory, senders_for(telegram), claim_one(uow_factory))

    todo = todo_row(uow_factory, todo_id)
    assert outcome.kind == "refused" and "blocked" in outcome.reason
    assert todo.status == "cancelled" and todo.last_error.startswith("refused: telegram 403")
    assert claim_due_reminders(uow_factory, NOW + timedelta(days=1)) == []


def test_a_rejected_token_keeps_the_reminder_until_the_configuration_is_fixed(uow_factory, telegram):
    todo_id = add_todo(uow_factory)
    broken = {"telegram": TelegramSender(telegram.base_url, "999:WRONG")}

    outcome = deliver(uow_factory, broken, claim_one(uow_factory))
    unconfigured = deliver(uow_factory, {}, claim_one(uow_factory, NOW + timedelta(minutes=5)))

    todo = todo_row(uow_factory, todo_id)
    assert outcome.kind == unconfigured.kind == "refused" and "no sender" in unconfigured.reason
    assert todo.status == "pending" and "no sender" in todo.last_error
    fixed_at = NOW + timedelta(minutes=10)
    assert deliver(uow_factory, senders_for(telegram), claim_one(uow_factory, fixed_at), fixed_at).kind == "sent"
    assert len(telegram.sent) == 1


def test_discord_reminders_go_to_a_dm_or_mention_the_user_in_the_guild_channel(uow_factory, telegram, discord):
    dm_todo = add_todo(uow_factory, "stretch", platform="discord", user=DC_USER, chat="400000000000000001")
    guild_todo = add_todo(uow_factory, "standup", platform="discord", user=DC_USER, chat=DC_GUILD, kind="group",
             remind_at=NOW + timedelta(seconds=1))
    senders = senders_for(telegram, discord)

    for claim in claim_due_reminders(uow_factory, NOW + timedelta(seconds=1)):
        assert deliver(uow_factory, senders, claim, NOW + timedelta(seconds=1)).kind == "sent"

    dm = discord.dm_channel_of(DC_USER)
    assert [m["content"] for m in discord.messages_in(dm)] == ["⏰ Reminder: stretch (09:30)"]
    assert [m["content"] for m in discord.messages_in(DC_GUILD)] == [f"<@{DC_USER}> ⏰ Reminder: standup (09:30)"]
    assert {m["nonce"] for m in discord.messages} == {f"mnemo-todo-{dm_todo}", f"mnemo-todo-{guild_todo}"}


def test_console_reminders_are_marked_sent_and_shown_by_the_console(uow_factory, telegram):
    todo_id = add_todo(uow_factory, "喝水", platform="console", user="ming", chat="console")
    add_todo(uow_factory, "telegram one")  # another platform: not shown in the console
    lines: list[str] = []

    for claim in claim_due_reminders(uow_factory, NOW):
        deliver(uow_factory, senders_for(telegram, console=lines), claim)

    user_id = todo_row(uow_factory, todo_id).user_id
    assert lines == ["[console console] ⏰ 提醒：喝水（09:30）"]
    shown = console_reminders_sent_since(uow_factory, user_id, NOW - timedelta(minutes=1))
    assert shown == [(NOW, "⏰ 提醒：喝水（09:30）")]
    assert console_reminders_sent_since(uow_factory, user_id, NOW) == []


def test_a_reminder_whose_chat_is_gone_is_cancelled(uow_factory, telegram):
    todo_id = add_todo(uow_factory)
    with uow_factory() as uow:
        uow.session.get(Todo, todo_id).chat_id = None
        uow.commit()

    outcome = deliver(uow_factory, senders_for(telegram), claim_one(uow_factory))

    assert outcome.kind == "refused" and todo_row(uow_factory, todo_id).status == "cancelled"
    assert telegram.sent == []


def _scenario_todos(uow_factory) -> Counter[str]:
    """200 due reminders over Telegram and Discord, private chats and groups; expected count per chat."""
    per_chat: Counter[str] = Counter()
    for i in range(200):
        platform, user = ("telegram", str(7000 + i % 10)) if i % 2 == 0 else ("discord", str(3 * 10**17 + i % 10))
        group = i % 4 >= 2
        chat = ("-1009000" if platform == "telegram" else "5" * 18) if group else None
        add_todo(uow_factory, f"task {i:03d}", platform=platform, user=user, chat=chat,
                 kind="group" if group else "private", remind_at=NOW - timedelta(seconds=i))
        per_chat[f"{platform}:{chat or user}"] += 1
    return per_chat


@pytest.mark.committed
def test_two_hundred_reminders_are_each_delivered_exactly_once_when_a_worker_dies_half_way(
        uow_factory, telegram, discord):
    expected_per_chat = _scenario_todos(uow_factory)
    telegram.fail_next(429, retry_after=1)
    discord.fail_next(502, path_contains="/messages")
    abandoned: list[ReminderClaim] = []

    def worker(now: datetime, die_after: int | None = None) -> int:
        """Claim and deliver until nothing is due; "die" after ``die_after`` sends, abandoning the rest."""
        senders, sent = senders_for(telegram, discord), 0
        while claims := claim_due_reminders(uow_factory, now, limit=10, lease=LEASE):
            for index, claim in enumerate(claims):
                if die_after is not None and sent >= die_after:
                    abandoned.extend(claims[index:])
                    return sent
                outcome = deliver(uow_factory, senders, claim, now)
                while outcome.retry_after is not None:  # the caller waits as told, on the clock it passes in
                    outcome = deliver(uow_factory, senders, claim, now + timedelta(seconds=outcome.retry_after))
                sent += outcome.kind == "sent"
        return sent

    with ThreadPoolExecutor(2) as pool:
        dying, surviving = pool.submit(worker, NOW, 20), pool.submit(worker, NOW)
        died_after, survived_with = dying.result(), surviving.result()
    after_lease = NOW + LEASE + timedelta(seconds=1)
    second_round = worker(after_lease)
    stale = [deliver(uow_factory, senders_for(telegram, discord), c, after_lease) for c in abandoned]

    assert died_after == 20 and survived_with > 0 and abandoned and second_round == len(abandoned)
    assert died_after + survived_with + second_round == 200
    assert len(telegram.calls) == len(telegram.sent) + 1  # the 429 was met and retried
    assert {o.kind for o in stale} == {"skipped"}
    delivered = [m["text"] for m in telegram.sent] + [m["content"] for m in discord.messages]
    assert Counter(re.search(r"task \d{3}", text)[0] for text in delivered) == Counter(
        f"task {i:03d}" for i in range(200))
    by_chat = Counter(f"telegram:{m['chat_id']}" for m in telegram.sent)
    dm_owner = {discord.dm_channel_of(str(3 * 10**17 + n)): str(3 * 10**17 + n) for n in range(10)}
    by_chat.update(f"discord:{dm_owner.get(m['channel_id'], m['channel_id'])}" for m in discord.messages)
    assert by_chat == expected_per_chat
    with uow_factory() as uow:
        statuses = Counter(uow.session.scalars(select(Todo.status)))
    assert statuses == {"sent": 200}


def test_one_users_old_backlog_does_not_hold_back_another_users_reminder(uow_factory):
    for n in range(40):
        add_todo(uow_factory, f"backlog {n}", user="7001", remind_at=NOW - timedelta(days=900, minutes=n))
    theirs = add_todo(uow_factory, "stand-up", user="7002", remind_at=NOW)

    first = claim_due_reminders(uow_factory, NOW, limit=25, lease=LEASE)

    assert theirs in {claim.todo_id for claim in first}
    assert len(first) == CLAIMS_PER_USER + 1
    later = claim_due_reminders(uow_factory, NOW, limit=25, lease=LEASE)
    assert len(later) == CLAIMS_PER_USER and theirs not in {claim.todo_id for claim in later}
