"""The hot path on real PostgreSQL with a fake OpenAI-compatible server: one LLM call per message."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import select

from bench.fakes.openai_server import FakeOpenAI
from shared.commands.memories import forget_memories
from shared.conversation.config import ConversationConfig
from shared.conversation.prompt import app_note
from shared.conversation.service import ConversationService
from shared.conversation.warning_texts import OFFLINE_WARNING, TurnWarning, WarningCode
from shared.db.memory_models import Memory, MemoryEvent, OutboxJob, Todo
from shared.db.models import ConversationSession, ConversationTurn
from shared.llm.client import ChatModel
from shared.metrics.record import MESSAGE_OUTCOMES
from shared.recall.embeddings import OpenAIEmbedder
from shared.reminders.scheduling import MAX_PENDING_REMINDERS
from shared.reminders.zone_texts import default_zone_text
from tests import builders
from tests.builders import PER_TURN, conversation, conversation_config, message, model_turn
from tests.integration import conftest as integration
from tests.told import told
from tests.waiting import wait_for

START = datetime(2026, 11, 22, 2, 0, tzinfo=UTC)  # 10:00 in Shanghai


class Clock(builders.Clock):
    def __init__(self, now: datetime = START) -> None:
        super().__init__(now)


turn = model_turn
"""The model's answer to a turn (tests/builders.py)."""
llm = integration.llm
"""The fake model server (tests/integration/conftest.py), importable from here as other tests do."""
CONFIG = conversation_config(default_timezone="Asia/Shanghai", extraction=PER_TURN)


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def service(uow_factory, llm, clock):
    return conversation(uow_factory, CONFIG, llm, clock=clock)


def say(service, text: str, *, user="u1", chat="c1", private=True, message_id=None, name="Alice", clock=None):
    incoming = message(text, user=user, chat=chat, sent=clock() if clock else START, name=name,
                       is_private=private, message_id=message_id)
    return asyncio.run(service.handle_message(incoming))


def system_prompt(llm, index: int = -1) -> str:
    """The system message and the app notes after the user's messages: all the prompt says besides the chat."""
    messages = llm.chat_requests()[index]["messages"]
    return "\n\n".join([messages[0]["content"], *(app_note(m["content"]) for m in messages[1:] if m["role"] == "user")])


def test_a_reply_records_both_turns_emotion_and_exactly_one_llm_call(service, llm, uow_factory):
    llm.queue_reply(turn("早上好！", emotion="happy", topic="greeting"))
    reply = say(service, "早上好", message_id="1")
    assert reply.text == "早上好！" and reply.emotion.primary == "happy" and not reply.offline
    assert len(llm.chat_requests()) == 1
    with uow_factory() as uow:
        turns = uow.session.scalars(select(ConversationTurn).order_by(ConversationTurn.id)).all()
        assert [(t.role, t.text) for t in turns] == [("user", "早上好"), ("assistant", "早上好！")]


def test_a_duplicate_platform_message_is_answered_once(service, llm):
    llm.queue_reply(turn("hello there"))
    first = say(service, "hi", message_id="42")
    again = say(service, "hi", message_id="42")
    assert (again.duplicate, again.text) == (True, first.text)
    assert len(llm.chat_requests()) == 1


def messages_counted(outcome: str) -> float:
    return REGISTRY.get_sample_value("mnemo_messages_total", {"platform": "telegram", "outcome": outcome}) or 0.0


def test_each_message_is_counted_by_how_it_was_answered(service, llm, uow_factory, clock):
    before = {outcome: messages_counted(outcome) for outcome in MESSAGE_OUTCOMES}
    llm.queue_reply(turn("hello there"))
    say(service, "hi", message_id="1")
    say(service, "hi", message_id="1")
    llm.queue_error(401)  # the key is refused: the offline responder answers
    say(service, "how are you?", message_id="2")
    say(ConversationService(uow_factory, CONFIG, chat_model=None, clock=clock), "and now?", message_id="3")

    def broken_database():
        raise RuntimeError("a bug")

    with pytest.raises(RuntimeError):
        say(ConversationService(broken_database, CONFIG, chat_model=None, clock=clock), "anyone?", message_id="4")
    counted = {outcome: messages_counted(outcome) - before[outcome] for outcome in MESSAGE_OUTCOMES}
    assert counted == {"model": 1, "duplicate": 1, "fallback": 1, "offline": 1, "busy": 0, "limited": 0, "failed": 1}


