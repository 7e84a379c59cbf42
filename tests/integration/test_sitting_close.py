"""Closing a sitting (issue 30): the monitor's last read and the episode summary share one model call where they
can, and fall back to the two jobs where they cannot (real PostgreSQL, the real ChatModel against a fake OpenAI
server)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select

from bench.fakes.openai_server import FakeOpenAI
from bench.llm_calls import EPISODE_SUMMARY, EXTRACTION, SITTING, request_kind
from shared.db.memory_models import Episode, Memory
from shared.db.models import ConversationTurn
from shared.lifecycle.extraction import MAX_TURNS_PER_BATCH, extract_turns
from shared.lifecycle.sitting import close_sitting
from shared.llm.client import ChatModel
from tests.integration.test_knowledge_monitor import START, add, conversation, operations

LATER = START + timedelta(hours=2)
SUMMARY = {"summary": "talked about Lena's visit and the new kitten", "entities": ["Lena", "kitten"],
           "importance": 1.5, "scratchpad": {"current_focus": "the kitten"}, "core_summary": None}


@pytest.fixture
def llm():
    with FakeOpenAI(models=("fake-chat",)) as server:
        yield server


@pytest.fixture
def model(llm):
    return ChatModel(base_url=llm.base_url, api_key="test", model="fake-chat", timeout_seconds=10)


def session_of(uow_factory, turn_id: int) -> int:
    with uow_factory() as uow:
        return uow.session.get(ConversationTurn, turn_id).session_id


def memories_of(uow_factory, user_id: int) -> dict[str, int | None]:
    with uow_factory() as uow:
        rows = uow.session.scalars(select(Memory).where(Memory.user_id == user_id))
        return {m.predicate: m.source_turn_id for m in rows}


def episodes_of(uow_factory, user_id: int) -> list[tuple[str, float, list[int]]]:
    with uow_factory() as uow:
        found = []
        for episode in uow.session.scalars(select(Episode).where(Episode.user_id == user_id)):
            linked = uow.session.scalars(select(ConversationTurn.id).where(ConversationTurn.episode_id == episode.id))
            found.append((episode.summary, episode.importance, sorted(linked)))
        return found


def all_turns(uow_factory, user_id: int) -> list[int]:
    with uow_factory() as uow:
        return sorted(uow.session.scalars(select(ConversationTurn.id).where(ConversationTurn.user_id == user_id)))


def test_a_sitting_whose_turns_all_wait_is_read_and_summarised_in_one_call(uow_factory, llm, model):
    user_id, turn_ids = conversation(uow_factory, [("My sister Lena is visiting", "How fun!"),
                                                   ("I just adopted a kitten", "Congratulations!")])
    llm.queue_reply({**operations(add("The user's sister is called Lena", predicate="sister_name", type_="person"),
                                  add("The user adopted a kitten", predicate="pet")), "episode": SUMMARY})

    closed = close_sitting(uow_factory, model, session_of(uow_factory, turn_ids[0]), LATER)

    [request] = llm.chat_requests()
    assert request_kind(request) == SITTING
    shown = request["messages"][-1]["content"]
    assert "[1] USER" in shown and "[2] BOT (its own words, not the user's): Congratulations!" in shown
    assert closed.shared_call and closed.extraction.llm_calls == 1
    assert closed.extraction.extracted_turn_ids == turn_ids
    assert memories_of(uow_factory, user_id) == {"sister_name": turn_ids[0], "pet": turn_ids[1]}
    [(summary, importance, linked)] = episodes_of(uow_factory, user_id)
    assert summary.endswith("] talked about Lena's visit and the new kitten")
    assert importance == 1.5
    assert linked == all_turns(uow_factory, user_id)  # both sides of both rounds


def test_turns_read_before_are_shown_as_earlier_for_the_summary_and_draw_no_memory(uow_factory, llm, model):
    user_id, turn_ids = conversation(uow_factory, [("I work as a nurse in Leeds", "That sounds demanding."),
                                                   ("My shift starts at six tomorrow", "Sleep well then!")])
    llm.queue_reply(operations(add("The user works as a nurse", predicate="job")))
    extract_turns(uow_factory, model, [turn_ids[0]], [], START + timedelta(minutes=1))  # read mid-sitting
    llm.queue_reply({**operations(add("The user works as a nurse in Leeds", predicate="job_place"),
                                  add("The user's shift starts at six", predicate="shift")), "episode": SUMMARY})

    close_sitting(uow_factory, model, session_of(uow_factory, turn_ids[0]), LATER)

    shared = llm.chat_requests()[-1]["messages"][-1]["content"]
    assert "[earlier] USER (2026-01-03 10:00 UTC): I work as a nurse in Leeds" in shared
    assert "[earlier] BOT: That sounds demanding." in shared
    assert "[1] USER (2026-01-03 10:01 UTC): My shift starts at six tomorrow" in shared
    sources = memories_of(uow_factory, user_id)
    # an ADD the waiting turn does not say is the monitor's usual refusal ("nurse", "Leeds" are not its words)
    assert sources == {"job": turn_ids[0], "shift": turn_ids[1]}
    assert [linked for *_, linked in episodes_of(uow_factory, user_id)] == [all_turns(uow_factory, user_id)]


def test_an_answer_without_a_usable_episode_is_followed_by_the_summarisers_own_call(uow_factory, llm, model):
    user_id, turn_ids = conversation(uow_factory, [("I just adopted a kitten", "Congratulations!")])
    llm.queue_reply({**operations(add("The user adopted a kitten", predicate="pet")), "episode": {"summary": ""}})
    llm.queue_reply(SUMMARY)

    close_sitting(uow_factory, model, session_of(uow_factory, turn_ids[0]), LATER)

    assert [request_kind(r) for r in llm.chat_requests()] == [SITTING, EPISODE_SUMMARY]
    assert memories_of(uow_factory, user_id) == {"pet": turn_ids[0]}
    [(summary, _importance, _linked)] = episodes_of(uow_factory, user_id)
    assert "talked about Lena's visit" in summary


def test_a_model_that_fails_leaves_the_rules_and_the_offline_summary_after_one_try(uow_factory, llm, model):
    user_id, turn_ids = conversation(uow_factory, [("I live in Leeds", "Nice city!")])
    llm.queue_error(400)

    closed = close_sitting(uow_factory, model, session_of(uow_factory, turn_ids[0]), LATER)

    assert len(llm.chat_requests()) == 1
    assert closed.extraction.offline_batches == 1 and closed.extraction.extracted_turn_ids == turn_ids
    assert memories_of(uow_factory, user_id)  # the rules stored the statement
    [(summary, _importance, linked)] = episodes_of(uow_factory, user_id)
    assert "leeds" in summary.lower()  # the offline template of the sitting's keywords
    assert linked == all_turns(uow_factory, user_id)


def test_more_waiting_turns_than_one_read_close_with_the_two_jobs(uow_factory, llm, model):
    exchanges = [(f"I visited museum number {index} today", "Lovely!") for index in range(MAX_TURNS_PER_BATCH + 1)]
    user_id, turn_ids = conversation(uow_factory, exchanges)
    llm.set_responder(lambda request: SUMMARY if request_kind(request) == EPISODE_SUMMARY
                      else operations({"op": "SKIP"}))

    closed = close_sitting(uow_factory, model, session_of(uow_factory, turn_ids[0]), LATER)

    assert [request_kind(r) for r in llm.chat_requests()] == [EXTRACTION, EXTRACTION, EPISODE_SUMMARY]
    assert not closed.shared_call and sorted(closed.extraction.extracted_turn_ids) == turn_ids
    assert len(episodes_of(uow_factory, user_id)) == 1


def test_a_sitting_closed_twice_writes_one_episode_and_reads_its_turns_once(uow_factory, llm, model):
    user_id, turn_ids = conversation(uow_factory, [("I just adopted a kitten", "Congratulations!")])
    llm.set_responder(lambda request: {**operations(add("The user adopted a kitten", predicate="pet")),
                                       "episode": SUMMARY})
    session_id = session_of(uow_factory, turn_ids[0])

    close_sitting(uow_factory, model, session_id, LATER)
    again = close_sitting(uow_factory, model, session_id, LATER)

    assert len(llm.chat_requests()) == 1  # nothing waits and nothing is left to summarise: no second call
    assert again.extraction.extracted_turn_ids == []
    assert len(episodes_of(uow_factory, user_id)) == 1
