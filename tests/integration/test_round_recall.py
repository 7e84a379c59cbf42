"""Conversation recall on real PostgreSQL: every round (the user's line and the bot's reply) is recallable by
that user in later sittings, ranked with memories, dated and attributed in the app note; a group member's
recall holds only their own lines and the bot's replies to them; a paused user's rounds are not kept; the
facts drawn from a line key its round; rounds the conversation window shows are not repeated."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from shared.db.models import ConversationTurn
from shared.lifecycle.extraction import extract_turns
from shared.recall.reindex import retokenize_stale
from tests.integration import test_conversation as conversation
from tests.integration.test_conversation import CONFIG, START, say, system_prompt, turn

llm = conversation.llm
clock = conversation.clock
service = conversation.service
"""The hot path's fixtures: a fake model, a clock and the conversation service on it."""

LATER = timedelta(hours=5)  # a new sitting: past the idle close


def next_sitting(clock, by: timedelta = LATER) -> None:
    clock.now += by


def user_turn_ids(uow_factory, text: str) -> list[int]:
    with uow_factory() as uow:
        return list(uow.session.scalars(select(ConversationTurn.id).where(ConversationTurn.text == text,
                                                                          ConversationTurn.role == "user")))


def test_what_the_bot_recommended_is_recalled_in_a_later_sitting_dated_and_attributed(service, llm, clock,
                                                                                       uow_factory):
    llm.queue_reply(turn("You should try 'Spirited Away', a gentle Miyazaki film."))
    say(service, "Any film for a rainy evening?", clock=clock)
    next_sitting(clock, timedelta(days=3))
    llm.queue_reply(turn("It was Spirited Away."))
    say(service, "What was the name of that Miyazaki film you told me about?", clock=clock)
    note = system_prompt(llm)
    assert f"{START:%Y-%m-%d}:" in note
    assert "you: Any film for a rainy evening?" in note
    assert "me: You should try 'Spirited Away'" in note


def test_a_chinese_round_is_recalled_by_the_words_of_either_side(service, llm, clock):
    llm.queue_reply(turn("那就去西湖边的龙井村喝茶吧，春天最好。"))
    say(service, "周末去杭州玩，有什么推荐？", clock=clock)
    next_sitting(clock)
    llm.queue_reply(turn("龙井村。"))
    say(service, "你上次推荐我去哪喝茶来着？", clock=clock)
    assert "龙井村" in system_prompt(llm)


def test_in_a_group_a_member_recalls_only_their_own_lines_and_the_replies_to_them(service, llm, clock):
    llm.queue_reply(turn("Good luck with the violin recital!"))
    say(service, "My violin recital is on Friday", user="bob", name="Bob", chat="g1", private=False, clock=clock)
    llm.queue_reply(turn("Nice, the cello is lovely."))
    say(service, "I play the cello", user="alice", name="Alice", chat="g1", private=False, clock=clock)
    next_sitting(clock)
    llm.queue_reply(turn("I don't know."))
    say(service, "When is the violin recital?", user="alice", name="Alice", chat="g1", private=False, clock=clock)
    alice_sees = system_prompt(llm)
    assert "violin recital is on Friday" not in alice_sees
    assert "Good luck with the violin" not in alice_sees
    llm.queue_reply(turn("On Friday."))
    say(service, "When is my violin recital?", user="bob", name="Bob", chat="g1", private=False, clock=clock)
    assert "you: My violin recital is on Friday" in system_prompt(llm)


def test_a_round_said_while_paused_is_not_kept_for_recall(service, llm, clock, uow_factory):
    say(service, "hello", clock=clock)  # makes the user
    with uow_factory() as uow:
        user_id = uow.session.scalar(select(ConversationTurn.user_id).where(ConversationTurn.text == "hello"))
        uow.users.set_paused(user_id, clock.now)
        uow.commit()
    llm.queue_reply(turn("Noted."))
    say(service, "My locker code is tangerine", clock=clock)
    with uow_factory() as uow:
        uow.users.set_paused(user_id, None)
        uow.commit()
        assert retokenize_stale(uow) >= 0  # the sweep does not key a round left out on purpose
        uow.commit()
    next_sitting(clock)
    llm.queue_reply(turn("I don't know."))
    say(service, "What is my locker code? tangerine?", clock=clock)
    assert "locker code is tangerine" not in system_prompt(llm)


