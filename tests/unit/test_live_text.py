"""The reply read from a turn's answer while it streams: every way the pieces can fall, every place the field
can stand, and what may be shown of it."""

from __future__ import annotations

import itertools
import json

import pytest

from shared.llm.live_text import ResponseReader, shown_so_far
from shared.llm.turn_answer import REPLY_PLACEHOLDER

TURN = {"response": "Line one\nshe said \"hi\" \\ back / 你好 😀 é", "emotion": {
        "primary": "joy", "category": "positive", "confidence": 0.8, "indicators": ["response"]},
        "memory_update": {"should_store": False, "entries": []}, "todos": [], "topic": None,
        "context_variables": []}


def read_in_pieces(text: str | bytes, cuts: list[int], *,
                   plain_words: bool = False) -> tuple[ResponseReader, list[str]]:
    reader, seen, start = ResponseReader(plain_words=plain_words), [], 0
    for cut in [*cuts, len(text)]:
        seen.append(reader.feed(text[start:cut]))
        start = cut
    return reader, seen


@pytest.mark.parametrize("ascii_only", [True, False])
def test_the_reply_is_the_same_wherever_the_answer_is_cut_in_two(ascii_only):
    answer = json.dumps(TURN, ensure_ascii=ascii_only)  # escapes: \n \" \\ \u4f60 and a surrogate pair \ud83d\ude00
    for cut in range(len(answer) + 1):
        reader, _ = read_in_pieces(answer, [cut])
        assert reader.text == TURN["response"] and reader.done, cut


def test_the_reply_is_the_same_when_the_answer_arrives_one_byte_at_a_time():
    raw = json.dumps(TURN, ensure_ascii=False).encode()
    reader, seen = read_in_pieces(raw, list(range(1, len(raw))))
    assert reader.text == TURN["response"] and reader.done
    assert all("\ufffd" not in text for text in seen)  # half a character is held back, never shown broken


def test_what_was_read_only_grows_and_never_shows_half_an_escape():
    answer = json.dumps(TURN)
    _, seen = read_in_pieces(answer, list(range(1, len(answer))))
    for before, after in itertools.pairwise(seen):
        assert after.startswith(before)
    assert all(TURN["response"].startswith(text) for text in seen)  # never "\\" or "\\u4f" of an escape half read


def test_the_field_is_found_wherever_it_stands_and_a_nested_response_key_is_not_it():
    data = {"emotion": {"response": "not this", "indicators": ["\"response\": \"nor this\""]},
            "memory_update": {"entries": [{"content": "x", "response": "nor this"}]}, "response": "This one.",
            "todos": []}
    reader, seen = read_in_pieces(json.dumps(data), list(range(1, 200, 7)))
    assert reader.text == "This one." and reader.done
    assert all(text in ("", *("This one."[:n] for n in range(10))) for text in seen)


def test_reasoning_and_a_fence_before_the_object_are_skipped():
    answer = "<think>They want {\"response\": \"no\"} maybe</think>\n```json\n" + json.dumps(TURN) + "\n```"
    for cut in range(0, len(answer), 3):
        reader, _ = read_in_pieces(answer, [cut])
        assert reader.text == TURN["response"], cut


def test_prose_before_the_object_is_skipped_in_json_modes_and_shown_as_words_in_plain_mode():
    answer = 'Sure! Here is my answer:\n{"response": "Hello there."}'
    assert read_in_pieces(answer, [5])[0].text == "Hello there."
    reader, seen = read_in_pieces(answer, [12, 30], plain_words=True)
    assert seen[0] == "Sure! Here i" and reader.text == "Hello there."


def test_plain_words_are_the_reply_and_reasoning_before_a_lone_closing_tag_goes():
    assert read_in_pieces("Hi! How was `the` day?", [3, 9], plain_words=True)[0].text == "Hi! How was `the` day?"
    reader, _ = read_in_pieces("The user greets me.</think>Hello!", [10, 22], plain_words=True)
    assert reader.text == "Hello!"


def test_an_answer_cut_inside_the_reply_keeps_what_was_written_and_is_not_done():
    reader, _ = read_in_pieces('{"response": "I remember you said \\u4f', [10])
    assert reader.text == "I remember you said " and not reader.done


def test_a_lone_surrogate_is_dropped_and_what_follows_it_kept():
    reader, _ = read_in_pieces('{"response": "a\\ud83d b\\ude00c\\ud83d\\u0041"}', [17, 20])
    assert reader.text == "a bcA"


def test_only_words_are_shown_never_json_field_names_the_placeholder_or_the_app_note():
    assert shown_so_far("  Hello there") == "Hello there"
    assert shown_so_far('{"response": "x"}') == ""
    assert shown_so_far("memory_update: none") == ""
    assert shown_so_far(REPLY_PLACEHOLDER[:9]) == ""
    assert shown_so_far("Sure thing. <app_note>the user") == "Sure thing."
    assert shown_so_far("<think>") == ""


def test_words_are_shown_from_the_first_whole_word_on():
    assert [shown_so_far(text) for text in ("Th", "That ", "That s", "你", "4182735 2")] == [
        "", "", "That s", "你", "4182735 2"]
