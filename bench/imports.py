"""Import benchmark: how long one import of the largest file Mnemo accepts takes, and a second import of it.

Builds an export file of :data:`~shared.accounts.export_format.MAX_FILE_ENTRIES` entries (mostly memories
in English and Chinese, with superseded chains and source turns, plus episodes, turns and reminders, some
of them long past due), imports it into a scratch database through the memory-command service (as
``/import`` and the API do, embedding jobs owed), then imports it again (every entry a duplicate).
Prints the figures and writes them as JSON.
"""

from __future__ import annotations

import json
import random
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.dedup import TEMPLATES, sentence
from bench.hot_path import scratch_database
from shared.accounts.export_format import EXPORT_FORMAT, EXPORT_VERSION, MAX_FILE_ENTRIES

SEED = 20270314
NOW = datetime(2027, 3, 14, 9, 30, tzinfo=UTC)
SHARES = {"episodes": 0.01, "turns": 0.06, "todos": 0.005}
"""Of the file's entries; the rest are memories."""
SUPERSEDED_EVERY = 7
"""Every 7th memory was replaced by the next one."""
PAST_DUE_EVERY = 3
"""Every 3rd reminder was due long ago (imported as missed)."""


def export_document(entries: int, rng: random.Random) -> dict:
    """An export file of ``entries`` entries in all, whose rows refer to each other by local ids."""
    counts = {name: max(1, int(entries * share)) for name, share in SHARES.items()}
    counts["memories"] = entries - sum(counts.values())
    episodes = [{"id": n, "summary": f"[{_at(n)}] talked about {sentence(rng, 'event')}", "started_at": _at(n),
                 "ended_at": _at(n, minutes=20), "entities": ["tea", "上海"], "importance": 1.1}
                for n in range(1, counts["episodes"] + 1)]
    turns = [{"id": n, "role": "user" if n % 2 else "assistant", "text": sentence(rng, "fact"),
              "created_at": _at(n), "episode": 1 + n % counts["episodes"]} for n in range(1, counts["turns"] + 1)]
    memories = []
    for n in range(1, counts["memories"] + 1):
        type_ = rng.choice(list(TEMPLATES))
        memories.append({"id": n, "type": type_, "subject": "user", "predicate": f"{type_}_{n % 40}",
                         "content": f"{sentence(rng, type_)} #{n}", "importance": round(1.0 + rng.random(), 2),
                         "created_at": _at(n),
                         "superseded_by": n + 1 if n % SUPERSEDED_EVERY == 0 and n < counts["memories"] else None,
                         "source_turn": 1 + n % counts["turns"]})
    todos = [{"content": f"reminder {n}", "timezone": "Asia/Shanghai",
              "due_at": (NOW - timedelta(days=400 + n) if n % PAST_DUE_EVERY == 0
                         else NOW + timedelta(days=1 + n)).isoformat()} for n in range(counts["todos"])]
    return {"format": EXPORT_FORMAT, "version": EXPORT_VERSION, "exported_at": NOW.isoformat(),
            "episodes": episodes, "turns": turns, "memories": memories, "todos": todos,
            "profile": {"core_summary": "likes tea", "scratchpad": {"current_focus": "moving"}}}


def _at(n: int, minutes: int = 0) -> str:
    return (NOW - timedelta(days=300) + timedelta(minutes=n + minutes)).isoformat()


def time_imports(url: str, data: bytes) -> list[dict]:
    """Import ``data`` twice for one user; the seconds and report of each."""
    from shared.commands.service import Caller, MemoryCommands
    from shared.db.engine import make_engine, session_factory
    from shared.repositories.uow import UnitOfWork
    from shared.search.tokenizer import warm_up

    warm_up()  # as every process does on start; the dictionary's load is not the import's
    engine = make_engine(url)
    sessions = session_factory(engine)
    commands = MemoryCommands(lambda: UnitOfWork(sessions), default_timezone="UTC", clock=lambda: NOW,
                              embeddings_wanted=True)
    caller = Caller("console", "bench-import", display_name="bench")
    runs = []
    try:
        for name in ("first", "again"):
            started = time.perf_counter()
            report = commands.import_data(caller, data)
            seconds = time.perf_counter() - started
            runs.append({"import": name, "seconds": seconds, "imported": report.imported,
                         "duplicates": report.duplicates, "missed": report.missed, "refused": len(report.refused)})
    finally:
        engine.dispose()
    return runs


def run(database_url: str | None, entries: int = MAX_FILE_ENTRIES, out_dir: Path = Path("bench/results")) -> dict:
    from shared.accounts.export_format import read_export

    data = json.dumps(export_document(entries, random.Random(SEED)), ensure_ascii=False,
                      separators=(",", ":")).encode()
    started = time.perf_counter()
    read_export(data)
    check_seconds = time.perf_counter() - started
    with scratch_database(database_url) as url:
        runs = time_imports(url, data)
    figures = {"entries": entries, "bytes": len(data), "check_seconds": check_seconds, "runs": runs}
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "import.json").write_text(json.dumps(figures, indent=2))
    return figures


def report(figures: dict) -> str:
    lines = [f"import file: {figures['entries']:,} entries, {figures['bytes'] / 1e6:.1f} MB; "
             f"checking it: {figures['check_seconds']:.2f} s"]
    for r in figures["runs"]:
        added = sum(r["imported"].values())
        lines.append(f"import ({r['import']}): {r['seconds']:.2f} s, {added:,} added "
                     f"({r['imported']['memories']:,} memories), {r['duplicates']:,} duplicates, "
                     f"{r['missed']:,} missed, {r['refused']:,} refused")
    return "\n".join(lines)