def test_working_memory_opens_counts_takes_the_topic_and_closes_after_idle(service, llm, clock, uow_factory):
    llm.queue_reply(turn(topic="job interview", variables=[("company", "ACME")]))
    say(service, "I have an interview", clock=clock)
    with uow_factory() as uow:
        session = uow.session.scalars(select(ConversationSession)).one()
        assert (session.turn_count, session.created_at, session.updated_at) == (1, START, START)
        assert session.current_topic == "job interview" and session.context_variables == {"company": "ACME"}
    clock.now += timedelta(minutes=5)
    say(service, "it is tomorrow", clock=clock)
    with uow_factory() as uow:
        session = uow.session.scalars(select(ConversationSession)).one()
        assert session.turn_count == 2 and session.updated_at == clock.now
    clock.now += timedelta(minutes=31)
    say(service, "back again", clock=clock)
    with uow_factory() as uow:
        sessions = uow.session.scalars(select(ConversationSession).order_by(ConversationSession.id)).all()
        assert sessions[0].closed_at is not None and sessions[1].closed_at is None and sessions[1].turn_count == 1
        assert "close_session" in {job.task for job in uow.session.scalars(select(OutboxJob))}


def test_at_most_15_turns_of_the_session_go_into_the_prompt_and_the_oldest_leave_in_blocks(service, llm):
    for i in range(11):
        llm.queue_reply(turn(f"reply {i}"))
        say(service, f"message {i}")
    prompts = [request["messages"] for request in llm.chat_requests()]
    # 16 turns before the 9th message: the window's start moved past the first eight, and stays there
    assert [len(messages) - 2 for messages in prompts] == [0, 2, 4, 6, 8, 10, 12, 14, 8, 10, 12]
    history = prompts[-1][1:-1]
    assert history[0] == {"role": "user", "content": "message 4"} and history[-1]["content"] == "reply 9"
    assert prompts[-1][-1]["content"].startswith("message 10\n\n<app_note>")
    assert prompts[-1][:len(prompts[-2]) - 1] == prompts[-2][:-1]


def test_a_recalled_memory_stays_in_the_note_of_the_turn_that_showed_it_until_it_is_forgotten(service, llm,
                                                                                             uow_factory):
    llm.queue_reply(turn("Berlin is lovely!", entries=[("fact", "user", "lives_in", "I live in Berlin")]))
    first = say(service, "I live in Berlin")
    llm.queue_reply(turn("You live in Berlin."))
    say(service, "Where do I live again?")
    llm.queue_reply(turn("Sure."))
    say(service, "Tell me a joke")
    asked, later = (llm.chat_requests()[i]["messages"] for i in (1, 2))
    assert "I live in Berlin" in app_note(asked[-1]["content"])
    assert later[3]["content"].startswith("Where do I live again?\n\n<app_note>")
    assert asked[-1]["content"].startswith(later[3]["content"].removesuffix("\n\n</app_note>"))
    assert "I live in Berlin" not in app_note(later[-1]["content"])  # shown once, where it was recalled

    with uow_factory() as uow:
        user_id = uow.users.identity("telegram", "u1").user_id
        forget_memories(uow, user_id, list(first.stored_memory_ids))
        uow.commit()
    llm.queue_reply(turn("Ok."))
    say(service, "And now?")
    assert not any("I live in Berlin" in app_note(m["content"]) for m in llm.chat_requests()[-1]["messages"])


def test_a_fact_stated_in_one_turn_is_recalled_in_the_next_before_any_worker_runs(service, llm, uow_factory):
    llm.queue_reply(turn("Berlin is lovely!", entries=[("fact", "user", "lives_in", "I live in Berlin")]))
    first = say(service, "I live in Berlin")
    llm.queue_reply(turn("You live in Berlin."))
    second = say(service, "Where do I live again?")
    assert "I live in Berlin" in system_prompt(llm)
    assert [m.content for m in second.memories_used] == ["I live in Berlin"]
    assert set(second.memories_used[0].score) >= {"keyword", "category_boost", "recency", "frequency", "total"}
    with uow_factory() as uow:
        memory = uow.memories.get(uow.users.identity("telegram", "u1").user_id, first.stored_memory_ids[0])
        assert (memory.source, memory.confidence) == ("user_stated", 0.9)
        assert memory.access_count == 1 and memory.last_accessed is not None
        assert [e.action for e in uow.session.scalars(select(MemoryEvent))] == ["add"]
        assert {job.task for job in uow.session.scalars(select(OutboxJob))} == {"extract_turn"}


