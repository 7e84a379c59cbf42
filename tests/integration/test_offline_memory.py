"""Offline mode on real PostgreSQL: tell, come back in a new session, ask — the answer is in the second person,
the question is not stored, a correction supersedes, a stranger is told nothing; and no provider's question
ever changes a memory (the guard sits in the write path)."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from bench.fakes.openai_server import FakeOpenAI
from shared.conversation.config import ConversationConfig
from shared.conversation.messages import IncomingMessage
from shared.conversation.service import ConversationService
from shared.db.memory_models import Memory
from shared.lifecycle.extraction import extract_turns
from shared.llm.client import ChatModel
from shared.memory.writes import StatedMemory, store_stated_memories

START = datetime(2026, 11, 22, 2, 0, tzinfo=UTC)
CONFIG = ConversationConfig(bot_name="Mnemo", personality="a warm friend", emotion_enabled=True, retrieval_limit=5,
                            memory_budget_tokens=700, history_turns=15, idle=timedelta(minutes=30),
                            default_timezone="Asia/Shanghai")


class Visit:
    """One sitting: a fresh ConversationService (as after a restart), an hour after the previous one."""

    def __init__(self, uow_factory, number: int, chat_model: ChatModel | None = None) -> None:
        self.at = START + timedelta(hours=number)
        self.service = ConversationService(uow_factory, CONFIG, chat_model=chat_model, clock=lambda: self.at)
        self.count = 0

    def say(self, text: str, user: str = "xiaohong"):
        self.count += 1
        self.at += timedelta(seconds=30)
        message = IncomingMessage(platform="console", chat_id="console", user_id=user, text=text, sent_at=self.at,
                                  display_name=user, message_id=f"{self.at.timestamp()}-{self.count}")
        return asyncio.run(self.service.handle_message(message))


def active_contents(uow_factory) -> list[str]:
    with uow_factory() as uow:
        return list(uow.session.scalars(select(Memory.content).where(Memory.superseded_by.is_(None),
                                                                     Memory.deleted_at.is_(None)).order_by(Memory.id)))


def all_contents(uow_factory) -> list[str]:
    with uow_factory() as uow:
        return list(uow.session.scalars(select(Memory.content).order_by(Memory.id)))


@pytest.mark.parametrize("script", [
    {"tell": ["我叫小红。", "我最喜欢的水果是芒果", "我住在北京。"],
     "ask": [("你还记得我最喜欢什么水果吗？", "你最喜欢的水果是芒果。"), ("我叫什么名字？", "你叫小红。"),
             ("我住在哪里？", "你住在北京。")],
     "correct": ("不对，我现在住在上海", "我现在住在上海", "我住在北京", "上海", "北京"),
     "ask_again": ("我住哪？", "你现在住在上海。"), "stranger": ("我住在哪里？", "还不知道")},
    {"tell": ["My name is Ana.", "I have a dog named Biscuit, he's a beagle.", "I live in Paris."],
     "ask": [("Do you remember my dog's name?", "You have a dog named Biscuit, he's a beagle."),
             ("What is my name?", "Your name is Ana."),
             ("I live in which city, do you remember?", "You live in Paris.")],
     "correct": ("actually I moved to Berlin", "I moved to Berlin", "I live in Paris", "Berlin", "Paris"),
     "ask_again": ("where do I live?", "You moved to Berlin."), "stranger": ("where do I live?", "don't know")},
], ids=["chinese", "english"])
def test_told_then_asked_after_a_restart_the_fact_comes_back_in_the_second_person(uow_factory, script):
    first = Visit(uow_factory, 0)
    for text in script["tell"]:
        assert first.say(text).stored_memory_ids
    told = active_contents(uow_factory)

    second = Visit(uow_factory, 1)
    for question, answer in script["ask"]:
        reply = second.say(question)
        assert reply.text == answer
        assert reply.offline
        assert reply.stored_memory_ids == ()
    assert all_contents(uow_factory) == told  # no question was stored, nothing was superseded

    text, new, old, new_place, old_place = script["correct"]
    reply = second.say(text)
    assert new_place in reply.text  # says what it replaced
    assert old_place in reply.text
    assert new in active_contents(uow_factory)
    assert old not in active_contents(uow_factory)
    with uow_factory() as uow:
        [replaced] = uow.session.scalars(select(Memory).where(Memory.content == old)).all()
        assert replaced.superseded_by is not None

    third = Visit(uow_factory, 2)
    question, answer = script["ask_again"]
    assert third.say(question).text == answer

    question, unknown = script["stranger"]
    reply = third.say(question, user="stranger")
    assert unknown in reply.text
    assert new_place not in reply.text
    assert reply.memories_used == ()


def test_the_worker_rule_pass_stores_no_question_either(uow_factory):
    visit = Visit(uow_factory, 0)
    visit.say("我叫小红。")
    for question in ("我叫什么名字？", "I live in which city, do you remember?", "你还记得我最喜欢什么水果吗？"):
        visit.say(question)
    with uow_factory() as uow:
        from shared.db.models import ConversationTurn

        turn_ids = list(uow.session.scalars(select(ConversationTurn.id).where(ConversationTurn.role == "user")))
    report = extract_turns(uow_factory, None, turn_ids, [], visit.at)
    assert report.added == []
    assert all_contents(uow_factory) == ["我叫小红"]


def test_a_question_never_adds_or_supersedes_a_memory_whoever_proposes_it(uow_factory):
    visit = Visit(uow_factory, 0)
    visit.say("我叫小红。")
    with uow_factory() as uow:
        user_id = uow.users.identity("console", "xiaohong").user_id
        writes = store_stated_memories(uow, user_id, [StatedMemory("fact", "user", "name", "我叫什么名字")],
                                       now=visit.at, source_turn_id=None, session_id=None)
        writes += store_stated_memories(uow, user_id, [StatedMemory("fact", "user", "name", "用户叫小明")],
                                        now=visit.at, source_turn_id=None, session_id=None,
                                        source_text="我叫什么名字？")
        uow.commit()
    assert writes == []
    assert active_contents(uow_factory) == ["我叫小红"]


def test_a_refused_entry_is_logged_without_the_users_words_above_debug(uow_factory, caplog):
    with uow_factory() as uow:
        user_id = uow.users.identify("console", "lantern").user_id
        entry = StatedMemory("fact", "user", "pin", "what was my locker combination 4471?")
        with caplog.at_level(logging.INFO, logger="shared.memory.writes"):
            assert store_stated_memories(uow, user_id, [entry], now=START, source_turn_id=None, session_id=None) == []
    assert caplog.messages
    assert not any("4471" in message for message in caplog.messages)


def test_the_models_entries_with_nothing_visible_are_refused_and_direction_controls_dropped(uow_factory):
    entries = [StatedMemory("fact", "user", "nothing", "\u200b\u2060\u200d"),
               StatedMemory("fact", "\u202euser", "\u2066job\u2069", "works as a \u202erenkab\u202c baker")]
    with uow_factory() as uow:
        user_id = uow.users.identify("console", "quill").user_id
        writes = store_stated_memories(uow, user_id, entries, now=START, source_turn_id=None, session_id=None)
        assert [(w.memory.subject, w.memory.predicate, w.memory.content) for w in writes] == [
            ("user", "job", "works as a renkab baker")]


def test_the_llm_path_cannot_store_from_a_question_either(uow_factory):
    with FakeOpenAI(models=("fake-chat",)) as llm:
        model = ChatModel(base_url=llm.base_url, api_key="test", model="fake-chat", timeout_seconds=10)
        visit = Visit(uow_factory, 0, chat_model=model)
        llm.queue_reply({"emotion": {"primary": "neutral", "category": "neutral", "confidence": 0.9, "indicators": []},
                         "response": "你叫小红。", "topic": None, "todos": [], "context_variables": [],
                         "memory_update": {"should_store": True, "entries": [
                             {"type": "fact", "subject": "user", "predicate": "name", "content": "用户问自己叫什么名字",
                              "tier": "long"}]}})
        reply = visit.say("我叫什么名字？")
    assert reply.text == "你叫小红。"
    assert reply.stored_memory_ids == ()
    assert all_contents(uow_factory) == []


def test_a_question_that_names_its_key_ranks_that_memory_first(uow_factory):
    visit = Visit(uow_factory, 0)
    visit.say("我现在住在杭州了")
    visit.say("我最喜欢吃火锅")
    reply = Visit(uow_factory, 1).say("你还记得我住哪吗？")
    assert reply.text == "你现在住在杭州了。"
    assert reply.memories_used[0].content == "我现在住在杭州了"


def test_the_model_hint_is_shown_once_per_session(uow_factory):
    visit = Visit(uow_factory, 0)
    hinted = [("LLM_BASE_URL" in visit.say(text).text) for text in ("今天天气怎么样？", "帮我写一首诗", "讲个笑话吧？")]
    assert hinted == [True, False, False]
    assert "LLM_BASE_URL" in Visit(uow_factory, 2).say("What is the capital of France?").text
