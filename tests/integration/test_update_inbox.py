"""The update inbox of webhook replicas (:mod:`shared.db.update_log`) on the real PostgreSQL: an update is
received by one replica, marked handled in the transaction of what it changed (so a failure before the
commit leaves it to be handled again, and a commit leaves no room for a second), claimed again when its
replica went silent, and forgotten after a while."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from sqlalchemy import func, select, text

from shared.commands.service import Caller, MemoryCommands
from shared.db.memory_models import Memory
from shared.db.update_log import (
    MAX_ATTEMPTS,
    PRUNE_EVERY,
    RECLAIM_AFTER,
    UpdateHandledElsewhere,
    UpdateInbox,
    UpdateInHand,
    handling,
)
from shared.db.update_models import PlatformUpdate

pytestmark = pytest.mark.committed

EVE = Caller(platform="telegram", platform_user_id="2101", display_name="Eve", platform_chat_id="2101")


def body(update_id: int) -> str:
    return json.dumps({"update_id": update_id, "message": {"message_id": 1, "text": "/remember tea"}})


@pytest.fixture
def inbox(engine) -> UpdateInbox:
    return UpdateInbox(engine, "telegram")


def row(uow_factory, update_id: int) -> PlatformUpdate:
    with uow_factory() as uow:
        return uow.session.get(PlatformUpdate, ("telegram", update_id))


def memories(uow_factory) -> int:
    with uow_factory() as uow:
        return uow.session.scalar(select(func.count()).select_from(Memory))


def silent_since(engine, update_id: int, age=RECLAIM_AFTER * 2) -> None:
    """The update was received (or last claimed) ``age`` ago."""
    with engine.begin() as connection:
        connection.execute(text("UPDATE platform_updates SET seen_at = now() - :age WHERE update_id = :id"),
                           {"age": age, "id": update_id})


def test_of_two_replicas_receiving_an_update_at_the_same_moment_one_gets_it(inbox, engine):
    start = threading.Barrier(8)

    def receive(_replica: int) -> bool:
        start.wait()
        return UpdateInbox(engine, "telegram").receive(501, body(501))

    with ThreadPoolExecutor(8) as pool:
        assert sorted(pool.map(receive, range(8))) == [False] * 7 + [True]
    assert inbox.receive(501, body(501)) is False  # Telegram tries again later: still received before
    assert UpdateInbox(engine, "discord").receive(501, "{}") is True  # each platform counts its own ids


def test_a_command_marks_its_update_handled_in_its_own_transaction_and_the_body_is_cleared(
        inbox, uow_factory, marking_uow_factory):
    inbox.receive(502, body(502))
    with handling(UpdateInHand("telegram", 502)) as update:
        MemoryCommands(marking_uow_factory).remember(EVE, "I drink green tea")
        assert update.marked
    stored = row(uow_factory, 502)
    assert stored.handled_by == update.attempt
    assert stored.handled_at is not None
    assert stored.body is None
    inbox.finish(update)  # the end of its handling changes nothing more
    assert row(uow_factory, 502).handled_by == update.attempt


def test_a_unit_of_work_wired_without_the_hook_leaves_the_update_to_the_end_of_its_handling(inbox, uow_factory):
    inbox.receive(510, body(510))
    with handling(UpdateInHand("telegram", 510)) as update:
        MemoryCommands(uow_factory).remember(EVE, "I drink green tea")  # a process other than the webhook
    assert not update.marked
    assert row(uow_factory, 510).handled_at is None
    inbox.finish(update)
    assert row(uow_factory, 510).handled_by == update.attempt


def test_a_command_that_fails_before_its_commit_leaves_the_update_to_be_handled_again(
        inbox, uow_factory, marking_uow_factory):
    inbox.receive(503, body(503))
    with handling(UpdateInHand("telegram", 503)) as update, pytest.raises(Exception, match="remember_empty"):
        MemoryCommands(marking_uow_factory).remember(EVE, "   ")
    assert not update.marked
    assert row(uow_factory, 503).handled_at is None


def test_a_second_attempt_at_a_handled_update_changes_nothing(inbox, uow_factory, marking_uow_factory):
    inbox.receive(504, body(504))
    commands = MemoryCommands(marking_uow_factory)
    with handling(UpdateInHand("telegram", 504)):
        commands.remember(EVE, "I drink green tea")
    with handling(UpdateInHand("telegram", 504)), pytest.raises(UpdateHandledElsewhere):
        commands.remember(EVE, "I drink green tea")  # its transaction is rolled back with the refusal
    assert memories(uow_factory) == 1


def test_two_attempts_committing_the_same_update_at_once_make_one_change(inbox, uow_factory, marking_uow_factory):
    inbox.receive(505, body(505))
    start = threading.Barrier(2)

    def attempt(_index: int) -> str:
        with handling(UpdateInHand("telegram", 505)):
            start.wait()
            try:
                MemoryCommands(marking_uow_factory).remember(EVE, "I collect stamps")
            except UpdateHandledElsewhere:
                return "refused"
        return "handled"

    with ThreadPoolExecutor(2) as pool:
        assert sorted(pool.map(attempt, range(2))) == ["handled", "refused"]
    assert memories(uow_factory) == 1


def test_an_update_that_committed_nothing_is_marked_when_its_handling_ends(inbox, uow_factory):
    inbox.receive(506, body(506))
    update = UpdateInHand("telegram", 506)
    with handling(update):
        pass  # /help: an answer, no transaction
    assert row(uow_factory, 506).handled_at is None
    inbox.finish(update)
    assert row(uow_factory, 506).handled_at is not None
    with pytest.raises(UpdateHandledElsewhere):
        inbox.finish(UpdateInHand("telegram", 506))


def test_an_update_left_unhandled_is_claimed_again_by_one_replica_after_a_silence(inbox, engine):
    inbox.receive(507, body(507))
    assert inbox.reclaim() == []  # its replica may still be at it
    silent_since(engine, 507)
    with ThreadPoolExecutor(4) as pool:
        claims = list(pool.map(lambda _i: UpdateInbox(engine, "telegram").reclaim(), range(4)))
    assert sorted(claims, key=len) == [[], [], [], [body(507)]]
    assert inbox.reclaim() == []  # the claim holds for another silence


def test_an_update_that_took_down_its_replica_every_time_is_given_up(inbox, engine):
    inbox.receive(508, body(508))
    for _attempt in range(MAX_ATTEMPTS - 1):
        silent_since(engine, 508)
        assert inbox.reclaim() == [body(508)]
    silent_since(engine, 508)
    assert inbox.reclaim() == []


def test_a_handled_update_is_never_claimed_again(inbox, engine):
    inbox.receive(509, body(509))
    inbox.finish(UpdateInHand("telegram", 509))
    silent_since(engine, 509)
    assert inbox.reclaim() == []


def test_old_updates_are_forgotten_as_new_ones_arrive(inbox, engine, uow_factory):
    inbox.receive(1, body(1))
    silent_since(engine, 1, age=timedelta(days=3))
    for update_id in range(2, PRUNE_EVERY + 1):
        inbox.receive(update_id, "{}")
    assert row(uow_factory, 1) is None
    assert row(uow_factory, 2) is not None
