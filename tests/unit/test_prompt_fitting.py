"""One prompt budget: the conversation fits the room the model's context window leaves, long past turns shortened
with a mark (the oldest first), then the oldest left out, and the newest message cut only when it alone does not
fit (the user is told)."""

from dataclasses import replace
from datetime import datetime
from zoneinfo import ZoneInfo

from shared.conversation.fitting import (
    MESSAGE_CUT_MARK,
    PAST_CUT_MARK,
    SHORT_TURN_TOKENS,
    PastCost,
    cut_to_tokens,
    fit_conversation,
)
from shared.conversation.notice_texts import Notice, NoticeCode, notice_text
from shared.conversation.prompt import (
    MIN_CONVERSATION_TOKENS,
    MemoryLine,
    PastTurn,
    PromptInputs,
    app_note,
    build_turn_prompt,
    static_system,
)
from shared.llm.context_window import estimate_chat
from shared.text import estimate_tokens

NOW = datetime(2026, 11, 26, 9, 0, tzinfo=ZoneInfo("Europe/Lisbon"))
ESSAY = " ".join(f"Paragraph {n} of the essay about tide pools and the crabs that live in them." for n in range(300))
ESSAY_ZH = "".join(f"第{n}段：关于西湖边上的茶园、龙井茶的采摘和炒制，还有清明前后的天气。" for n in range(200))


def inputs(history, message="What did you think of it?", budget=None, **overrides) -> PromptInputs:
    values = dict(bot_name="Mnemo", personality="a warm friend", strategy=None, user_name="Lin",
                  user_message=message, local_now=NOW, timezone="Europe/Lisbon", is_group=False, profile=None,
                  memories=[], episodes=[], history=history, memory_budget_tokens=700, prompt_budget_tokens=budget)
    values.update(overrides)
    return PromptInputs(**values)


def pasted_history(texts) -> list[PastTurn]:
    turns = []
    for number, text in enumerate(texts):
        turns += [PastTurn("user", text, turn_id=2 * number), PastTurn("assistant", f"Thanks for sharing #{number}!")]
    return turns


def test_a_conversation_that_fits_is_left_exactly_as_it_is():
    history = pasted_history(["I live in Lisbon.", "我喜欢喝茉莉花茶。"])
    assert build_turn_prompt(inputs(history, budget=4000)) == build_turn_prompt(inputs(history))


def test_long_past_turns_are_shortened_with_a_mark_oldest_first_and_the_prompt_fits_its_budget():
    history = pasted_history([ESSAY, ESSAY_ZH, ESSAY, "short one"])
    built = build_turn_prompt(inputs(history, budget=2500))
    assert estimate_chat(built.messages) <= 2500
    users = [m["content"] for m in built.messages[1:-1] if m["role"] == "user"]
    assert users[0].endswith(PAST_CUT_MARK)
    assert users[0].startswith("Paragraph 0 of the essay")
    assert estimate_tokens(users[0]) <= SHORT_TURN_TOKENS + estimate_tokens(PAST_CUT_MARK)
    assert users[-1] == "short one"  # short turns and every reply stay whole
    assert [m["content"] for m in built.messages[1:-1] if m["role"] == "assistant"] == [
        f"Thanks for sharing #{n}!" for n in range(4)]
    assert built.shortened_turns == 3
    assert built.left_out_turns == 0
    assert built.message_read_chars is None
    assert built.messages[-1]["content"].startswith("What did you think of it?")


