"""One fact per memory: a correction replaces only what it corrects, and what was said with it stays
(offline rules and the model alike; English and Chinese)."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from bench.fakes.openai_server import FakeOpenAI
from shared.commands.service import Caller, MemoryCommands
from shared.db.memory_models import Memory
from shared.db.models import ConversationTurn
from shared.lifecycle.extraction import extract_turns
from shared.llm.client import ChatModel
from tests.conftest import audit_of
from tests.integration.test_offline_memory import Visit, active_contents


@pytest.mark.parametrize(("tell", "correct", "ask", "kept", "gone"), [
    ("I live in Portland, Oregon, with my wife Jenny and our two kids.", "No, I live in Seattle now.",
     "What's my wife's name?", "Jenny", "Portland"),
    ("我住在杭州，在一家银行工作。", "不对，我现在住在上海了", "我在哪里工作？", "银行", "杭州"),
])
def test_offline_a_correction_of_one_of_several_facts_said_together_keeps_the_others(
        uow_factory, tell, correct, ask, kept, gone):
    first = Visit(uow_factory, 0)
    first.say(tell)
    second = Visit(uow_factory, 1)
    second.say(correct)
    active = " | ".join(active_contents(uow_factory))
    assert kept in active, active
    assert gone not in active, active
    answer = Visit(uow_factory, 2).say(ask)
    assert kept in answer.text, answer.text


def turn_answer(response: str, *entries: dict) -> dict:
    return {"emotion": {"primary": "neutral", "category": "neutral", "confidence": 0.9, "indicators": []},
            "response": response, "topic": None, "todos": [], "context_variables": [],
            "memory_update": {"should_store": True, "entries": [
                {"subject": "user", "tier": "long", "importance": "lasting", **entry} for entry in entries]}}


@pytest.mark.parametrize(("tell", "entry", "correct", "correction", "kept", "gone"), [
    ("I live in Portland, Oregon, with my wife Jenny and our two kids.",
     {"type": "fact", "predicate": "lives_in",
      "content": "I live in Portland, Oregon, with my wife Jenny and our two kids"},
     "No, I live in Seattle now.", {"type": "fact", "predicate": "lives_in", "content": "I live in Seattle now"},
     "Jenny", "Portland"),
    ("我住在杭州，在一家银行工作。", {"type": "fact", "predicate": "lives_in", "content": "我住在杭州，在一家银行工作"},
     "不对，我现在住在上海了", {"type": "fact", "predicate": "lives_in", "content": "我现在住在上海"}, "银行", "杭州"),
])
def test_with_the_model_a_compound_memory_is_split_on_the_correction_that_touches_it_never_dropped(
        uow_factory, tell, entry, correct, correction, kept, gone):
    with FakeOpenAI(models=("fake-chat",)) as llm:
        model = ChatModel(base_url=llm.base_url, api_key="test", model="fake-chat", timeout_seconds=10)
        llm.queue_reply(turn_answer("Noted!", entry))  # a model that stored several facts as one memory
        Visit(uow_factory, 0, chat_model=model).say(tell)
        assert len(active_contents(uow_factory)) == 1
        llm.queue_reply(turn_answer("Got it.", correction))
        Visit(uow_factory, 1, chat_model=model).say(correct)
    active = " | ".join(active_contents(uow_factory))
    assert kept in active, active
    assert gone not in active, active
    with uow_factory() as uow:
        split = uow.session.scalars(select(Memory).where(Memory.content.contains(kept),
                                                         Memory.superseded_by.is_(None))).one()
        [event] = audit_of(uow, split.user_id, split.id)
    assert event.action == "add"
    assert "split from memory" in event.reason


def unextracted_turns(uow_factory) -> list[int]:
    with uow_factory() as uow:
        return list(uow.session.scalars(select(ConversationTurn.id).where(ConversationTurn.role == "user",
                                                                          ConversationTurn.extracted.is_(False))))


@pytest.mark.parametrize(("tell", "forget", "gone", "kept"), [
    ("I have a cat. I live in Berlin.", "forget that I have a cat", "cat", "Berlin"),
    ("我有一只猫。我住在北京。", "忘掉我说过的猫", "猫", "北京"),
])
def test_forget_said_in_words_removes_the_memory_and_its_export_entry(uow_factory, tell, forget, gone, kept):
    visit = Visit(uow_factory, 0)
    visit.say(tell)
    visit.say(forget)
    extract_turns(uow_factory, None, unextracted_turns(uow_factory), [], visit.at)  # the worker's rule pass
    exported = MemoryCommands(uow_factory, default_timezone="UTC").export_data(
        Caller("console", "xiaohong")).data.decode()
    memories = [m["content"] for m in json.loads(exported)["memories"]]
    assert not any(gone in content for content in memories)
    assert any(kept in content for content in memories)
    with uow_factory() as uow:
        assert not any(gone in line for line in uow.session.scalars(select(ConversationTurn.text)))


def test_forget_said_in_words_that_names_several_memories_deletes_none_without_confirmation(uow_factory):
    visit = Visit(uow_factory, 0)
    visit.say("I have a cat named Mochi.")
    visit.say("I have a cat allergy, sadly.")
    before = active_contents(uow_factory)
    assert len([content for content in before if "have a cat" in content]) == 2
    visit.say("forget that I have a cat")  # both hold it: like /forget, that needs a confirmation
    extract_turns(uow_factory, None, unextracted_turns(uow_factory), [], visit.at)
    assert active_contents(uow_factory) == before
