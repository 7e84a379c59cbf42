"""The worker and prompt-cost benchmarks run end to end at tiny sizes on the system PostgreSQL and
Redis, with a real worker and the fake LLM (figures are written, never asserted against a speed)."""

from __future__ import annotations

import json
from pathlib import Path

from bench import prompt_cost, worker
from bench.report import prompt_cost_rows, worker_rows

REDIS_URL = "redis://127.0.0.1:6379/12"
"""A Redis database of its own: other tests (and their workers) use 13, 14 and 15."""
ACTIVITIES = ("hiking", "painting", "baking bread", "swimming", "reading poetry", "playing chess")
PLACES = ("Lisbon", "the lake", "my sister's flat", "the old library", "Kyoto", "the community garden")


def tiny_locomo(tmp_path: Path, messages: int) -> Path:
    """A LoCoMo-format file: one conversation whose first session has ``messages`` varied lines."""
    lines = [{"speaker": ("Caroline", "Melanie")[i % 2], "dia_id": f"D1:{i + 1}",
              "text": f"Last week I went {ACTIVITIES[i % len(ACTIVITIES)]} at {PLACES[i // 2 % len(PLACES)]}, "
                      f"and it reminded me of day {i + 1} of our trip."} for i in range(messages)]
    conversation = {"speaker_a": "Caroline", "speaker_b": "Melanie", "session_1": lines,
                    "session_1_date_time": "1:56 pm on 8 May, 2023"}
    path = tmp_path / "tiny-locomo.json"
    path.write_text(json.dumps([{"sample_id": "tiny", "conversation": conversation, "qa": []}]))
    return path


def test_prompt_cost_replays_a_conversation_with_one_llm_call_per_message(system_pg_admin_url, tmp_path):
    figures = prompt_cost.run(tiny_locomo(tmp_path, 30), system_pg_admin_url, tmp_path)

    assert json.loads((tmp_path / "prompt_cost.json").read_text()) == figures
    assert figures["user_messages"] >= figures["stored_memories"] > 5  # said again in nearly the same words: refreshed
    assert figures["llm_calls"] == {"turn": figures["user_messages"]}
    tokens = figures["memory_context_tokens"]
    assert tokens["count"] == figures["user_messages"]
    assert 0 <= tokens["p50"] <= tokens["p95"] <= tokens["max"]
    assert tokens["max"] > 0
    assert figures["full_conversation_tokens"]["max"] > tokens["max"]
    assert "memory-context tokens per turn" in prompt_cost.report(figures)
    assert prompt_cost_rows(figures)
    reusable = figures["reusable_prefix"]
    assert reusable["per_turn"]["count"] == figures["user_messages"] - 1
    assert 0 < reusable["per_turn"]["mean"] < 1


def test_worker_bench_drains_real_jobs_on_both_brokers_and_counts_background_calls(system_pg_admin_url, tmp_path,
                                                                                   monkeypatch):
    monkeypatch.setattr(worker, "CONCURRENCIES", (1,))
    monkeypatch.setattr(worker, "BACKLOG_JOBS", {("postgresql", True): 3, ("redis", True): 5})
    monkeypatch.setattr(worker, "MESSAGES_PER_USER", {True: 4})
    figures = worker.run(tiny_locomo(tmp_path, 40), system_pg_admin_url, REDIS_URL, tmp_path, quick=True)

    assert json.loads((tmp_path / "worker.json").read_text()) == figures
    for broker, jobs in (("postgresql", 3), ("redis", 5)):
        [drain] = figures["throughput"][broker]
        assert drain["jobs"] == jobs
        assert drain["llm_calls"] == {"extraction": jobs}
        assert drain["jobs_per_s"] > 0
    calls = figures["calls_per_message"]
    assert calls["broker"] == "redis"
    assert calls["user_messages"] == 4
    assert calls["per_message"]["turn"] == 1.0
    # the four messages are read, and their sitting summarised, when it closes: one shared call
    assert calls["llm_calls"].get("sitting") == 1, calls["llm_calls"]
    assert "episode_summary" not in calls["llm_calls"]
    assert 0 < calls["per_message"]["sitting"] <= 1.0
    assert "jobs/s" in worker.report(figures)
    assert worker_rows(figures)
    tokens = calls["prompt_tokens_per_message"]
    assert tokens["turn"] > 0
    assert tokens["sitting"] > 0
    assert "hot path" in worker.report(figures)
