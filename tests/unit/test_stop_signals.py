"""A stop signal during the companions' start waits for the start to finish, then acts as it would have."""

from __future__ import annotations

import signal

import pytest

from shared.app.processes import stop_signals_deferred


def test_ctrl_c_inside_the_block_lets_it_finish_then_interrupts():
    finished = []
    with pytest.raises(KeyboardInterrupt), stop_signals_deferred():
        signal.raise_signal(signal.SIGINT)
        finished.append("the rest of the block")
    assert finished == ["the rest of the block"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_the_first_signal_decides_and_the_earlier_handlers_come_back():
    def exit_on(signum, _frame):
        raise SystemExit(128 + signum)

    earlier = signal.signal(signal.SIGTERM, exit_on)
    try:
        with pytest.raises(SystemExit) as stopped, stop_signals_deferred():
            signal.raise_signal(signal.SIGTERM)
            signal.raise_signal(signal.SIGINT)
        assert stopped.value.code == 128 + signal.SIGTERM
        assert signal.getsignal(signal.SIGTERM) is exit_on
    finally:
        signal.signal(signal.SIGTERM, earlier)


def test_without_a_signal_nothing_happens():
    with stop_signals_deferred():
        done = True
    assert done
