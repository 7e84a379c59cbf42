"""The combined benchmark report: ``latest.json``, ``report.md`` and the recall plot.

``render_markdown`` is pure: each headline figure against its target (and, for retrieval, the
in-run BM25 baseline's ratio), the machine, the time each suite took, then every suite's own
plain-text report. The latency plot is the scale suite's ``latency.png``; ``recall.png`` (Mnemo
against BM25 at each k) is drawn when matplotlib is installed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

NO_TARGET = "—"


@dataclass(frozen=True)
class Row:
    figure: str
    measured: str
    target: str = NO_TARGET
    verdict: str = ""
    baseline: str = ""


def verdict(met: bool) -> str:
    return "met" if met else "**missed**"


def quality_rows(figures: dict) -> list[Row]:
    rows = []
    for name, h in figures["headline"].items():
        ratio = f"BM25 {h['bm25']:.3f} (×{h['ratio']:.2f})" if h["ratio"] is not None else f"BM25 {h['bm25']:.3f}"
        rows.append(Row(name, f"{h['mnemo']:.3f}", f"≥ {h['target']:.2f}", verdict(h["met"]), ratio))
    return rows


def hot_path_rows(figures: dict) -> list[Row]:
    o, f = figures["overhead"], figures["in_flight"]
    return [Row("hot-path overhead p99 (LLM excluded)", f"{o['p99_ms']:.1f} ms"),
            Row(f"{f['conversations']} conversations in flight (LLM {f['llm_seconds']:g} s)",
                f"{f['wall_s']:.2f} s, {f['answered']} answered")]


def scale_rows(figures: dict) -> list[Row]:
    targets = figures["targets"]
    rows = []
    for step in figures["sizes"]:
        size = f"{step['memories']:,}"
        for part, key, label in (("retrieval", "retrieval_p99_ms", "retrieval"), ("hot_path", "hot_path_p99_ms",
                                                                                   "hot path")):
            p99 = step[part]["p99_ms"]
            rows.append(Row(f"{label} p99 at {size} memories", f"{p99:.2f} ms", f"≤ {targets[key]:g} ms",
                            verdict(p99 <= targets[key])))
    return rows


def dedup_rows(figures: dict) -> list[Row]:
    rows = [Row(f"dedup of {r['memories']:,} memories", f"{r['seconds']:.2f} s") for r in figures["runs"]]
    if "time_growth_vs_size_growth" in figures:
        rows.append(Row("dedup time growth / size growth", f"{figures['time_growth_vs_size_growth']:.2f}",
                        "≈ 1 (linear)"))
    return rows


def worker_rows(figures: dict) -> list[Row]:
    rows = [Row(f"extraction jobs/s, one worker, concurrency {r['concurrency']}, {broker} broker",
                f"{r['jobs_per_s']:.1f}" if r["jobs_per_s"] else "n/a")
            for broker, runs in figures["throughput"].items() for r in runs]
    per = figures["calls_per_message"]["per_message"]
    background = {kind: value for kind, value in per.items() if kind != "turn"}
    rows.append(Row("background LLM calls per user message", ", ".join(f"{k} {v:.3f}" for k, v in background.items())
                    + f" (total {sum(background.values()):.3f})"))
    tokens = figures["calls_per_message"].get("prompt_tokens_per_message", {})
    if tokens:
        rows.append(Row("prompt tokens per user message, hot path / background",
                        f"{tokens.get('turn', 0):.0f} / {sum(v for k, v in tokens.items() if k != 'turn'):.0f}"))
    return rows


def prompt_cost_rows(figures: dict) -> list[Row]:
    m, full = figures["memory_context_tokens"], figures["full_conversation_tokens"]
    references = ", ".join(f"{name} {tokens:,}" for name, tokens in figures["reference_tokens"].items())
    calls = figures["llm_calls_per_message"]
    measured = f"{m['mean']:.0f} / {m['p95']:.0f} / {m['max']:.0f}"
    return [Row("memory-context tokens per turn (mean / p95 / max)", measured,
                f"≤ {figures['target_tokens']}", verdict(m["max"] <= figures["target_tokens"]),
                f"references: {references}"),
            Row("full conversation, same data (tokens)", f"{full['mean']:,.0f}"),
            _reusable_row(figures),
            Row("LLM calls per user message on the hot path", f"{sum(calls.values()):.2f}", "= 1",
                verdict(set(calls) == {"turn"} and abs(calls["turn"] - 1) < 1e-9))]


def _reusable_row(figures: dict) -> Row:
    reusable = figures["reusable_prefix"]
    share = reusable["per_turn"]["mean"]
    return Row("reusable prefix per turn (hot path, what a prefix cache reuses)",
               f"{share:.1%} (of all prompt tokens {reusable['token_weighted']:.1%})", f"≥ {reusable['target']:.0%}",
               verdict(share >= reusable["target"]))


def memories_rows(figures: dict) -> list[Row]:
    every, locomo = figures["all"], figures["locomo"]
    return [Row("junk among memories stored offline (questions, bot's words, duplicates, restatements)",
                f"{every['junk_rate']:.1%} of {every['stored']}", f"≤ {figures['goal_junk_rate']:.0%}",
                verdict(every["goal_met"])),
            Row("LoCoMo observations stored offline (coverage)", f"{locomo['coverage']:.1%}" if locomo["coverage"]
                is not None else "n/a")]


def replay_rows(figures: dict) -> list[Row]:
    from bench.replay_datasets import DATASETS

    rows = []
    for name, label in DATASETS.items():
        mine, theirs = figures[name]["overall"], figures[name]["baseline"]["overall"]
        rows.append(Row(f"{label} evidence in the prompt through the write path (all of it)",
                        f"{mine['evidence_in_prompt']:.3f} ({mine['all_evidence_in_prompt']:.3f})",
                        baseline=f"BM25 over turns {theirs['evidence_in_prompt']:.3f} "
                                 f"({theirs['all_evidence_in_prompt']:.3f})"))
    return rows


ROWS: dict[str, Callable[[dict], list[Row]]] = {
    "quality": quality_rows, "memories": memories_rows, "replay": replay_rows, "hot_path": hot_path_rows,
    "scale": scale_rows, "dedup": dedup_rows,
    "worker": worker_rows, "prompt_cost": prompt_cost_rows}


def render_markdown(results: dict, reports: dict[str, str] | None = None) -> str:
    """The whole report; ``reports`` holds each suite's plain-text report (rendered here if absent)."""
    m = results["machine"]
    lines = [f"# Mnemo benchmarks{' (quick)' if results['quick'] else ''}", "",
             f"Machine: {m['cpus']} CPUs, {m['ram_gb']} GB RAM, PostgreSQL {m.get('postgres') or 'unknown'}, "
             f"Python {m['python']}, {m['platform']}.", "",
             "Run time: " + ", ".join(f"{name} {seconds:.0f} s" for name, seconds in results["elapsed_s"].items())
             + ".", "", "| Figure | Measured | Target | Verdict | Baseline / reference |", "|---|---|---|---|---|"]
    for name, figures in results["suites"].items():
        if "error" not in figures:
            lines += [f"| {r.figure} | {r.measured} | {r.target} | {r.verdict} | {r.baseline} |"
                      for r in ROWS[name](figures)]
    errors = {name: figures["error"] for name, figures in results["suites"].items() if "error" in figures}
    if errors:
        lines += ["", "Failed suites:"] + [f"- {name}: {error}" for name, error in errors.items()]
    for name, text in (reports or {}).items():
        lines += ["", f"## {name}", "", "```", text, "```"]
    return "\n".join(lines) + "\n"


