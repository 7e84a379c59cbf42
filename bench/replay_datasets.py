"""The replay suite of ``mnemo bench all``: LoCoMo and MADial-Bench replayed through the write path.

Each development half is written in the replay format (:mod:`bench.replay_convert`) to a temporary directory
and replayed on a scratch database of its own; each replay's ``replay.json`` and ``report.md`` go to
``DIR/replay/<dataset>/``. Quick: the first LoCoMo conversation cut to its first ``QUICK_TURNS`` turns (with
the questions whose evidence lies there, asked the day after) and the first ``QUICK_DIALOGUES`` dialogues.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from bench.replay_convert import ASKED_AFTER, from_locomo, from_madial
from bench.replay_format import ReplayConversation, write_replay

QUICK_TURNS = 40
QUICK_DIALOGUES = 10
DATASETS = {"locomo": "LoCoMo (en)", "madial": "MADial-Bench (zh)"}


def run(locomo: Path, madial: Path, database_url: str | None, out_dir: Path, quick: bool = False) -> dict:
    """Both replays; their figures without the per-question rows (those are in each ``replay.json``)."""
    from bench import replay

    conversations = {"locomo": from_locomo(Path(locomo), 1 if quick else None),
                     "madial": from_madial(Path(madial), QUICK_DIALOGUES if quick else None)}
    if quick:
        conversations["locomo"] = [cut(conversation, QUICK_TURNS) for conversation in conversations["locomo"]]
    results: dict[str, object] = {"quick": quick}
    with tempfile.TemporaryDirectory(prefix="mnemo-replay-") as directory:
        for name, found in conversations.items():
            path = Path(directory) / f"{name}.jsonl"
            write_replay(path, found)
            figures = replay.run(path, Path(out_dir) / "replay" / name, database_url)
            results[name] = {key: value for key, value in figures.items() if key != "questions"}
    return results


def cut(conversation: ReplayConversation, turns: int) -> ReplayConversation:
    """The conversation's first ``turns`` turns, and its questions answered there, asked the day after."""
    kept = conversation.turns[:turns]
    ids = {turn.id for turn in kept}
    asked_at = kept[-1].at + ASKED_AFTER
    questions = tuple(replace(question, at=asked_at) for question in conversation.questions
                      if set(question.evidence) <= ids)
    return replace(conversation, turns=kept, questions=questions)


def report(figures: dict) -> str:
    from bench.replay_report import report as replay_report

    return "\n\n".join(f"{label}:\n{replay_report(figures[name])}" for name, label in DATASETS.items()
                       if name in figures)