def test_a_correction_supersedes_the_old_memory_instead_of_duplicating_it(service, llm, uow_factory):
    llm.queue_reply(turn(entries=[("fact", "user", "lives_in", "我住在北京")]))
    say(service, "我住在北京")
    llm.queue_reply(turn(entries=[("fact", "User", "lives in", "我现在住在上海")]))
    say(service, "不对，我现在住在上海")
    with uow_factory() as uow:
        memories = uow.session.scalars(select(Memory).order_by(Memory.id)).all()
        assert [m.content for m in memories] == ["我住在北京", "我现在住在上海"]
        assert memories[0].superseded_by == memories[1].id and memories[1].superseded_by is None
        actions = [e.action for e in uow.session.scalars(select(MemoryEvent).order_by(MemoryEvent.id))]
        assert actions == ["add", "add", "supersede"]


def test_the_emotion_of_one_turn_shapes_the_strategy_of_the_next(service, llm):
    llm.queue_reply(turn("I'm sorry to hear that.", emotion="sad", confidence=0.9))
    first = say(service, "I failed the exam")
    assert first.strategy.emotion == "neutral"
    llm.queue_reply(turn("ok", emotion="neutral", confidence=0.2))
    second = say(service, "yeah")
    assert second.strategy.tone == "empathetic"
    assert "empathetic tone" in system_prompt(llm) and "Aim for about 400 characters" in system_prompt(llm)
    llm.queue_reply(turn("ok"))
    third = say(service, "anyway")
    assert third.strategy.emotion == "neutral"  # low confidence counted as neutral


def test_plain_mode_has_no_emotion_strategy(uow_factory, llm):
    model = ChatModel(base_url=llm.base_url, api_key="test", model="fake-chat", timeout_seconds=10)
    plain = ConversationService(uow_factory, ConversationConfig(**{**CONFIG.__dict__, "emotion_enabled": False}),
                                chat_model=model)
    llm.queue_reply(turn("hm", emotion="sad"))
    say(plain, "sigh")
    llm.queue_reply(turn("ok"))
    say(plain, "anyway")
    assert "Style for this reply" not in system_prompt(llm)


def test_plain_words_instead_of_json_become_the_reply_with_unknown_emotion_and_nothing_stored(service, llm,
                                                                                              uow_factory):
    llm.queue_reply("Sure! Paris is a lovely place to live.")
    reply = say(service, "I live in Paris")
    assert reply.text == "Sure! Paris is a lovely place to live." and reply.emotion.primary == "unknown"
    assert not reply.offline and len(llm.chat_requests()) == 1
    with uow_factory() as uow:
        assert uow.session.scalars(select(Memory)).all() == []
        assert [job.task for job in uow.session.scalars(select(OutboxJob))] == ["extract_turn"]


@pytest.mark.parametrize("answer", ["{}", '{"emotion": {"primary": "happy"}}', "```json\n{\"topic\": 1}\n```", ""])
def test_an_answer_with_nothing_to_show_is_answered_offline_and_never_shown_raw(service, llm, answer):
    llm.queue_reply(answer)
    llm.queue_reply(answer)
    reply = say(service, "我养了一只猫")
    assert reply.offline and reply.text and not reply.text.lstrip().startswith(("{", "`"))
    assert TurnWarning(WarningCode.MODEL_SILENT) in reply.warnings


@pytest.mark.parametrize(("answer", "message", "reason"), [
    (turn("7031652", entries=[("fact", "user", "lives_in", "Lin lives in Porto")]), "I live in Porto now.",
     "only a number"),
    ("2026-12-01 04:12:33", "我今天去爬山了，好累", "only a date or time"),
    (turn("No"), "My brother just got married!", "a bare yes or no"),
])
def test_a_reply_that_is_not_language_for_the_message_is_answered_offline_and_nothing_is_taken_from_it(
        service, llm, uow_factory, answer, message, reason):
    llm.queue_reply(answer)
    reply = say(service, message)
    assert reply.offline and reply.text and reply.text != answer and len(llm.chat_requests()) == 1
    assert TurnWarning.of(WarningCode.MODEL_NON_ANSWER, reason=reason) in reply.warnings
    with uow_factory() as uow:
        assert "Lin lives in Porto" not in [memory.content for memory in uow.session.scalars(select(Memory))]


@pytest.mark.parametrize(("answer", "message"), [
    (turn("Yes!"), "Do you remember my cat's name?"), (turn("3"), "我养了几只猫？"), ("Lisbon.", "Where do I live?")])
