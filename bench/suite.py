"""``mnemo bench all``: every suite in turn, then one combined result, report and plots.

Runs quality, memories (offline junk rate), replay (recall through the write path), hot-path, scale, dedup,
worker and prompt cost with the full sizes (or, with ``--quick``, sizes that finish in a few minutes on a small
machine), each on its own scratch database. A suite that fails is recorded with its error and the others still
run. Writes ``latest.json``, ``report.md`` and the plots (see :mod:`bench.report`) to the output directory.
"""

from __future__ import annotations

import os
import platform
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SIZES: dict[str, dict[str, dict[str, Any]]] = {  # "quick" or "full" → suite → its run's keyword arguments
    "quick": {"hot-path": {"conversations": 50, "messages": 50},
              "scale": {"sizes": (10_000,), "users": 1_000, "queries": 200},
              "dedup": {"sizes": (2_000, 8_000)}},
    "full": {"hot-path": {"conversations": 200, "messages": 200},
             "scale": {"sizes": (10_000, 100_000, 1_000_000), "users": 10_000, "queries": 1_000},
             "dedup": {"sizes": (10_000, 100_000)}},
}


@dataclass(frozen=True)
class Options:
    locomo: Path
    madial: Path
    database_url: str | None
    redis_url: str | None
    out: Path
    quick: bool
    hybrid: bool | None = None
    """The quality suite's vector pass: None runs it when the local embedder is installed."""


@dataclass(frozen=True)
class Suite:
    name: str
    run: Callable[[], dict]
    report: Callable[[dict], str]


def suites(options: Options) -> list[Suite]:
    """Every suite, wired with this run's data, servers and sizes."""
    from bench import dedup, hot_path, memories, prompt_cost, quality, replay_datasets, scale, worker

    sizes, db, out = SIZES["quick" if options.quick else "full"], options.database_url, options.out
    return [
        Suite("quality", lambda: quality.run(options.locomo, options.madial, db, out, quick=options.quick,
                                                     hybrid=options.hybrid),
              quality.report),
        Suite("memories", lambda: memories.run(options.locomo, options.madial, db, out, quick=options.quick),
              memories.report),
        Suite("replay", lambda: replay_datasets.run(options.locomo, options.madial, db, out, quick=options.quick),
              replay_datasets.report),
        Suite("hot_path", lambda: hot_path.run(db, out, **sizes["hot-path"]), hot_path.report),
        Suite("scale", lambda: scale.run(db, out_dir=out, **sizes["scale"]), scale.report),
        Suite("dedup", lambda: dedup.run(db, sizes["dedup"]["sizes"], out), dedup.report),
        Suite("worker", lambda: worker.run(options.locomo, db, options.redis_url, out, quick=options.quick),
              worker.report),
        Suite("prompt_cost", lambda: prompt_cost.run(options.locomo, db, out, quick=options.quick),
              prompt_cost.report),
    ]


def run_all(options: Options) -> dict:
    """Runs every suite, prints each one's report, writes the combined files; returns the results."""
    from bench import report

    started = time.perf_counter()
    results: dict = {"quick": options.quick, "machine": machine(options.database_url), "suites": {},
                     "elapsed_s": {}}
    plan = suites(options)
    for number, suite in enumerate(plan, 1):
        progress(f"== {suite.name} ({number}/{len(plan)}) ==")
        suite_started = time.perf_counter()
        try:
            figures = suite.run()
        except Exception as exc:  # recorded in the report; the remaining suites still run
            traceback.print_exc()
            figures = {"error": f"{type(exc).__name__}: {exc}"}
        else:
            print(suite.report(figures), flush=True)
        results["suites"][suite.name] = figures
        results["elapsed_s"][suite.name] = round(time.perf_counter() - suite_started, 1)
    results["elapsed_s"]["total"] = round(time.perf_counter() - started, 1)
    if "postgres" not in results["machine"]:
        results["machine"]["postgres"] = results["suites"].get("scale", {}).get("machine", {}).get("postgres")
    report.write(results, options.out)
    progress(f"bench all: {results['elapsed_s']['total']:.0f} s; {options.out / 'report.md'}")
    return results


def failed(results: dict) -> list[str]:
    return [name for name, figures in results["suites"].items() if "error" in figures]


def machine(database_url: str | None) -> dict:
    """CPU count, RAM and platform; the PostgreSQL version when a server URL is given (else the
    embedded server's, taken from the scale suite)."""
    found = {"cpus": os.cpu_count(), "ram_gb": round(_ram_bytes() / 2**30, 1), "platform": platform.platform(),
             "python": platform.python_version()}
    if database_url:
        import psycopg

        from bench.databases import one_row

        with psycopg.connect(database_url) as connection:
            found["postgres"] = one_row(connection, "SHOW server_version")[0]
    return found


def _ram_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
