"""Timing a call on this thread's own CPU clock, never the wall clock.

A test that bounds how long a computation takes (a regular expression on hostile text, a parser on a huge
message) measures the CPU time of the thread running it (``time.thread_time``): other processes on a busy
machine, or a paused VM, do not move that clock, so the bound fails only when the call itself does too much
work. A call over its budget is timed again (the best of ``TRIES`` counts: a cache miss or a garbage
collection is not the input's cost), and one still running after ``abandon`` CPU seconds is interrupted.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

TRIES = 3
"""A call over the budget is timed again, up to this many times in all, and its best time counts."""
ABANDON_SECONDS = 1.0
"""A call still running after this much CPU is interrupted: it is slow, and may be exponential."""


class Abandoned(BaseException):
    """Raised in the call being timed; a BaseException, so the code under test cannot catch it."""


@contextmanager
def abandoned_after(seconds: float) -> Iterator[None]:
    """Interrupt the block after ``seconds`` of the process's CPU (``re`` checks for signals as it
    works); the profiling timer leaves pytest-timeout's alarm alone."""
    def interrupt(signum, frame):
        raise Abandoned
    previous = signal.signal(signal.SIGPROF, interrupt)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def cpu_seconds(call: Callable[[], object], budget: float, *, abandon: float | None = None) -> float:
    """The best CPU time of ``call`` over up to ``TRIES`` runs (stopping once one is within ``budget``);
    infinity when it was abandoned (after ``abandon`` seconds: ``ABANDON_SECONDS``, or twice the budget
    when that is more)."""
    abandon = abandon if abandon is not None else max(ABANDON_SECONDS, 2 * budget)
    best = float("inf")
    for _ in range(TRIES):
        try:
            with abandoned_after(abandon):
                start = time.thread_time()
                call()
                best = min(best, time.thread_time() - start)
        except Abandoned:
            return float("inf")
        if best <= budget:
            break
    return best
