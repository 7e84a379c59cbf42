"""The pace of a reply shown while it is written: the first words at once, then the newest words at most once per
interval, nothing after ``close``, and the final message kept at the pace too."""

from __future__ import annotations

import asyncio
import itertools
import time

from bot.live_reply import LiveReply

INTERVAL = 0.2


def test_words_heard_often_are_shown_at_once_then_at_most_once_an_interval_newest_first():
    shown: list[tuple[float, str]] = []

    async def show(text: str) -> None:
        shown.append((time.monotonic(), text))

    async def main() -> tuple[float, bool]:
        live = LiveReply(show, interval=INTERVAL)
        started = time.monotonic()
        for count in range(1, 41):  # a word every 20 ms for 0.8 s
            live.hear(" ".join(["word"] * count))
            await asyncio.sleep(0.02)
        any_shown = await live.close()
        live.hear("too late")
        await asyncio.sleep(INTERVAL)
        return started, any_shown and time.monotonic() - shown[-1][0] >= INTERVAL

    started, kept_the_pace_after = asyncio.run(main())
    times = [at for at, _text in shown]
    assert times[0] - started < 0.05  # the first words at once
    assert all(later - earlier >= INTERVAL * 0.95 for earlier, later in itertools.pairwise(times))
    assert 3 <= len(shown) <= 5 and shown[-1][1] != "too late"
    assert all(len(later) > len(earlier) for (_a, earlier), (_b, later) in itertools.pairwise(shown))
    assert kept_the_pace_after


def test_a_show_that_fails_stops_the_live_reply_and_close_says_nothing_was_shown():
    attempts: list[str] = []

    async def refuse(text: str) -> None:
        attempts.append(text)
        raise RuntimeError("Bad Request: draft refused")

    async def main() -> bool:
        live = LiveReply(refuse, interval=INTERVAL)
        live.hear("first words")
        await asyncio.sleep(0.05)
        live.hear("first words and more")
        await asyncio.sleep(0.05)
        return await live.close()

    assert asyncio.run(main()) is False and attempts == ["first words"]


def test_a_show_under_way_is_waited_for_by_close():
    finished: list[str] = []

    async def slow_show(text: str) -> None:
        await asyncio.sleep(0.1)
        finished.append(text)

    async def main() -> bool:
        live = LiveReply(slow_show, interval=INTERVAL)
        live.hear("first words")
        await asyncio.sleep(0.01)
        return await live.close()

    assert asyncio.run(main()) is True and finished == ["first words"]


def test_a_reply_whose_final_message_is_not_paced_closes_at_once_after_a_show():
    async def show(_text: str) -> None:
        return None

    async def main(final_paced: bool) -> float:
        live = LiveReply(show, interval=INTERVAL, final_paced=final_paced)
        live.hear("first words")
        await asyncio.sleep(0.01)
        started = time.monotonic()
        await live.close()
        return time.monotonic() - started

    assert asyncio.run(main(final_paced=False)) < INTERVAL / 2
    assert asyncio.run(main(final_paced=True)) >= INTERVAL * 0.9
