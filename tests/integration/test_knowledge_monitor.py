"""The knowledge monitor on real PostgreSQL, with the real ChatModel talking to a fake OpenAI server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from shared.db.memory_models import Memory, MemoryEvent
from shared.db.models import ConversationTurn
from shared.lifecycle.extraction import BOOST_STEP, extract_turns
from shared.memory.writes import StatedMemory, store_stated_memories
from shared.recall.retrieval import recall_for_turn
from tests.builders import memory as memory_row

START = datetime(2026, 1, 3, 10, 0, tzinfo=UTC)
NOW = START + timedelta(hours=1)


def conversation(uow_factory, exchanges, *, user="u1", chat="c1") -> tuple[int, list[int]]:
    """Record (user text, bot reply) pairs in one session; returns the user id and the user turn ids."""
    with uow_factory() as uow:
        user_id = uow.users.identify("telegram", user).user_id
        chat_id = uow.chats.get_or_create("telegram", chat, "private").id
        session_id = uow.sessions.start(user_id, chat_id, START).id
        turn_ids = []
        for minute, (said, reply) in enumerate(exchanges):
            at = START + timedelta(minutes=minute)
            turn_ids.append(uow.turns.add(ConversationTurn(user_id=user_id, chat_id=chat_id, session_id=session_id,
                                                           role="user", text=said, created_at=at)).id)
            if reply:
                uow.turns.add(ConversationTurn(user_id=user_id, chat_id=chat_id, session_id=session_id,
                                               role="assistant", text=reply, created_at=at + timedelta(seconds=5)))
        uow.commit()
    return user_id, turn_ids


def remember(uow_factory, user_id: int, content: str, *, predicate: str = "lives_in", type_: str = "fact") -> int:
    with uow_factory() as uow:
        row = uow.memories.add(memory_row(user_id, content, type_=type_, subject="user", predicate=predicate,
                                          confidence=0.9, created_at=START - timedelta(days=10),
                                          updated_at=START - timedelta(days=10)))
        uow.commit()
        return row.id


def memories_of(uow_factory, user_id: int) -> list[Memory]:
    with uow_factory() as uow:
        return list(uow.session.scalars(select(Memory).where(Memory.user_id == user_id).order_by(Memory.id)))


def events_of(uow_factory, memory_id: int | None = None) -> list[MemoryEvent]:
    with uow_factory() as uow:
        query = select(MemoryEvent).order_by(MemoryEvent.id)
        if memory_id is not None:
            query = query.where(MemoryEvent.memory_id == memory_id)
        return list(uow.session.scalars(query))


def extracted(uow_factory, turn_ids: list[int]) -> list[bool]:
    with uow_factory() as uow:
        return [uow.session.get(ConversationTurn, turn_id).extracted for turn_id in turn_ids]


def operations(*ops: dict) -> dict:
    return {"operations": list(ops)}


def add(content: str, *, predicate: str, type_: str = "fact") -> dict:
    return {"op": "ADD", "type": type_, "subject": "user", "predicate": predicate, "content": content, "tier": "long"}


def test_a_plain_statement_is_added_as_an_audited_llm_memory_and_the_turn_is_marked_extracted(uow_factory, llm, model):
    user_id, [turn_id] = conversation(uow_factory, [("I really love green tea", "Green tea is great!")])
    llm.queue_reply(operations(add("The user loves green tea", predicate="likes_drink", type_="preference")))
    report = extract_turns(uow_factory, model, [turn_id], [], NOW)
    [memory] = memories_of(uow_factory, user_id)
    assert (memory.type, memory.predicate, memory.content) == ("preference", "likes_drink", "The user loves green tea")
    assert memory.source_turn_id == turn_id
    assert memory.source == "user_stated"
    [event] = events_of(uow_factory, memory.id)
    assert (event.action, event.actor, event.before, event.after["content"]) == (
        "add", "llm", None, "The user loves green tea")
    assert report.added == [memory.id]
    assert report.extracted_turn_ids == [turn_id]
    assert report.llm_calls == 1
    assert extracted(uow_factory, [turn_id]) == [True]


def test_a_correction_supersedes_the_recalled_memory_and_keeps_the_old_row(uow_factory, llm, model):
    user_id, [turn_id] = conversation(uow_factory, [("不对，我现在住在上海", "好的，记住了，上海！")])
    old_id = remember(uow_factory, user_id, "用户住在北京")
    llm.queue_reply(operations({"op": "UPDATE", "id": "m1", "content": "用户现在住在上海"}))
    report = extract_turns(uow_factory, model, [turn_id], [old_id], NOW)
    old, new = memories_of(uow_factory, user_id)
    assert (old.id, old.content, old.superseded_by) == (old_id, "用户住在北京", new.id)
    assert (new.type, new.predicate, new.content, new.superseded_by) == ("fact", "lives_in", "用户现在住在上海", None)
    supersede = [e for e in events_of(uow_factory, old_id) if e.action == "supersede"]
    assert len(supersede) == 1
    assert supersede[0].actor == "llm"
    assert supersede[0].before["superseded_by"] is None
    assert supersede[0].after["superseded_by"] == new.id
    assert report.superseded == [old_id]
    assert report.added == [new.id]


def test_an_update_to_a_question_changes_nothing_and_the_turn_is_done(uow_factory, llm, model):
    user_id, [turn_id] = conversation(uow_factory, [("我住在哪里？", "你住在北京。")])
    old_id = remember(uow_factory, user_id, "用户住在北京")
    llm.queue_reply(operations({"op": "UPDATE", "id": "m1", "content": "我住在哪里"}))
    report = extract_turns(uow_factory, model, [turn_id], [old_id], NOW)
    [kept] = memories_of(uow_factory, user_id)
    assert (kept.id, kept.content, kept.superseded_by) == (old_id, "用户住在北京", None)
    assert report.ignored == 1
    assert report.extracted_turn_ids == [turn_id]
    assert extracted(uow_factory, [turn_id]) == [True]


def test_a_change_over_time_is_added_and_the_earlier_state_stays(uow_factory, llm, model):
    user_id, [turn_id] = conversation(uow_factory, [("I'm relaxed now, the interview went fine", "So glad!")])
    nervous = remember(uow_factory, user_id, "The user was nervous about the interview", type_="event",
                       predicate="interview_feeling")
    llm.queue_reply(operations(add("The user feels relaxed now that the interview went fine", predicate="mood_now")))
    extract_turns(uow_factory, model, [turn_id], [nervous], NOW)
    contents = [(m.content, m.superseded_by, m.deleted_at) for m in memories_of(uow_factory, user_id)]
    assert contents == [("The user was nervous about the interview", None, None),
                        ("The user feels relaxed now that the interview went fine", None, None)]
    assert "change over time is not a contradiction" in llm.chat_requests()[0]["messages"][0]["content"]


def test_boost_raises_importance_by_0_3_and_is_audited(uow_factory, llm, model):
    user_id, [turn_id] = conversation(uow_factory, [("I'm home, long day", "Give Mochi a cuddle, that always helps!")])
    cat = remember(uow_factory, user_id, "The user has a cat named Mochi", predicate="pet_name")
    llm.queue_reply(operations({"op": "BOOST", "id": "m1", "reason": "the reply used the cat's name"}))
    report = extract_turns(uow_factory, model, [turn_id], [cat], NOW)
    [memory] = memories_of(uow_factory, user_id)
    assert memory.importance == pytest.approx(1.0 + BOOST_STEP)
    [event] = events_of(uow_factory, cat)
    assert (event.action, event.actor, event.reason) == ("boost", "llm", "the reply used the cat's name")
    assert event.before["importance"] == pytest.approx(1.0)
    assert event.after["importance"] == pytest.approx(1.3)
    assert report.boosted == [cat]


def test_a_delete_forgets_the_memory_for_real_with_the_round_it_came_from_leaving_only_a_tombstone(
        uow_factory, llm, model):
    user_id, [said, turn_id] = conversation(uow_factory, [
        ("I have a dog", "A dog, lovely!"), ("I never had a dog, forget that", "Sorry, I mixed that up.")])
    dog = remember(uow_factory, user_id, "The user has a dog", predicate="pet")
    with uow_factory() as uow:
        uow.session.get(Memory, dog).source_turn_id = said
        uow.commit()
    llm.queue_reply(operations({"op": "DELETE", "id": "m1", "reason": "the user asks to forget it"}))
    report = extract_turns(uow_factory, model, [turn_id], [dog], NOW)
    assert memories_of(uow_factory, user_id) == []
    assert report.deleted == [dog]
    assert [(e.action, e.actor, e.before, e.after) for e in events_of(uow_factory, dog)] == [
        ("forget", "user", None, None)]
    with uow_factory() as uow:
        left = [turn.text for turn in uow.session.scalars(
            select(ConversationTurn).where(ConversationTurn.user_id == user_id))]
    assert "I have a dog" not in left
    assert "A dog, lovely!" not in left


def test_an_invented_short_id_is_ignored(uow_factory, llm, model):
    user_id, [turn_id] = conversation(uow_factory, [("I moved to Berlin", "Berlin, nice!")])
    paris = remember(uow_factory, user_id, "The user lives in Paris")
    llm.queue_reply(operations({"op": "DELETE", "id": "m5"}, {"op": "BOOST", "id": "m9"},
                               {"op": "UPDATE", "id": "m3", "content": "The user lives in Berlin"},
                               {"op": "DELETE", "id": str(paris)}))
    report = extract_turns(uow_factory, model, [turn_id], [paris], NOW)
    [memory] = memories_of(uow_factory, user_id)
    assert (memory.importance, memory.superseded_by, memory.deleted_at) == (1.0, None, None)
    assert events_of(uow_factory) == []
    assert report.ignored == 4
    assert extracted(uow_factory, [turn_id]) == [True]


def test_the_bots_own_words_are_not_stored_as_the_users_fact(uow_factory, llm, model):
    user_id, [turn_id] = conversation(uow_factory, [("hello there", "Hi! I live in Lisbon by the sea, you know.")])
    llm.queue_reply(operations(add("The user lives in Lisbon by the sea", predicate="lives_in")))
    report = extract_turns(uow_factory, model, [turn_id], [], NOW)
    assert memories_of(uow_factory, user_id) == []
    assert report.ignored == 1
    sent = llm.chat_requests()[0]["messages"]
    assert "[1] USER (2026-01-03 10:00 UTC): hello there" in sent[-1]["content"]
    assert "[1] BOT (its own words, not the user's): Hi! I live in Lisbon" in sent[-1]["content"]
    assert "quotes or forwards" in sent[0]["content"]


def test_another_users_memory_is_never_shown_or_touched(uow_factory, llm, model):
    user_id, [turn_id] = conversation(uow_factory, [("forget where I live", "Okay.")])
    other_id, _ = conversation(uow_factory, [("I live in Oslo", "Oslo!")], user="u2", chat="c2")
    theirs = remember(uow_factory, other_id, "The user lives in Oslo")
    llm.queue_reply(operations({"op": "DELETE", "id": "m1"}, {"op": "BOOST", "id": "m1"},
                               {"op": "UPDATE", "id": "m1", "content": "I live nowhere"}))
    extract_turns(uow_factory, model, [turn_id], [theirs], NOW)
    [memory] = memories_of(uow_factory, other_id)
    assert (memory.importance, memory.deleted_at, memory.superseded_by) == (1.0, None, None)
    assert events_of(uow_factory, theirs) == []
    assert memories_of(uow_factory, user_id) == []
    prompt = llm.chat_requests()[0]["messages"][-1]["content"]
    assert "Oslo" not in prompt
    assert "<memories>\n(none)\n</memories>" in prompt


def test_running_the_same_extraction_twice_changes_nothing(uow_factory, llm, model):
    user_id, [turn_id] = conversation(uow_factory, [("I work as a nurse", "That's demanding work!")])
    llm.set_responder(lambda _request: operations(add("The user works as a nurse", predicate="job")))
    extract_turns(uow_factory, model, [turn_id], [], NOW)
    before = ([(m.id, m.content, m.updated_at) for m in memories_of(uow_factory, user_id)],
              len(events_of(uow_factory)))
    second = extract_turns(uow_factory, model, [turn_id], [], NOW + timedelta(minutes=5))
    after = ([(m.id, m.content, m.updated_at) for m in memories_of(uow_factory, user_id)], len(events_of(uow_factory)))
    assert after == before
    assert len(llm.chat_requests()) == 1
    assert second.extracted_turn_ids == []
    assert second.llm_calls == 0


def test_several_waiting_turns_of_one_session_go_in_one_request(uow_factory, llm, model):
    user_id, turn_ids = conversation(uow_factory, [("My sister Lena is visiting", "How fun!"),
                                                   ("I just adopted a kitten", "Congratulations!"),
                                                   ("what's the weather like?", "Sunny.")])
    llm.queue_reply(operations(add("The user's sister is called Lena", predicate="sister_name", type_="person"),
                               add("The user adopted a kitten", predicate="pet")))
    report = extract_turns(uow_factory, model, turn_ids, [], NOW)
    assert len(llm.chat_requests()) == 1
    assert report.llm_calls == 1
    prompt = llm.chat_requests()[0]["messages"][-1]["content"]
    assert all(f"[{n}] USER" in prompt for n in (1, 2, 3))
    sources = {m.content: m.source_turn_id for m in memories_of(uow_factory, user_id)}
    assert sources == {"The user's sister is called Lena": turn_ids[0], "The user adopted a kitten": turn_ids[1]}
    assert extracted(uow_factory, turn_ids) == [True, True, True]


def test_turns_of_two_users_are_split_into_one_request_each(uow_factory, llm, model):
    first, [a] = conversation(uow_factory, [("I play the cello", "Lovely!")])
    second, [b] = conversation(uow_factory, [("I play the drums", "Loud!")], user="u2", chat="c2")
    llm.set_responder(lambda request: operations(
        add("The user plays the cello", predicate="instrument") if "cello" in request["messages"][-1]["content"]
        else add("The user plays the drums", predicate="instrument")))
    extract_turns(uow_factory, model, [a, b], [], NOW)
    assert len(llm.chat_requests()) == 2
    assert [m.content for m in memories_of(uow_factory, first)] == ["The user plays the cello"]
    assert [m.content for m in memories_of(uow_factory, second)] == ["The user plays the drums"]


def test_without_a_model_rules_refresh_what_the_hot_path_stored_instead_of_duplicating_it(uow_factory, llm):
    user_id, [turn_id] = conversation(uow_factory, [("我住在上海", "上海很好！")])
    with uow_factory() as uow:  # what the hot path stored from the same message
        store_stated_memories(uow, user_id, [StatedMemory("fact", "user", "lives_in", "我住在上海")], now=START,
                              source_turn_id=turn_id, session_id=None)
        uow.commit()
    report = extract_turns(uow_factory, None, [turn_id], [], NOW)
    [memory] = memories_of(uow_factory, user_id)
    assert (memory.predicate, memory.content, memory.updated_at) == ("lives_in", "我住在上海", NOW)
    assert [(e.action, e.actor) for e in events_of(uow_factory, memory.id)] == [("add", "llm"), ("update", "rule")]
    assert report.offline_batches == 1
    assert report.refreshed == [memory.id]
    assert llm.chat_requests() == []


def test_an_unavailable_model_falls_back_to_rule_extraction(uow_factory, llm, model):
    user_id, [turn_id] = conversation(uow_factory, [("My name is Ana. I like jazz", "Hi Ana!")])
    llm.queue_error(401)
    report = extract_turns(uow_factory, model, [turn_id], [], NOW)
    memories = memories_of(uow_factory, user_id)
    assert {m.predicate for m in memories} == {"name", "likes_jazz"}
    assert {e.actor for e in events_of(uow_factory)} == {"rule"}
    assert report.offline_batches == 1
    assert extracted(uow_factory, [turn_id]) == [True]


def test_nothing_is_stored_while_remembering_is_paused(uow_factory, llm, model):
    user_id, [turn_id] = conversation(uow_factory, [("I live in Rome", "Rome!")])
    with uow_factory() as uow:
        uow.users.set_paused(user_id, START)
        uow.commit()
    extract_turns(uow_factory, model, [turn_id], [], NOW)
    assert memories_of(uow_factory, user_id) == []
    assert llm.chat_requests() == []
    assert extracted(uow_factory, [turn_id]) == [True]


def test_what_a_memory_is_about_goes_into_its_search_tokens_so_a_question_in_other_words_finds_it(
        uow_factory, llm, model):
    user_id, [english, chinese, cat] = conversation(uow_factory, [
        ("We got a puppy last week and named him Biscuit", "What a cute name!"),
        ("我们还养了一只小狗，叫饼干二号", "好可爱！"), ("And the kitten is Whiskers", "Aww!")])
    llm.queue_reply(operations(
        {**add("Biscuit", predicate="pet_name"), "about": ["dog", "Biscuit", 7, ""], "when": "2025-12-28"},
        {**add("饼干二号", predicate="second_pet_name"), "about": ["狗", "饼干二号"], "when": "2099-01"},
        add("Whiskers", predicate="pet_name_2")))
    extract_turns(uow_factory, model, [english, chinese, cat], [], NOW)
    biscuit, second, whiskers = memories_of(uow_factory, user_id)
    assert (biscuit.entities, biscuit.happened_at) == (["dog", "Biscuit"], datetime(2025, 12, 28, tzinfo=UTC))
    assert "dog" in biscuit.search_tokens.split()
    assert "2025" in biscuit.search_tokens.split()
    assert (second.entities, second.happened_at) == (["狗", "饼干二号"], None)  # a time to come is no memory's
    with uow_factory() as uow:
        dog = recall_for_turn(uow, user_id, "what's my dog called?", now=NOW, limit=5)
        dog_zh = recall_for_turn(uow, user_id, "我的狗的名字", now=NOW, limit=5)
        kitten = recall_for_turn(uow, user_id, "what's my cat called?", now=NOW, limit=5)
    assert dog.memories[0].memory.id == biscuit.id
    assert dog_zh.memories[0].memory.id == second.id
    assert whiskers.id not in [item.memory.id for item in kitten.memories]  # nothing said it is about a cat


def test_the_importance_and_source_the_monitor_gives_land_in_the_row_and_the_rules_give_one_by_kind(
        uow_factory, llm, model):
    user_id, [turn_id] = conversation(uow_factory, [
        ("My sister Anna is diabetic, and I liked the song they played", "I'll keep that in mind.")])
    llm.queue_reply(operations(
        {"op": "ADD", "type": "person", "subject": "Anna", "predicate": "health", "tier": "long",
         "content": "The user's sister Anna is diabetic", "importance": "defining", "source": "user_stated"},
        {"op": "ADD", "type": "preference", "subject": "user", "predicate": "likes_song", "tier": "long",
         "content": "The user liked the song they played", "importance": "passing"},
        {"op": "ADD", "type": "pattern", "subject": "user", "predicate": "worries_often", "tier": "long",
         "content": "The user worries about their sister", "source": "inferred"}))
    extract_turns(uow_factory, model, [turn_id], [], NOW)
    rows = {m.predicate: (m.importance, m.base_importance, m.source) for m in memories_of(uow_factory, user_id)}
    assert rows == {"health": (3.0, 3.0, "user_stated"), "likes_song": (0.6, 0.6, "user_stated"),
                    "worries_often": (1.0, 1.0, "inferred")}


def test_without_a_model_the_rules_store_a_sister_high_and_a_passing_like_low(uow_factory):
    user_id, [turn_id] = conversation(uow_factory, [("My sister is called Anna. I like jazz.", None)])
    extract_turns(uow_factory, None, [turn_id], [], NOW)
    rows = {m.predicate: (m.base_importance, m.source) for m in memories_of(uow_factory, user_id)}
    assert rows == {"sister_name": (3.0, "user_stated"), "likes_jazz": (0.6, "user_stated")}
