"""When the knowledge monitor reads a sitting's waiting turns (issue 30): enough turns, enough words, or too long."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from shared.conversation.extraction_timing import ExtractionTiming, WaitingTurn

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
TIMING = ExtractionTiming(batch_turns=4, batch_tokens=100, max_delay=timedelta(minutes=15))


def waiting(count: int, *, tokens: int = 5, oldest_minutes_ago: float = 1) -> list[WaitingTurn]:
    return [WaitingTurn(NOW - timedelta(minutes=oldest_minutes_ago) + timedelta(seconds=index), tokens)
            for index in range(count)]


def test_a_few_short_fresh_turns_wait_for_more():
    assert not TIMING.due(waiting(3), NOW)


def test_the_sitting_is_read_once_enough_turns_wait():
    assert TIMING.due(waiting(4), NOW)


def test_a_few_long_messages_are_read_at_once():
    assert TIMING.due(waiting(2, tokens=50), NOW)


def test_a_turn_that_waited_the_longest_delay_brings_the_sitting_to_be_read():
    assert not TIMING.due(waiting(2, oldest_minutes_ago=14), NOW)
    assert TIMING.due(waiting(2, oldest_minutes_ago=15), NOW)


def test_nothing_waiting_is_never_due():
    assert not TIMING.due([], NOW)


def test_one_turn_a_batch_reads_every_turn_at_once():
    assert ExtractionTiming(batch_turns=1).due(waiting(1), NOW)
