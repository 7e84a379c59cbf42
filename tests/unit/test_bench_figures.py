"""The pure parts of the benchmarks: distributions, which job sent an LLM request, the memory
section of a turn prompt, LoCoMo replays, and the combined report."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bench import llm_calls
from bench.prompt_cost import memory_section, replay_of
from bench.report import recall_curves, render_markdown
from bench.stats import distribution, percentile
from shared.conversation.prompt import MemoryLine, PastTurn, PromptInputs, build_turn_prompt
from shared.lifecycle.episodes import SessionWork, summary_messages
from shared.lifecycle.extraction import BatchTurn, build_extraction_messages
from shared.text import estimate_tokens

NOW = datetime(2026, 11, 22, 10, 30, tzinfo=UTC)


def turn_prompt(memories: list[MemoryLine]) -> list[dict[str, str]]:
    inputs = PromptInputs(bot_name="Mnemo", personality="a friend", strategy=None, user_name=None,
                          user_message="what should I cook tonight?", local_now=NOW, timezone="UTC", is_group=False,
                          profile=None, memories=memories, episodes=[],
                          history=[PastTurn("user", "hi"), PastTurn("assistant", "hey")],
                          memory_budget_tokens=700)
    return build_turn_prompt(inputs).messages


def test_percentiles_and_distribution_of_a_hundred_values():
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.5) == 51
    assert percentile(values, 0.95) == 95
    assert percentile(values, 1.0) == 100
    assert distribution(values) == {"count": 100, "mean": 50.5, "p50": 51, "p95": 95, "max": 100}


def test_each_product_prompt_is_counted_as_its_own_kind_of_llm_call():
    extraction = build_extraction_messages([BatchTurn(1, "I moved to Lisbon", "Nice!", NOW)], [])
    work = SessionWork(session_id=1, user_id=1, chat_id=1, turns=((1, "user", "I moved to Lisbon", NOW),),
                       topic=None, timezone="UTC", core_summary="", scratchpad={})
    bodies = [{"messages": turn_prompt([])}, {"messages": extraction}, {"messages": extraction},
              {"messages": summary_messages(work)}, {"messages": [{"role": "user", "content": "hello"}]}]
    assert [llm_calls.request_kind(body) for body in bodies] == ["turn", "extraction", "extraction",
                                                               "episode_summary", "other"]
    counts = llm_calls.count_kinds(bodies)
    assert counts == {"extraction": 2, "turn": 1, "episode_summary": 1, "other": 1}
    assert llm_calls.per_message(counts, 2)["extraction"] == 1.0


def test_the_memory_section_is_read_from_the_app_note_and_holds_the_remembered_lines():
    lines = [MemoryLine(i, "preference", f"likes dish number {i} with extra garlic", NOW) for i in range(5)]
    section = memory_section(turn_prompt(lines))
    assert section.startswith("What you know about the user")
    assert section.endswith("</memories>")
    assert all(line.content in section for line in lines)
    assert "Answer with one JSON object" not in section
    assert estimate_tokens(section) > sum(estimate_tokens(line.content) for line in lines)


def test_a_prompt_without_memories_has_an_empty_memory_section():
    assert memory_section(turn_prompt([])) == ""


def test_a_locomo_sample_replays_the_first_speaker_as_the_user_and_the_other_as_the_reply():
    sample = {"sample_id": "s1", "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bo!"},
                      {"speaker": "Ann", "dia_id": "D1:2", "text": "I adopted a cat.", "blip_caption": "a cat"},
                      {"speaker": "Bo", "dia_id": "D1:3", "text": "Lovely!"},
                      {"speaker": "Ann", "dia_id": "D1:4", "text": "Her name is Mimi."}],
        "session_2_date_time": "9:00 am on 9 May, 2023",
        "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": "How is Mimi?"},
                      {"speaker": "Ann", "dia_id": "D2:2", "text": "Sleepy."}]}}
    replay = replay_of(sample)
    assert [(m.text, m.reply) for m in replay.messages] == [
        ("Hi Bo! I adopted a cat. a cat", "Lovely!"), ("Her name is Mimi.", "Talk soon!"), ("Sleepy.", "Talk soon!")]
    assert replay.messages[0].at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert replay.messages[2].at.date() == datetime(2023, 5, 9).date()
    assert replay.transcript.splitlines()[0] == "Ann: Hi Bo!"
    assert "Bo: How is Mimi?" in replay.transcript


RESULTS = {
    "quick": True,
    "machine": {"cpus": 2, "ram_gb": 23.5, "platform": "Linux", "python": "3.11.7", "postgres": "18.4"},
    "elapsed_s": {"quality": 50.0, "prompt_cost": 9.0, "total": 59.0},
    "suites": {
        "quality": {"headline": {"locomo_recall_any@10": {"mnemo": 0.8, "bm25": 0.64, "ratio": 1.25, "target": 0.75,
                                                          "met": True}},
                    "locomo": {"mnemo": {"overall": {"recall_any@1": 0.3, "recall_any@10": 0.8, "questions": 9}},
                               "bm25": {"overall": {"recall_any@1": 0.2, "recall_any@10": 0.64}}},
                    "madial": {"mnemo": {"recall@1": 0.1, "recall@5": 0.4}, "bm25": {"recall@1": 0.1, "recall@5": 0.2},
                               "dialogues": 20}},
        "prompt_cost": {"memory_context_tokens": {"mean": 366.2, "p95": 484, "max": 736},
                        "full_conversation_tokens": {"mean": 20864}, "target_tokens": 700,
                        "reference_tokens": {"mem0": 1800}, "llm_calls_per_message": {"turn": 1.0},
                        "reusable_prefix": {"per_turn": {"mean": 0.758}, "token_weighted": 0.778, "target": 0.75}},
        "worker": {"error": "RuntimeError: timed out waiting for the worker"},
        "replay": {name: {"overall": {"evidence_in_prompt": share, "all_evidence_in_prompt": share / 2},
                          "baseline": {"overall": {"evidence_in_prompt": 0.6, "all_evidence_in_prompt": 0.5}}}
                   for name, share in (("locomo", 0.25), ("madial", 0.875))},
    },
}


def test_the_report_sets_each_figure_against_its_target_and_the_bm25_baseline():
    text = render_markdown(RESULTS)
    assert "Machine: 2 CPUs, 23.5 GB RAM, PostgreSQL 18.4" in text
    assert "| locomo_recall_any@10 | 0.800 | ≥ 0.75 | met | BM25 0.640 (×1.25) |" in text
    assert "| memory-context tokens per turn (mean / p95 / max) | 366 / 484 / 736 | ≤ 700 | **missed** |" in text
    assert "| LLM calls per user message on the hot path | 1.00 | = 1 | met |" in text
    assert "| full conversation, same data (tokens) | 20,864 |" in text
    assert "| reusable prefix per turn (hot path, what a prefix cache reuses) | 75.8% (of all prompt tokens 77.8%) " \
           "| ≥ 75% | met |" in text
    assert "- worker: RuntimeError: timed out waiting for the worker" in text
    assert "| LoCoMo (en) evidence in the prompt through the write path (all of it) | 0.250 (0.125) | — |  | " \
           "BM25 over turns 0.600 (0.500) |" in text
    assert "| MADial-Bench (zh) evidence in the prompt through the write path (all of it) | 0.875 (0.438) |" in text


def test_the_report_appends_each_suite_s_own_text():
    text = render_markdown(RESULTS, {"prompt_cost": "the plain report"})
    assert "## prompt_cost\n\n```\nthe plain report\n```" in text


@pytest.mark.parametrize("dataset, system, points", [
    ("LoCoMo recall_any@k", "mnemo", [(1, 0.3), (10, 0.8)]),
    ("LoCoMo recall_any@k", "bm25", [(1, 0.2), (10, 0.64)]),
    ("MADial-zh recall@k", "bm25", [(1, 0.1), (5, 0.2)]),
])
def test_recall_curves_come_from_the_quality_figures_in_order_of_k(dataset, system, points):
    assert recall_curves(RESULTS["suites"]["quality"])[dataset][system] == points


def test_worker_rows_give_jobs_per_second_per_broker_and_the_background_calls_per_message():
    from bench.report import worker_rows

    runs = [{"concurrency": 1, "jobs_per_s": 44.4}, {"concurrency": 2, "jobs_per_s": 41.0}]
    figures = {"throughput": {"redis": runs},
               "calls_per_message": {"per_message": {"turn": 1.0, "extraction": 1.0, "episode_summary": 0.094},
                                     "prompt_tokens_per_message": {"turn": 2100.4, "extraction": 900.0,
                                                                   "episode_summary": 120.2}}}
    rows = [(row.figure, row.measured) for row in worker_rows(figures)]
    assert rows == [("extraction jobs/s, one worker, concurrency 1, redis broker", "44.4"),
                    ("extraction jobs/s, one worker, concurrency 2, redis broker", "41.0"),
                    ("background LLM calls per user message", "extraction 1.000, episode_summary 0.094 (total 1.094)"),
                    ("prompt tokens per user message, hot path / background", "2100 / 1020")]
