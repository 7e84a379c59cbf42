"""What the scale benchmark prints and draws: one line a size, the targets met or missed, the slowest
queries' plans, and ``latency.png`` (with matplotlib)."""

from __future__ import annotations

import sys
from pathlib import Path


def report_size(step: dict) -> str:
    r, h, u = step["retrieval"], step["hot_path"], step["heaviest_user"]
    rounds = f" + {step['rounds']:,} rounds" if step.get("rounds") else ""
    heavy_rounds = f", {u['rounds']:,} rounds" if u.get("rounds") else ""
    return (f"{step['memories']:>9,} memories{rounds} (loaded in {step['load_s']:.0f} s): retrieval p50 "
            f"{r['p50_ms']:.2f} / p95 {r['p95_ms']:.2f} / p99 {r['p99_ms']:.2f} ms; hot path p50 {h['p50_ms']:.1f} / "
            f"p95 {h['p95_ms']:.1f} / p99 {h['p99_ms']:.1f} ms; heaviest user ({u['memories']:,} memories"
            f"{heavy_rounds}) retrieval p50 {u['p50_ms']:.2f} / p99 {u['p99_ms']:.2f} ms"
            + _storage_line(step.get("storage")))


def _storage_line(storage: dict | None) -> str:
    if not storage:
        return ""
    per_user = storage["memories_per_user"]
    line = (f"; on disk {storage['total_mib']:,.0f} MiB (table {storage['table_mib']:,.0f}, indexes "
            f"{storage['indexes_mib']:,.0f}); memories per user mean {per_user['mean']:,.0f}, p99 "
            f"{per_user['p99']:,.0f}, max {per_user['max']:,}")
    if "rounds_per_user" in storage:
        per_user = storage["rounds_per_user"]
        line += (f"; turns on disk {storage['turns_total_mib']:,.0f} MiB (indexes {storage['turns_indexes_mib']:,.0f});"
                 f" rounds per user mean {per_user['mean']:,.0f}, p99 {per_user['p99']:,.0f}, max {per_user['max']:,}")
    return line


def report(figures: dict) -> str:
    lines = [f"scale: {figures['users']:,} users, {figures['queries']} queries per size, "
             f"{figures['machine']['cpus']} CPUs, PostgreSQL {figures['machine'].get('postgres')}"]
    lines += [report_size(step) for step in figures["sizes"]]
    last, targets = figures["sizes"][-1], figures["targets"]
    for name, part, key in (("retrieval", "retrieval", "retrieval_p99_ms"), ("hot path", "hot_path", "hot_path_p99_ms"),
                            ("heaviest user's retrieval", "heaviest_user", "heaviest_user_p99_ms")):
        if key not in targets:
            continue
        measured = last[part]["p99_ms"]
        verdict = "met" if measured <= targets[key] else "MISSED"
        lines.append(f"target {name} p99 <= {targets[key]:g} ms at {last['memories']:,}: {measured:.2f} ms, {verdict}")
    for key, who in (("explain_slowest", "slowest query"), ("explain_heaviest", "heaviest user's slowest query")):
        if key not in last:
            continue
        explain = last[key]
        lines.append(f"{who} at {last['memories']:,} (user {explain['user_id']}: {explain['text']!r}):")
        for name, plan in explain["plans"].items():
            lines.append(f"  {name}:")
            lines += [f"    {line}" for line in plan if "Scan" in line or "Time" in line or "Buffers" in line][:12]
    return "\n".join(lines)


def plot(figures: dict, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: latency.png skipped", file=sys.stderr)
        return
    sizes = [step["memories"] for step in figures["sizes"]]
    figure, axes = plt.subplots(figsize=(7, 4.5))
    for part, label in (("retrieval", "retrieval"), ("hot_path", "hot path (LLM excluded)")):
        for share in ("p50", "p99"):
            axes.plot(sizes, [step[part][f"{share}_ms"] for step in figures["sizes"]], marker="o",
                      label=f"{label} {share}")
    axes.axhline(figures["targets"]["retrieval_p99_ms"], linestyle=":", color="grey")
    axes.axhline(figures["targets"]["hot_path_p99_ms"], linestyle="--", color="grey")
    axes.set(xscale="log", xlabel=f"stored memories ({figures['users']:,} users)", ylabel="ms",
             title="Mnemo latency against stored memories")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