def suite_reports(results: dict) -> dict[str, str]:
    from bench import dedup, hot_path, memories, prompt_cost, quality, replay_datasets, scale, worker

    renderers = {"quality": quality.report, "memories": memories.report, "replay": replay_datasets.report,
                 "hot_path": hot_path.report,
                 "scale": scale.report,
                 "dedup": dedup.report, "worker": worker.report, "prompt_cost": prompt_cost.report}
    return {name: renderers[name](figures) for name, figures in results["suites"].items() if "error" not in figures}


def write(results: dict, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "latest.json").write_text(json.dumps(results, indent=2, ensure_ascii=False))
    (out_dir / "report.md").write_text(render_markdown(results, suite_reports(results)))
    quality = results["suites"].get("quality", {})
    if "error" not in quality and quality:
        plot_recall(quality, out_dir / "recall.png")


def recall_curves(quality: dict) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """{dataset: {system: [(k, recall), …]}}: LoCoMo recall_any@k overall and MADial recall@k."""
    curves: dict[str, dict[str, list[tuple[int, float]]]] = {"LoCoMo recall_any@k": {}, "MADial-zh recall@k": {}}
    for system, groups in _systems(quality["locomo"]).items():
        overall = groups.get("overall", {})
        curves["LoCoMo recall_any@k"][system] = _points(overall, "recall_any@")
    for system, values in _systems(quality["madial"]).items():
        curves["MADial-zh recall@k"][system] = _points(values, "recall@")
    return curves


def _systems(dataset: dict) -> dict[str, dict]:
    """The systems of a dataset's figures (mnemo, bm25, …): its entries that hold figures."""
    return {name: value for name, value in dataset.items() if isinstance(value, dict)}


def _points(values: dict, prefix: str) -> list[tuple[int, float]]:
    return sorted((int(key[len(prefix):]), value) for key, value in values.items() if key.startswith(prefix))


def plot_recall(quality: dict, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: recall.png skipped", file=sys.stderr)
        return
    curves = recall_curves(quality)
    figure, axes = plt.subplots(1, len(curves), figsize=(10, 4))
    for axis, (title, systems) in zip(axes, curves.items(), strict=True):
        for system, points in systems.items():
            axis.plot([k for k, _ in points], [v for _, v in points], marker="o", label=system)
        axis.set(xlabel="k", ylabel="recall", title=title, ylim=(0, 1))
        axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