def test_a_short_reply_that_answers_what_was_asked_is_the_models_reply(service, llm, answer, message):
    llm.queue_reply(answer)
    reply = say(service, message)
    assert not reply.offline and reply.text in (answer, answer.get("response") if isinstance(answer, dict) else "")


def test_when_the_llm_fails_the_offline_responder_answers_and_the_turn_is_kept(service, llm, uow_factory):
    for _ in range(3):
        llm.queue_error(500)
    reply = say(service, "我住在杭州")
    assert reply.offline and reply.warnings == (OFFLINE_WARNING, TurnWarning(WarningCode.MODEL_UNAVAILABLE))
    assert reply.text
    with uow_factory() as uow:
        assert [m.content for m in uow.session.scalars(select(Memory))] == ["我住在杭州"]
        assert len(uow.session.scalars(select(ConversationTurn)).all()) == 2


def test_a_trickling_endpoint_is_left_at_the_deadlines_and_the_offline_responder_answers(uow_factory, clock):
    with FakeOpenAI(models=("fake-chat",), embedding_trickle=0.4) as llm:  # every answer takes minutes
        for _ in range(4):
            llm.queue_reply(turn("太慢了"), trickle=0.4)
        model = ChatModel(base_url=llm.base_url, api_key="test", model="fake-chat", timeout_seconds=1.0)
        embedder = OpenAIEmbedder(llm.base_url, "test", "fake-embed", 384, timeout_seconds=1.0)
        slow = ConversationService(uow_factory, CONFIG, chat_model=model, embedder=embedder, clock=clock)

        reply = say(slow, "我住在苏州")

        assert reply.offline and reply.text != "太慢了"
        wait_for(lambda: llm.abandoned_trickles >= 2, 10, "the fake to see both connections closed")
        posted = [request for request in llm.requests if request.method == "POST"]  # not the window's GETs
        assert llm.abandoned_trickles == len(posted) == 2


def test_todos_are_stored_at_absolute_times_in_the_users_time_zone(service, llm, uow_factory):
    llm.queue_reply(turn("好的，明早提醒你", todos=[("去面试", "2026-11-23T09:00:00+08:00")]))
    reply = say(service, "提醒我明天早上9点去面试")
    with uow_factory() as uow:
        todo = uow.session.get(Todo, reply.todo_ids[0])
        assert todo.due_at == datetime(2026, 11, 23, 1, 0, tzinfo=UTC) and todo.timezone == "Asia/Shanghai"
        assert todo.status == "pending" and todo.source == "conversation"


def test_a_reminder_the_model_sets_with_nothing_visible_is_dropped(service, llm, uow_factory):
    blanks = [("\u3164\u3164", "2026-11-23T10:00:00+08:00"), ("\u2800", "2026-11-23T11:00:00+08:00"),
              ("\ufe0f\u0301", "2026-11-23T12:00:00+08:00"), ("feed the fish", "2026-11-23T13:00:00+08:00")]
    llm.queue_reply(turn("好的", todos=blanks))
    reply = say(service, "提醒我明天喂鱼")
    with uow_factory() as uow:
        assert [uow.session.get(Todo, todo_id).content for todo_id in reply.todo_ids] == ["feed the fish"]


def test_a_reminder_without_a_time_is_told_only_when_the_user_asked_for_one(service, llm, uow_factory):
    made_up = [("I remember you said:", "at the time when it was stored in this message")]
    llm.queue_reply(turn("I remember you said: you keep bees.", todos=made_up))  # a small model's filler
    unasked = say(service, "I keep bees on my balcony.")
    llm.queue_reply(turn("Sure!", todos=[("water the bees", "whenever")]))
    asked = say(service, "remind me to water the bees")
    assert unasked.todo_ids == asked.todo_ids == ()
    assert unasked.warnings == ()
    assert asked.warnings == (TurnWarning.of(WarningCode.REMINDER_WITHOUT_FUTURE_TIME, what="water the bees",
                                             when="whenever"),)
    with uow_factory() as uow:
        user_id = uow.users.identity("telegram", "u1").user_id
        assert uow.todos.count_pending(user_id) == 0


@pytest.mark.parametrize(("answer", "trusted"), [(turn("Sure thing!"), True), ("Sure thing!", False)],
                         ids=["no todo", "not json"])
