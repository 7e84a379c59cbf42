"""Closing idle sessions and summarising them into episodes, on real PostgreSQL with a fake OpenAI server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from shared.db.memory_models import Episode
from shared.db.models import ConversationSession, ConversationTurn
from shared.lifecycle.episodes import close_idle_sessions, parse_summary, summarise_session

START = datetime(2026, 1, 3, 10, 0, tzinfo=UTC)  # 18:00 in Shanghai
NOW = START + timedelta(hours=2)
SUMMARY = {"summary": "talked about the interview and games", "entities": ["interview", "Zelda"], "importance": 1.5,
           "scratchpad": {"current_focus": "the job interview", "open_threads": ["waiting for the offer"],
                          "next_steps": ["send a thank-you note"]},
           "core_summary": "Ana, a nurse who loves games"}


def session_with(uow_factory, messages, *, user="u1", chat="c1", timezone="Asia/Shanghai", closed=True,
                 topic=None, at=START) -> tuple[int, int]:
    """A session whose messages alternate user and bot, a minute apart; returns (user id, session id)."""
    with uow_factory() as uow:
        user_id = uow.users.identify("telegram", user, timezone=timezone).user_id
        chat_id = uow.chats.get_or_create("telegram", chat, "private").id
        session = uow.sessions.start(user_id, chat_id, at)
        session.current_topic = topic
        for minute, text in enumerate(messages):
            uow.turns.add(ConversationTurn(user_id=user_id, chat_id=chat_id, session_id=session.id, text=text,
                                           role="user" if minute % 2 == 0 else "assistant",
                                           created_at=at + timedelta(minutes=minute)))
        if closed:
            uow.sessions.close(session.id, at + timedelta(minutes=len(messages) + 30))
        uow.commit()
        return user_id, session.id


def episodes_of(uow_factory, user_id: int) -> list[Episode]:
    with uow_factory() as uow:
        return list(uow.session.scalars(select(Episode).where(Episode.user_id == user_id).order_by(Episode.id)))


def turns_of(uow_factory, session_id: int) -> list[ConversationTurn]:
    with uow_factory() as uow:
        query = select(ConversationTurn).where(ConversationTurn.session_id == session_id).order_by(ConversationTurn.id)
        return list(uow.session.scalars(query))


def test_close_idle_sessions_closes_only_sessions_idle_longer_than_the_timeout(uow_factory):
    _, idle = session_with(uow_factory, ["hi"], closed=False)
    _, active = session_with(uow_factory, ["hi"], user="u2", chat="c2", closed=False, at=START + timedelta(minutes=25))
    _, done = session_with(uow_factory, ["hi"], user="u3", chat="c3")
    now = START + timedelta(minutes=40)
    assert close_idle_sessions(uow_factory, now, timedelta(minutes=30)) == [idle]
    assert close_idle_sessions(uow_factory, now, timedelta(minutes=30)) == []
    with uow_factory() as uow:
        closed = {s.id: s.closed_at for s in uow.session.scalars(select(ConversationSession))}
    assert closed[idle] == now
    assert closed[active] is None
    assert closed[done] != now


def test_a_closed_session_becomes_one_episode_linked_to_its_turns_stamped_in_the_users_time_zone(
        uow_factory, llm, model):
    user_id, session_id = session_with(uow_factory, ["I have an interview tomorrow", "Good luck!",
                                                     "Then I'll play Zelda to relax", "Sounds perfect."])
    llm.queue_reply(SUMMARY)
    episode = summarise_session(uow_factory, model, session_id, NOW, default_timezone="UTC")
    assert episode.summary == "[2026-01-03 18:00] talked about the interview and games"
    assert (episode.entities, episode.importance) == (["interview", "Zelda"], 1.5)
    assert (episode.started_at, episode.ended_at) == (START, START + timedelta(minutes=3))
    assert [turn.episode_id for turn in turns_of(uow_factory, session_id)] == [episode.id] * 4
    assert [e.id for e in episodes_of(uow_factory, user_id)] == [episode.id]
    [request] = llm.chat_requests()
    transcript = request["messages"][-1]["content"]
    assert "[01-03 18:00] USER: I have an interview tomorrow" in transcript
    assert "[01-03 18:01] BOT: Good luck!" in transcript
    assert "JSON" in request["messages"][0]["content"]


def test_the_profile_scratchpad_and_core_summary_are_refreshed_from_the_summary(uow_factory, llm, model):
    user_id, session_id = session_with(uow_factory, ["the interview is tomorrow", "You'll do great."])
    with uow_factory() as uow:
        uow.profiles.save(user_id, "Ana, a nurse", {"current_focus": "moving house", "mood": "calm"}, START)
        uow.commit()
    llm.queue_reply(SUMMARY)
    summarise_session(uow_factory, model, session_id, NOW)
    with uow_factory() as uow:
        profile = uow.profiles.get(user_id)
    assert profile.core_summary == "Ana, a nurse who loves games"
    assert profile.updated_at == NOW
    assert profile.scratchpad == {"current_focus": "the job interview", "open_threads": ["waiting for the offer"],
                                  "next_steps": ["send a thank-you note"], "mood": "calm"}
    assert "Ana, a nurse" in llm.chat_requests()[0]["messages"][-1]["content"]


def test_a_summary_without_a_core_update_keeps_the_core_summary(uow_factory, llm, model):
    user_id, session_id = session_with(uow_factory, ["nice weather", "Indeed."])
    with uow_factory() as uow:
        uow.profiles.save(user_id, "Ana, a nurse", {}, START)
        uow.commit()
    llm.queue_reply({**SUMMARY, "core_summary": None})
    summarise_session(uow_factory, model, session_id, NOW)
    with uow_factory() as uow:
        assert uow.profiles.get(user_id).core_summary == "Ana, a nurse"


def test_summarising_twice_creates_one_episode(uow_factory, llm, model):
    user_id, session_id = session_with(uow_factory, ["I have an interview", "Good luck!"])
    llm.set_responder(lambda _request: SUMMARY)
    first = summarise_session(uow_factory, model, session_id, NOW)
    assert summarise_session(uow_factory, model, session_id, NOW) is None
    assert [e.id for e in episodes_of(uow_factory, user_id)] == [first.id]
    assert len(llm.chat_requests()) == 1


def test_a_run_that_loses_the_race_during_the_llm_call_adds_no_second_episode(uow_factory, llm, model):
    user_id, session_id = session_with(uow_factory, ["I have an interview", "Good luck!"])

    def slow_summary(_request):  # another worker summarises the same session while this one waits on the LLM
        summarise_session(uow_factory, None, session_id, NOW)
        return SUMMARY

    llm.set_responder(slow_summary)
    assert summarise_session(uow_factory, model, session_id, NOW) is None
    [episode] = episodes_of(uow_factory, user_id)
    assert episode.summary.startswith("[2026-01-03 18:00] talked about interview")


def test_a_long_open_session_is_summarised_in_parts_of_30_messages(uow_factory, llm, model):
    messages = [f"message number {n}" for n in range(65)]
    user_id, session_id = session_with(uow_factory, messages, closed=False)
    llm.set_responder(lambda _request: SUMMARY)
    first = summarise_session(uow_factory, model, session_id, NOW, part=1)
    second = summarise_session(uow_factory, model, session_id, NOW, part=2)
    assert summarise_session(uow_factory, model, session_id, NOW, part=3) is None  # only 5 left so far
    assert first.started_at == START
    assert first.ended_at == START + timedelta(minutes=29)
    assert second.summary.startswith("[2026-01-03 18:30] ")
    assert summarise_session(uow_factory, model, session_id, NOW, part=2) is None  # a repeated job
    with uow_factory() as uow:
        uow.sessions.close(session_id, NOW)
        uow.commit()
    rest = summarise_session(uow_factory, model, session_id, NOW)
    linked = [turn.episode_id for turn in turns_of(uow_factory, session_id)]
    assert linked == [first.id] * 30 + [second.id] * 30 + [rest.id] * 5
    assert len(episodes_of(uow_factory, user_id)) == 3
    assert len(llm.chat_requests()) == 3


def test_offline_the_summary_is_a_chinese_template_of_the_sessions_keywords(uow_factory):
    user_id, session_id = session_with(uow_factory, ["明天有面试，有点紧张", "别担心，你准备得很好。",
                                                     "面试完想打游戏放松一下", "好主意！", "面试在下午三点"],
                                       topic="面试")
    episode = summarise_session(uow_factory, None, session_id, NOW)
    assert episode.summary.startswith("[2026-01-03 18:00] 聊了面试、")
    assert "打游戏" in episode.entities
    assert episode.entities[0] == "面试"
    assert len(episode.entities) <= 10
    with uow_factory() as uow:
        assert uow.profiles.get(user_id).scratchpad == {"current_focus": "面试"}


def test_an_unavailable_model_gives_an_english_template_in_the_default_time_zone(uow_factory, llm, model):
    _, session_id = session_with(uow_factory, ["I baked bread today", "Smells great!", "The bread came out well"],
                                 timezone=None)
    llm.queue_error(401)
    episode = summarise_session(uow_factory, model, session_id, NOW, default_timezone="Europe/Berlin")
    assert episode.summary == "[2026-01-03 11:00] talked about bread, baked and today"


def test_a_session_without_unlinked_turns_gives_no_episode(uow_factory, llm, model):
    user_id, session_id = session_with(uow_factory, [])
    assert summarise_session(uow_factory, model, session_id, NOW) is None
    assert summarise_session(uow_factory, model, 987654, NOW) is None
    assert episodes_of(uow_factory, user_id) == []
    assert llm.chat_requests() == []


def test_parse_summary_strips_a_date_clamps_importance_and_caps_entities():
    draft = parse_summary({"summary": "[2026-01-03 18:00] talked about tea", "importance": 42,
                           "entities": [f"e{n}" for n in range(15)] + ["e1", 7],
                           "scratchpad": {"current_focus": "", "open_threads": "not a list"}})
    assert draft.summary == "talked about tea"
    assert draft.importance == 3.0
    assert draft.entities == tuple(f"e{n}" for n in range(10))
    assert draft.scratchpad == {}
    assert parse_summary({"summary": "  "}) is None
    assert parse_summary(None) is None
    assert parse_summary({"summary": "ok", "importance": "high"}).importance == 1.0


def test_a_summary_or_profile_the_model_wrote_as_json_is_never_kept():
    from shared.lifecycle.episodes import parse_summary
    assert parse_summary({"summary": '{"summary": "talked"}'}) is None
    assert parse_summary({"summary": "```json"}) is None
    draft = parse_summary({"summary": "talked about tea", "core_summary": '{"core_summary": 1}',
                           "scratchpad": {"current_focus": "{\"x\": 1}", "next_steps": ["ask about tea", "[1]"]}})
    assert draft is not None
    assert draft.core_summary is None
    assert draft.scratchpad == {"next_steps": ["ask about tea"]}
