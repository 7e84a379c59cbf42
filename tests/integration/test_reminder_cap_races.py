"""The cap on pending reminders under concurrency, on real PostgreSQL: many ``/remind`` of one user at once
(separate connections, threads), mixed with imports and snoozes, end with the cap reached and not passed,
because counting and adding are one step per user (shared/reminders/scheduling.py)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from shared.commands.service import MAX_PENDING_REMINDERS, Caller, MemoryCommands
from shared.db.memory_models import Todo
from shared.errors import InvalidCommand

pytestmark = pytest.mark.committed

NOW = datetime(2026, 11, 24, 8, 30, tzinfo=UTC)
ERIN = Caller("discord", "424242", display_name="Erin", locale="en")


@pytest.fixture
def commands(uow_factory) -> MemoryCommands:
    return MemoryCommands(uow_factory, default_timezone="Europe/Lisbon", clock=lambda: NOW)


def with_pending(commands: MemoryCommands, uow_factory, count: int, *, status: str = "pending") -> int:
    """The caller with ``count`` reminders of ``status`` already (written directly); their user id."""
    commands.list_reminders(ERIN)  # makes the user and identity
    with uow_factory() as uow:
        user_id = uow.users.identify(ERIN.platform, ERIN.platform_user_id).user_id
        chat_id = uow.chats.get_or_create(ERIN.platform, ERIN.platform_user_id, "private").id
        for number in range(count):
            due = NOW + timedelta(days=2, minutes=number)
            uow.todos.add(Todo(user_id=user_id, chat_id=chat_id, content=f"old {number}", due_at=due, remind_at=due,
                               timezone="Europe/Lisbon", status=status, source="command", created_at=NOW,
                               updated_at=NOW))
        uow.commit()
    return user_id


def pending(uow_factory, user_id: int) -> int:
    with uow_factory() as uow:
        return uow.todos.count_pending(user_id)


def attempt(call) -> str:
    try:
        call()
    except InvalidCommand as exc:
        return exc.key
    return "ok"


def test_concurrent_reminders_fill_the_cap_exactly_and_the_rest_are_refused(commands, uow_factory):
    user_id = with_pending(commands, uow_factory, MAX_PENDING_REMINDERS - 7)
    requests = [f"remind me in {number + 3} hours to water plant {number}" for number in range(24)]
    with ThreadPoolExecutor(max_workers=12) as pool:
        outcomes = list(pool.map(lambda text: attempt(lambda: commands.remind(ERIN, text)), requests))
    assert outcomes.count("ok") == 7 and outcomes.count("too_many_reminders") == 17
    assert pending(uow_factory, user_id) == MAX_PENDING_REMINDERS


def test_imports_and_reminders_at_once_do_not_pass_the_cap_together(commands, uow_factory):
    user_id = with_pending(commands, uow_factory, MAX_PENDING_REMINDERS - 11)
    due = (NOW + timedelta(days=5)).isoformat()
    files = [json.dumps({"format": "mnemo-export", "version": 1, "todos": [
        {"content": f"file {file} item {item}", "due_at": due, "timezone": "UTC"} for item in range(4)]}).encode()
        for file in range(4)]
    calls = [lambda data=data: commands.import_data(ERIN, data) for data in files]
    calls += [lambda number=number: commands.remind(ERIN, f"remind me in {number + 1} days to call Ines {number}")
              for number in range(8)]
    with ThreadPoolExecutor(max_workers=12) as pool:
        list(pool.map(attempt, calls))
    assert pending(uow_factory, user_id) == MAX_PENDING_REMINDERS


def test_snoozing_sent_reminders_at_once_makes_no_more_pending_than_the_cap(commands, uow_factory):
    user_id = with_pending(commands, uow_factory, MAX_PENDING_REMINDERS - 2)
    with uow_factory() as uow:
        sent = [uow.todos.add(Todo(user_id=user_id, chat_id=None, content=f"sent {number}", due_at=NOW,
                                   remind_at=NOW, timezone="UTC", status="sent", source="command", created_at=NOW,
                                   updated_at=NOW)).id for number in range(6)]
        uow.commit()
    with ThreadPoolExecutor(max_workers=6) as pool:
        outcomes = list(pool.map(lambda todo_id: attempt(lambda: commands.snooze_reminder(ERIN, todo_id, 15)), sent))
    assert outcomes.count("ok") == 2 and outcomes.count("too_many_reminders") == 4
    assert pending(uow_factory, user_id) == MAX_PENDING_REMINDERS