def test_a_reminder_asked_for_that_the_model_did_not_set_is_set_by_the_rules_and_confirmed(
        service, llm, uow_factory, answer, trusted):
    llm.queue_reply(answer)  # a small model's answer: the request for a reminder is not in it (a bare "4", once
    # its answer here, is no longer shown: tests/unit/test_non_answers.py)
    reply = say(service, "remind me in 10 minutes to water the bees")
    assert len(reply.todo_ids) == 1
    assert told(reply) == ("Okay — I'll remind you today at 10:10 (Asia/Shanghai): water the bees. "
                            + default_zone_text("Asia/Shanghai", "en"))  # the user has no zone: told once
    with uow_factory() as uow:
        todo = uow.session.get(Todo, reply.todo_ids[0])
        assert todo.due_at == START + timedelta(minutes=10) and todo.content == "water the bees"
    llm.queue_reply(turn("好的", todos=[("浇花", "2026-11-22T18:00:00+08:00")]))
    reply = say(service, "提醒我今天晚上6点浇花")
    assert len(reply.todo_ids) == 1 and reply.notices == ()  # the model set it: nothing added, nothing doubled


def test_offline_reminders_resolve_relative_times_against_the_message_time(uow_factory, clock):
    offline = ConversationService(uow_factory, CONFIG, chat_model=None, clock=clock)
    reply = say(offline, "提醒我明天早上9点去面试", clock=clock)
    assert reply.offline
    with uow_factory() as uow:
        todo = uow.session.get(Todo, reply.todo_ids[0])
        assert todo.due_at == datetime(2026, 11, 23, 1, 0, tzinfo=UTC)


def test_in_a_group_only_the_speakers_memories_reach_the_prompt(service, llm):
    llm.queue_reply(turn(entries=[("preference", "user", "likes_drink", "Alice loves oolong tea")]))
    say(service, "I love oolong tea", user="alice", chat="group", private=False, name="Alice")
    llm.queue_reply(turn("Tea is nice."))
    bob = say(service, "What tea does everyone love? oolong?", user="bob", chat="group", private=False, name="Bob")
    assert "Alice loves oolong tea" not in system_prompt(llm)
    assert bob.memories_used == ()
    assert "group chat" in system_prompt(llm)


@pytest.mark.parametrize("script", [
    {"prefer": ("我最喜欢喝乌龙茶", "preference", "likes_drink", "喜欢喝乌龙茶"),
     "old": ("我在北京工作", "fact", "works_in", "在北京工作"),
     "new": ("我换工作了，现在在深圳上班", "fact", "works_in", "现在在深圳上班"),
     "later": "周末想找个地方喝茶，深圳有什么推荐？"},
    {"prefer": ("I really love oolong tea", "preference", "likes_drink", "Loves oolong tea"),
     "old": ("I work in Boston", "fact", "works_in", "Works in Boston"),
     "new": ("Actually I changed jobs, I work in Denver now", "fact", "works_in", "Works in Denver now"),
     "later": "Any tea places you'd suggest near work in Denver?"},
], ids=["chinese", "english"])
def test_a_stated_preference_is_used_later_and_a_changed_fact_replaces_the_old(service, llm, script):
    for key in ("prefer", "old", "new"):
        text, type_, predicate, content = script[key]
        llm.queue_reply(turn("👍", entries=[(type_, "user", predicate, content)]))
        say(service, text)
    llm.queue_reply(turn("How about a quiet tea house?"))
    later = say(service, script["later"])
    prompt = system_prompt(llm)
    used = [memory.content for memory in later.memories_used]
    assert script["prefer"][3] in prompt and script["prefer"][3] in used
    assert script["new"][3] in prompt and script["old"][3] not in prompt


def test_reminders_the_model_sets_stop_at_the_pending_cap_with_a_warning(service, llm, uow_factory):
    say(service, "hello")  # the user exists
    with uow_factory() as uow:
        user_id = uow.users.identity("telegram", "u1").user_id
        for n in range(MAX_PENDING_REMINDERS - 1):
            uow.todos.add(Todo(user_id=user_id, content=f"chore {n}", due_at=START + timedelta(days=2),
                               remind_at=START + timedelta(days=2), timezone="UTC"))
        uow.commit()
    llm.queue_reply(turn("ok", todos=[("water the fern", "2026-11-24T08:00:00+08:00"),
                                      ("buy stamps", "2026-11-24T09:00:00+08:00")]))
    reply = say(service, "remind me to water the fern and buy stamps on tuesday")
    assert len(reply.todo_ids) == 1
    assert TurnWarning.of(WarningCode.REMINDERS_FULL, what="buy stamps", count=MAX_PENDING_REMINDERS) in reply.warnings
    with uow_factory() as uow:
        assert uow.todos.count_pending(user_id) == MAX_PENDING_REMINDERS