def test_the_facts_drawn_from_a_line_key_its_round(service, llm, clock, uow_factory):
    llm.queue_reply(turn("How lovely!"))
    say(service, "We brought home a tiny ragdoll kitten today", clock=clock)
    [turn_id] = user_turn_ids(uow_factory, "We brought home a tiny ragdoll kitten today")
    llm.queue_reply({"operations": [{"op": "ADD", "type": "fact", "subject": "user", "predicate": "pet",
                                     "content": "The user has a pet cat, a ragdoll kitten"}]})
    extract_turns(uow_factory, service.chat_model, [turn_id], [], clock.now)
    with uow_factory() as uow:
        keys = uow.session.scalar(select(ConversationTurn.search_tokens).where(ConversationTurn.id == turn_id))
    assert "pet" in keys.split()
    assert "cat" in keys.split()


def test_a_round_the_conversation_window_shows_is_not_repeated_in_the_note(service, llm, clock):
    llm.queue_reply(turn("Sourdough needs a lively starter."))
    say(service, "I'm baking sourdough bread", clock=clock)
    clock.now += timedelta(minutes=1)
    llm.queue_reply(turn("Yes, sourdough."))
    say(service, "What bread am I baking?", clock=clock)
    assert "you: I'm baking sourdough" not in system_prompt(llm)


def test_a_date_cue_brings_that_days_rounds_whatever_their_words(service, llm, clock):
    llm.queue_reply(turn("What a day at the museum!"))
    say(service, "Saw the dinosaur skeletons with my nephew", clock=clock)
    next_sitting(clock, timedelta(days=6))
    llm.queue_reply(turn("You saw dinosaurs."))
    day = (START + timedelta(hours=8)).strftime("%B %-d")  # the user's local day (Shanghai)
    say(service, f"What did we talk about on {day}?", clock=clock)
    assert "dinosaur skeletons" in system_prompt(llm)


def test_the_prompt_says_which_rounds_it_shows(service, llm, clock, uow_factory):
    llm.queue_reply(turn("Tokyo in March is cherry blossom time."))
    say(service, "I'm flying to Tokyo on March 14", clock=clock)
    [turn_id] = user_turn_ids(uow_factory, "I'm flying to Tokyo on March 14")
    next_sitting(clock)
    with uow_factory() as uow:
        from shared.conversation.messages import IncomingMessage
        from shared.conversation.prepare import PreparedTurn, prepare_turn

        message = IncomingMessage(platform="telegram", chat_id="c1", user_id="u1", text="When do I fly to Tokyo?",
                                  sent_at=clock.now, is_private=True, display_name="Alice")
        prepared = prepare_turn(uow, message, CONFIG, now=clock.now, query_vector=None, vectors=None)
        assert isinstance(prepared, PreparedTurn)
        assert turn_id in prepared.prompt.round_ids
        uow.rollback()


def test_the_note_shows_reminders_due_within_a_day_and_all_when_asked(service, llm, clock):
    due_soon, due_later = (START + timedelta(hours=3)).isoformat(), (START + timedelta(days=9)).isoformat()
    llm.queue_reply(turn("Okay!", todos=[("stretch your back", due_soon), ("renew the passport", due_later)]))
    say(service, "Remind me in 3 hours to stretch my back, and in 9 days to renew my passport", clock=clock)
    llm.queue_reply(turn("Sure."))
    say(service, "How is the weather?", clock=clock)
    note = system_prompt(llm)
    assert "<pending_reminders>" in note
    assert "stretch your back" in note
    assert "renew the passport" not in note
    llm.queue_reply(turn("Two."))
    say(service, "What reminders do I have?", clock=clock)
    assert "renew the passport" in system_prompt(llm)
