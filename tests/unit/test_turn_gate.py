"""Back-pressure: at most ``slots`` turns in the model at once, a bounded queue, a busy word, then offline."""

from __future__ import annotations

import asyncio

import pytest

from shared.conversation.pressure import PressureConfig, TurnGate

LONG = 30.0  # seconds no test waits: a turn given up too early fails its test instead of passing by luck


def gate(slots: int = 1, queue_limit: int = 4, busy_after: float = LONG, give_up_after: float = LONG) -> TurnGate:
    return TurnGate(PressureConfig(slots=slots, queue_limit=queue_limit, busy_after=busy_after,
                                   give_up_after=give_up_after))


async def hold(turns: TurnGate, entered: asyncio.Event, leave: asyncio.Event, log: list[str], name: str,
               on_busy=None) -> bool:
    async with turns.slot(on_busy) as admitted:
        log.append(f"{name}:{'in' if admitted else 'out'}")
        if admitted:
            entered.set()
            await leave.wait()
    return admitted


def test_slots_are_handed_over_first_come_first_served() -> None:
    async def scenario() -> list[str]:
        turns, log = gate(slots=1), []
        first_in, release = asyncio.Event(), asyncio.Event()
        first = asyncio.create_task(hold(turns, first_in, release, log, "a"))
        await first_in.wait()
        waiting = [asyncio.create_task(hold(turns, asyncio.Event(), release, log, name)) for name in "bcd"]
        await asyncio.sleep(0)
        assert (turns.running, turns.waiting) == (1, 3)
        release.set()
        await asyncio.gather(first, *waiting)
        assert (turns.running, turns.waiting) == (0, 0)
        return log

    assert asyncio.run(scenario()) == ["a:in", "b:in", "c:in", "d:in"]


def test_a_turn_that_finds_the_queue_full_gets_no_slot_at_once() -> None:
    async def scenario() -> list[str]:
        turns, log = gate(slots=1, queue_limit=1), []
        entered, release = asyncio.Event(), asyncio.Event()
        first = asyncio.create_task(hold(turns, entered, release, log, "a"))
        await entered.wait()
        second = asyncio.create_task(hold(turns, asyncio.Event(), release, log, "b"))
        await asyncio.sleep(0)
        assert await hold(turns, asyncio.Event(), release, log, "c") is False  # no wait: the queue is full
        release.set()
        await asyncio.gather(first, second)
        return log

    assert asyncio.run(scenario()) == ["a:in", "c:out", "b:in"]


def test_a_waiting_turn_hears_busy_once_then_gets_the_slot() -> None:
    async def scenario() -> tuple[list[str], int]:
        turns, log, told = gate(slots=1, busy_after=0.01), [], []
        entered, release = asyncio.Event(), asyncio.Event()
        first = asyncio.create_task(hold(turns, entered, release, log, "a"))
        await entered.wait()

        async def on_busy() -> None:
            told.append("busy")
            release.set()  # the first turn finishes only once the second was told

        second = await hold(turns, asyncio.Event(), release, log, "b", on_busy=on_busy)
        await first
        return log, len(told) if second else -1

    assert asyncio.run(scenario()) == (["a:in", "b:in"], 1)


def test_a_turn_waiting_past_the_limit_gives_up_and_the_queue_moves_on() -> None:
    async def scenario() -> list[str]:
        turns, log = gate(slots=1, busy_after=0.0, give_up_after=0.05), []
        entered, release = asyncio.Event(), asyncio.Event()
        first = asyncio.create_task(hold(turns, entered, release, log, "a"))
        await entered.wait()
        assert await hold(turns, asyncio.Event(), release, log, "b") is False
        assert (turns.running, turns.waiting) == (1, 0)
        release.set()
        await first
        assert await hold(turns, asyncio.Event(), release, log, "c") is True
        assert (turns.running, turns.waiting) == (0, 0)
        return log

    assert asyncio.run(scenario()) == ["a:in", "b:out", "c:in"]


def test_a_waiting_turn_that_is_cancelled_leaves_no_slot_taken() -> None:
    async def scenario() -> None:
        turns = gate(slots=1)
        entered, release = asyncio.Event(), asyncio.Event()
        first = asyncio.create_task(hold(turns, entered, release, [], "a"))
        await entered.wait()
        waiting = asyncio.create_task(hold(turns, asyncio.Event(), release, [], "b"))
        await asyncio.sleep(0)
        release.set()
        for _ in range(10):  # until a has left and handed its slot to b, which has not run since ...
            await asyncio.sleep(0)
            if first.done():
                break
        assert first.done()
        assert not waiting.done()
        assert (turns.running, turns.waiting) == (1, 0)
        waiting.cancel()  # ... and is cancelled before it could: the slot must come back
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert (turns.running, turns.waiting) == (0, 0)

    asyncio.run(scenario())


def test_a_gate_serves_one_event_loop_after_another() -> None:
    async def two_turns(turns: TurnGate) -> list[str]:
        log, release = [], asyncio.Event()
        entered = asyncio.Event()
        first = asyncio.create_task(hold(turns, entered, release, log, "a"))
        await entered.wait()
        second = asyncio.create_task(hold(turns, asyncio.Event(), release, log, "b"))
        await asyncio.sleep(0)
        release.set()
        await asyncio.gather(first, second)
        return log

    turns = gate(slots=1)
    for _ in range(3):  # each run waits on a future of its own loop
        assert asyncio.run(two_turns(turns)) == ["a:in", "b:in"]
    assert (turns.running, turns.waiting) == (0, 0)