def test_only_as_many_long_turns_are_shortened_as_the_budget_needs_the_newest_stays_whole():
    history = pasted_history([ESSAY, ESSAY])
    whole = estimate_chat(build_turn_prompt(inputs(history)).messages)
    built = build_turn_prompt(inputs(history, budget=whole - estimate_tokens(ESSAY) // 2))
    users = [m["content"] for m in built.messages[1:-1] if m["role"] == "user"]
    assert users == [users[0], ESSAY]
    assert users[0].endswith(PAST_CUT_MARK)
    assert built.shortened_turns == 1


def test_when_shortening_is_not_enough_the_oldest_turns_leave_and_their_memories_return_to_the_note():
    tea = MemoryLine(7, "preference", "Lin loves jasmine tea", NOW)
    history = [PastTurn("user", "I love jasmine tea", memories=(tea,)), PastTurn("assistant", "Lovely!"),
               *pasted_history([f"line {n}: " + "words " * 100 for n in range(8)])]
    built = build_turn_prompt(inputs(history, budget=1500, memories=[tea]))
    assert estimate_chat(built.messages) <= 1500
    assert built.left_out_turns >= 2
    assert "I love jasmine tea" not in str(built.messages[1:-1])
    assert "Lin loves jasmine tea" in app_note(built.messages[-1]["content"])
    assert built.memory_ids == (7,)


def test_a_newest_message_that_alone_does_not_fit_is_cut_with_a_mark_and_the_characters_read_are_counted():
    for pasted in (ESSAY * 3, ESSAY_ZH * 3):
        built = build_turn_prompt(inputs(pasted_history(["hello"]), message=pasted, budget=3000))
        assert estimate_chat(built.messages) <= 3000
        message = built.messages[-1]["content"]
        kept = message[: message.index(MESSAGE_CUT_MARK)]
        assert pasted.startswith(kept)
        assert len(kept) == built.message_read_chars < len(pasted)
        assert built.left_out_turns == 2
        assert [m["role"] for m in built.messages] == ["system", "user"]


def test_a_window_too_small_for_the_memory_note_gives_the_note_less_and_the_message_stays_readable():
    memories = [MemoryLine(n, "fact", f"Lin noted fact number {n} about the garden and the tide pools", NOW)
                for n in range(30)]
    budget = estimate_chat([{"content": static_system("Mnemo", "a warm friend")}]) + 400
    asked = inputs(pasted_history(["hello"]), message="Tell me about my garden, please.", memories=memories)
    built, unbounded = build_turn_prompt(replace(asked, prompt_budget_tokens=budget)), build_turn_prompt(asked)
    assert estimate_chat(built.messages) <= budget
    assert built.message_read_chars is None
    assert built.messages[-1]["content"].startswith("Tell me about my garden, please.\n\n")
    assert 0 < len(built.memory_ids) < len(unbounded.memory_ids)  # fewer memories: the conversation keeps its room
    before_the_note = estimate_chat(unbounded.messages) - estimate_chat([unbounded.messages[-1]])
    assert before_the_note < budget - MIN_CONVERSATION_TOKENS  # it was the note that did not fit


def test_in_a_window_with_room_for_little_more_than_the_system_message_the_message_is_cut_to_that_room():
    budget = estimate_chat([{"content": static_system("Mnemo", "a warm friend")}]) + 250
    built = build_turn_prompt(inputs(pasted_history(["hello"]), message=ESSAY, budget=budget))
    assert estimate_chat(built.messages) <= budget
    assert 0 < built.message_read_chars < len(ESSAY)


def test_the_notice_of_a_cut_message_is_in_the_users_language():
    cut = Notice.of(NoticeCode.MESSAGE_CUT, count=2140)
    assert notice_text(cut, chinese=False) == ("Your message was too long for the model: it read the first "
                                               "2,140 characters.")
    assert notice_text(cut, chinese=True) == "你的消息太长，模型只读了前 2140 个字。"


def test_a_cut_ends_where_a_sentence_or_word_ends_and_never_passes_its_budget():
    cut = cut_to_tokens(ESSAY, 50)
    assert estimate_tokens(cut) <= 50
    assert cut.endswith(".")
    assert ESSAY.startswith(cut)
    assert cut_to_tokens("短句。" * 100, 20).endswith("。")
    assert cut_to_tokens("whole", 10) == "whole"
    assert cut_to_tokens("anything", 0) == ""


def test_fitting_counts_each_turns_own_costs_and_leaves_out_from_the_oldest():
    past = [PastCost("a " * 400, 10), PastCost("b " * 50, 10), PastCost("c " * 50, 10)]
    fitted = fit_conversation(past, "hi", room=300)
    assert fitted.past[0] is None
    assert fitted.past[1:] == ("b " * 50, "c " * 50)
    assert (fitted.shortened, fitted.left_out, fitted.message) == (0, 1, "hi")
