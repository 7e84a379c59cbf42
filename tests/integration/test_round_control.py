"""The user's control over rounds (what was said, both sides) on real PostgreSQL: ``/forget <search>`` offers
and deletes the matching rounds beside the memories, ``/forget all`` leaves none in any chat and touches no
one else's, an export holds both sides and an import brings them back recallable to the caller only, and a
sitting closed after the user paused keeps nothing they said while paused."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from sqlalchemy import select

from shared.commands.service import Caller, MemoryCommands
from shared.conversation.service import ConversationService
from shared.db.memory_models import Memory
from shared.db.models import ConversationTurn
from shared.errors import InvalidCommand
from shared.lifecycle.episodes import close_idle_sessions, summarise_session
from shared.llm.client import ChatModel
from shared.recall.retrieval import recall_for_turn
from tests.integration.test_conversation import CONFIG, Clock, say, turn
from tests.integration.test_round_recall import next_sitting, user_turn_ids

ALICE = Caller("telegram", "u1", display_name="Alice", locale="en")
BOB = Caller("telegram", "u2", display_name="Bob", locale="en")


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def service(uow_factory, llm, clock) -> ConversationService:
    model = ChatModel(base_url=llm.base_url, api_key="test", model="fake-chat", timeout_seconds=10)
    return ConversationService(uow_factory, CONFIG, chat_model=model, clock=clock)


@pytest.fixture
def commands(uow_factory, clock) -> MemoryCommands:
    return MemoryCommands(uow_factory, default_timezone="Asia/Shanghai", clock=clock)


def user_of(uow_factory, caller: Caller) -> int:
    with uow_factory() as uow:
        return uow.users.identity(caller.platform, caller.platform_user_id).user_id


def turns_of(uow_factory, user_id: int) -> list[tuple[str, str]]:
    with uow_factory() as uow:
        return [(t.role, t.text) for t in uow.session.scalars(
            select(ConversationTurn).where(ConversationTurn.user_id == user_id).order_by(ConversationTurn.id))]


def recalled_lines(uow_factory, user_id: int, words: str, now) -> list[tuple[str, str | None]]:
    with uow_factory() as uow:
        found = recall_for_turn(uow, user_id, words, now=now, limit=5)
    return [(scored.round.line, scored.round.reply) for scored in found.rounds]


def test_forget_by_search_offers_the_matching_rounds_and_deletes_both_sides_keeping_the_memory_unlinked(
        service, llm, clock, commands, uow_factory):
    llm.queue_reply(turn("Tangerine it is, I'll keep it in mind.",
                         entries=[("fact", "user", "locker_code", "The user's locker code is tangerine")]))
    say(service, "My locker code is tangerine", clock=clock)
    llm.queue_reply(turn("Enjoy the walk!"))
    say(service, "Going for a walk", clock=clock)
    confirmation = commands.request_forget(ALICE, "tangerine")
    assert (confirmation.count, confirmation.rounds) == (1, 1)
    assert confirmation.round_preview[0].endswith("My locker code is tangerine")
    [line_id] = user_turn_ids(uow_factory, "My locker code is tangerine")
    commands.confirm(ALICE, confirmation.token)
    alice = user_of(uow_factory, ALICE)
    assert turns_of(uow_factory, alice) == [("user", "Going for a walk"), ("assistant", "Enjoy the walk!")]
    with uow_factory() as uow:
        assert uow.session.scalar(select(Memory).where(Memory.source_turn_id == line_id)) is None


def test_forget_by_search_finds_a_round_by_the_bots_words_and_refuses_when_nothing_matches(
        service, llm, clock, commands, uow_factory):
    llm.queue_reply(turn("Try the Spirited Away soundtrack."))
    say(service, "Any music for tonight?", clock=clock)
    confirmation = commands.request_forget(ALICE, "spirited")
    assert (confirmation.count, confirmation.rounds) == (0, 1)
    commands.confirm(ALICE, confirmation.token)
    assert turns_of(uow_factory, user_of(uow_factory, ALICE)) == []
    with pytest.raises(InvalidCommand, match="forget_no_match"):
        commands.request_forget(ALICE, "spirited")


def test_forget_all_leaves_no_round_of_the_user_in_any_chat_and_another_members_rounds_stay(
        service, llm, clock, commands, uow_factory):
    llm.queue_reply(turn("Hello Alice."))
    say(service, "hello from my private chat", clock=clock)
    llm.queue_reply(turn("Nice, the cello is lovely."))
    say(service, "I play the cello", user="u1", name="Alice", chat="g1", private=False, clock=clock)
    llm.queue_reply(turn("Good luck with the violin recital!"))
    say(service, "My violin recital is on Friday", user="u2", name="Bob", chat="g1", private=False, clock=clock)
    confirmation = commands.request_forget(ALICE, "all")
    assert confirmation.everything
    assert confirmation.rounds == 2
    commands.confirm(ALICE, confirmation.token)
    assert turns_of(uow_factory, user_of(uow_factory, ALICE)) == []
    assert turns_of(uow_factory, user_of(uow_factory, BOB)) == [
        ("user", "My violin recital is on Friday"), ("assistant", "Good luck with the violin recital!")]
    with pytest.raises(InvalidCommand, match="forget_no_match"):
        commands.request_forget(BOB, "cello")  # nothing of Alice's was ever Bob's to forget


def test_export_forget_all_import_brings_the_round_back_recallable(service, llm, clock, commands, uow_factory):
    llm.queue_reply(turn("You should try 'Spirited Away', a gentle Miyazaki film."))
    say(service, "Any film for a rainy evening?", clock=clock)
    exported = commands.export_data(ALICE).data
    document = json.loads(exported)
    assert document["version"] == 2
    line, reply = document["turns"]
    assert (line["role"], line["paused"], reply["role"], reply["reply_to"]) == ("user", False, "assistant", line["id"])
    commands.confirm(ALICE, commands.request_forget(ALICE, "all").token)
    alice = user_of(uow_factory, ALICE)
    next_sitting(clock, timedelta(days=3))
    assert recalled_lines(uow_factory, alice, "Which Miyazaki film did you recommend?", clock.now) == []
    report = commands.import_data(ALICE, exported)
    assert report.imported["turns"] == 2
    assert recalled_lines(uow_factory, alice, "Which Miyazaki film did you recommend?", clock.now) == [
        ("Any film for a rainy evening?", "You should try 'Spirited Away', a gentle Miyazaki film.")]


def test_an_import_gives_the_rounds_to_the_caller_only(service, llm, clock, commands, uow_factory):
    llm.queue_reply(turn("Berlin is lovely in spring."))
    say(service, "I moved to Berlin", clock=clock)
    llm.queue_reply(turn("Hi Bob."))
    say(service, "hi", user="u2", name="Bob", clock=clock)
    exported = commands.export_data(ALICE).data
    commands.import_data(BOB, exported)
    alice, bob = user_of(uow_factory, ALICE), user_of(uow_factory, BOB)
    assert ("user", "I moved to Berlin") in turns_of(uow_factory, bob)
    assert turns_of(uow_factory, alice) == [("user", "I moved to Berlin"), ("assistant", "Berlin is lovely in spring.")]
    assert ("I moved to Berlin", "Berlin is lovely in spring.") in recalled_lines(
        uow_factory, bob, "Where did I move? Berlin", clock.now + timedelta(days=1))
    assert recalled_lines(uow_factory, alice, "Where did I move? Berlin", clock.now + timedelta(days=1)) == [
        ("I moved to Berlin", "Berlin is lovely in spring.")]


def test_a_version_1_file_takes_each_bot_turn_for_the_reply_to_the_line_before_it(commands, uow_factory, clock):
    document = {"format": "mnemo-export", "version": 1, "turns": [
        {"id": 1, "role": "user", "text": "I adopted a greyhound", "created_at": "2026-01-02T10:00:00+00:00"},
        {"id": 2, "role": "assistant", "text": "Greyhounds are gentle.", "created_at": "2026-01-02T10:00:05+00:00"}]}
    commands.import_data(ALICE, json.dumps(document).encode())
    alice = user_of(uow_factory, ALICE)
    assert recalled_lines(uow_factory, alice, "what dog did I adopt? greyhound", clock.now) == [
        ("I adopted a greyhound", "Greyhounds are gentle.")]


def test_rounds_said_while_paused_are_deleted_when_the_sitting_closes_and_exported_as_paused_until_then(
        service, llm, clock, commands, uow_factory):
    llm.queue_reply(turn("Hello!"))
    say(service, "hello", clock=clock)
    commands.pause(ALICE)
    llm.queue_reply(turn("Noted."))
    say(service, "My locker code is tangerine", clock=clock)
    paused = [t for t in json.loads(commands.export_data(ALICE).data)["turns"] if t["role"] == "user"]
    assert [(t["text"], t["paused"]) for t in paused] == [("hello", False), ("My locker code is tangerine", True)]
    commands.resume(ALICE)
    closed = close_idle_sessions(uow_factory, clock.now + CONFIG.idle + timedelta(minutes=1), CONFIG.idle)
    assert len(closed) == 1
    assert turns_of(uow_factory, user_of(uow_factory, ALICE)) == [("user", "hello"), ("assistant", "Hello!")]
    assert summarise_session(uow_factory, None, closed[0], clock.now + CONFIG.idle * 2) is not None


def test_a_paused_round_imported_stays_out_of_recall(commands, uow_factory, clock):
    document = {"format": "mnemo-export", "version": 2, "turns": [
        {"id": 1, "role": "user", "text": "my pin is 8841 walnut", "created_at": "2026-01-02T10:00:00+00:00",
         "paused": True},
        {"id": 2, "role": "assistant", "text": "Noted walnut.", "created_at": "2026-01-02T10:00:05+00:00",
         "reply_to": 1}]}
    commands.import_data(ALICE, json.dumps(document).encode())
    alice = user_of(uow_factory, ALICE)
    assert recalled_lines(uow_factory, alice, "walnut", clock.now) == []
    exported = json.loads(commands.export_data(ALICE).data)["turns"]
    assert [t.get("paused") for t in exported] == [True, None]
