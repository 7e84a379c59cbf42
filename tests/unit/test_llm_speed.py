"""A model's measured speed, the time a typical turn takes at it, and the LLM_TIMEOUT_SECONDS advised for it."""

from __future__ import annotations

import pytest

from shared.llm.speed import SHORTEST_ADVISED_TIMEOUT, SpeedReading, advised_timeout


def reading(first: float | None, tokens: int, last: float | None, pieces: int | None = None) -> SpeedReading:
    return SpeedReading(mode="json_object+schema", first_token_seconds=first, tokens=tokens, last_token_seconds=last,
                        pieces=tokens if pieces is None else pieces)


def test_the_speed_counts_the_tokens_written_after_the_first_over_the_time_they_took() -> None:
    measured = reading(first=4.0, tokens=21, last=9.0)  # 20 tokens in 5 s after the first
    assert measured.tokens_per_second == pytest.approx(4.0)
    assert measured.turn_seconds(100) == pytest.approx(4.0 + 25.0)
    assert measured.describe() == "first token after 4.0 s, 4.0 tokens/s (21 tokens timed)"


def test_chunks_of_several_tokens_share_the_tokens_the_server_reported() -> None:
    measured = reading(first=1.0, tokens=32, last=2.4, pieces=8)  # 8 chunks of 4 tokens, 7 after the first
    assert measured.tokens_per_second == pytest.approx(28 / 1.4)


@pytest.mark.parametrize("measured", [reading(None, 0, None), reading(2.0, 1, 2.0), reading(2.0, 3, 2.0)])
def test_without_two_timed_tokens_the_speed_and_a_turns_time_are_unknown(measured) -> None:
    assert measured.tokens_per_second is None
    assert measured.turn_seconds() is None


def test_no_token_at_all_says_so() -> None:
    assert reading(None, 0, None).describe() == "no token yet"


@pytest.mark.parametrize(("turn", "advised"), [(1.0, SHORTEST_ADVISED_TIMEOUT), (20.0, 30), (21.0, 40),
                                               (61.0, 100), (200.0, 300)])
def test_the_advised_timeout_is_half_again_a_turn_rounded_up_to_ten_seconds_never_under_the_default(turn, advised):
    assert advised_timeout(turn) == advised

