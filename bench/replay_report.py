"""The figures of ``mnemo bench replay`` (pure): evidence in the prompt overall and by kind, against the baseline.

A question's evidence is in the prompt when at least one of its ids is shown; all of it when every id is.
``by_side`` groups the questions by whose words their evidence is: the user's turn, the bot's (assistant)
turn, or an imported memory (a question whose evidence holds both sides counts in both). ``stated_facts`` are the
questions whose evidence is a line the user stated a fact in (a memory of source ``user_stated`` was drawn from
it): what the lifecycle must keep however long it goes unused.
The memory-context tokens are those of the prompt's memory section. ``memories_stored`` and ``junk_rate``
are the write path's (the whole run's; a question kind has none of its own, nor has the baseline).
"""

from __future__ import annotations

from collections.abc import Sequence

from bench.quality_metrics import mean
from bench.replay_junk import Junk
from bench.stats import percentile

TOKENS_PERCENTILE = 0.95


def group_figures(rows: Sequence[dict], shown: str = "shown", tokens: str = "context_tokens") -> dict:
    """Questions, evidence in the prompt (any, all) and the memory-context tokens of ``rows``."""
    counted = [row[tokens] for row in rows]
    return {"questions": len(rows),
            "evidence_in_prompt": round(mean([1.0 if row[shown] else 0.0 for row in rows]), 4),
            "all_evidence_in_prompt": round(mean([1.0 if len(row[shown]) == len(row["evidence"]) else 0.0
                                                  for row in rows]), 4),
            "context_tokens_mean": round(mean(counted), 1),
            "context_tokens_p95": percentile(counted, TOKENS_PERCENTILE) if counted else 0}


def figures_of(rows: list[dict], junk: Junk) -> dict:
    """``replay.json`` but for the run's description: overall, by kind, the baseline and every question."""
    kinds = sorted({row["kind"] for row in rows})
    unstored = {"memories_stored": None, "junk_rate": None}
    baseline = {"shown": "baseline_shown", "tokens": "baseline_context_tokens"}
    return {
        "overall": group_figures(rows) | {"memories_stored": junk.stored, "junk_rate": junk.rate},
        "by_kind": {kind: group_figures([r for r in rows if r["kind"] == kind]) | unstored for kind in kinds},
        "by_side": {side: group_figures([r for r in rows if side in r.get("sides", ())]) | unstored
                    for side in sorted({side for r in rows for side in r.get("sides", ())})},
        "stated_facts": group_figures([r for r in rows if r.get("stated")]) | unstored,
        "baseline": {"overall": group_figures(rows, **baseline) | unstored,
                     "by_kind": {kind: group_figures([r for r in rows if r["kind"] == kind], **baseline) | unstored
                                 for kind in kinds}},
        "junk": {"memories": junk.junk, "by_kind": dict(junk.by_kind)},
        "questions": rows,
    }


def report(figures: dict) -> str:
    """The figures as a small plain-text table: Mnemo against the BM25 baseline, overall and by kind."""
    overall = figures["overall"]
    lines = [f"{figures['conversations']} conversation(s), {overall['questions']} questions, {figures['model']}; "
             f"prompt at the product's defaults ({figures['prompt']['retrieval_limit']} memories, "
             f"{figures['prompt']['memory_budget_tokens']} tokens)",
             f"{'':<16}{'questions':>10}{'evidence':>10}{'all':>8}{'BM25':>8}{'BM25 all':>10}"
             f"{'tokens':>8}{'p95':>6}{'BM25 tok':>10}"]
    base = figures["baseline"]
    sides = [(f"said by {side}", part, None) for side, part in figures.get("by_side", {}).items()]
    if figures.get("stated_facts", {}).get("questions"):
        sides.append(("stated facts", figures["stated_facts"], None))
    for name, mine, theirs in [("overall", overall, base["overall"])] + [
            (kind, part, base["by_kind"][kind]) for kind, part in figures["by_kind"].items()] + sides:
        if theirs is None:
            lines.append(f"{name[:16]:<16}{mine['questions']:>10}{mine['evidence_in_prompt']:>10.1%}"
                         f"{mine['all_evidence_in_prompt']:>8.1%}")
            continue
        lines.append(f"{name[:16]:<16}{mine['questions']:>10}{mine['evidence_in_prompt']:>10.1%}"
                     f"{mine['all_evidence_in_prompt']:>8.1%}{theirs['evidence_in_prompt']:>8.1%}"
                     f"{theirs['all_evidence_in_prompt']:>10.1%}{mine['context_tokens_mean']:>8.0f}"
                     f"{mine['context_tokens_p95']:>6}{theirs['context_tokens_mean']:>10.0f}")
    junk = figures["junk"]["by_kind"]
    lines.append(f"memories stored {overall['memories_stored']}, junk rate {overall['junk_rate']:.1%} "
                 f"({', '.join(f'{kind} {count}' for kind, count in junk.items())}); "
                 f"{figures['worker']['jobs_run']} worker jobs, {figures['worker']['nights']} nights; "
                 f"{figures['elapsed_s']:.0f} s")
    if figures.get("ask_after_days"):
        lines.append(f"questions asked {figures['ask_after_days']} days after their own time")
    if calls := figures.get("model_calls"):
        lines.append(f"hot_path_model_calls_per_message: {calls['hot_path_per_message']:.3f}")
        lines.append(f"background_model_calls_per_message: {calls['background_per_message']:.3f} (by kind: "
                     + ", ".join(f"{kind} {share:.3f}" for kind, share in calls["per_message"].items()
                                 if kind != "turn")
                     + f"; the nightly maintenance's {calls['nightly_per_message']:.3f} not counted)")
    return "\n".join(lines)
