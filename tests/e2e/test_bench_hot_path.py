"""The hot-path benchmark runs end to end at a tiny size on the system PostgreSQL (figures are not asserted),
its usage A/B included."""

from __future__ import annotations

import json
from pathlib import Path

from bench import hot_path


def test_hot_path_bench_compares_recording_usage_with_two_sides_that_do_not(
        system_pg_admin_url: str, tmp_path: Path) -> None:
    figures = hot_path.run(system_pg_admin_url, tmp_path, conversations=3, llm_seconds=0.05, messages=6,
                           compare_usage=True)

    assert json.loads((tmp_path / "hot_path.json").read_text()) == figures
    assert figures["overhead"]["messages"] == 6
    assert figures["in_flight"]["answered"] == 3
    ab = figures["usage_ab"]
    for side in hot_path.AB_SIDES:
        assert 0 < ab[side]["apply_p50_ms"] < ab[side]["p50_ms"]
        assert ab[side]["apply_p99_ms"] < ab[side]["p99_ms"]
    assert ab["p99_added_ms"] == ab["with_usage"]["p99_ms"] - ab["without_usage"]["p99_ms"]
    assert ab["apply_p99_noise_ms"] == abs(ab["without_usage_again"]["apply_p99_ms"]
                                           - ab["without_usage"]["apply_p99_ms"])
    report = hot_path.report(figures)
    assert "usage recording, 6 messages each" in report
    assert "two sides without it differ by" in report


def test_hot_path_bench_times_the_first_words_of_a_reply_a_slow_model_writes(
        system_pg_admin_url: str, tmp_path: Path) -> None:
    figures = hot_path.run(system_pg_admin_url, tmp_path, conversations=1, llm_seconds=0.0, messages=1,
                           tokens_per_second=200, live_messages=3)

    live = figures["first_words"]
    assert live["messages"] == 3
    assert live["streamed"] == 3  # every reply's first words came before the rest
    assert 0 < live["first_word_p50_s"] < live["reply_p50_s"]
    assert live["first_word_p99_s"] < live["reply_p99_s"]
    report = hot_path.report(figures)
    assert f"first_word_p50_s: {live['first_word_p50_s']:.2f}" in report
    assert "reply_p99_s: " in report
