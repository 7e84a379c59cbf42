"""Loaders for the retrieval-quality benchmarks: LoCoMo (English) and MADial-Bench (Chinese).

Turns the files described in ``../shared/data/README.md`` into plain records (turns with their
session times, questions with resolved evidence, a memory archive, dialogues cut at the test turn),
so the benchmark itself never touches the raw formats.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
"""Categories with an answer in the conversation; 5 (adversarial) has none and is not evaluated."""
SESSION_DATE_FORMAT = "%I:%M %p on %d %B, %Y"
"""LoCoMo's ``session_N_date_time``, e.g. "1:56 pm on 8 May, 2023"."""
ASSISTANT_SPEAKER = "Assistant"

_DIA_ID = re.compile(r"D(\d+):(\d+)")
_SESSION_KEY = re.compile(r"session_(\d+)")
_DIALOGUE_LINE = re.compile(r"^<([^>]*)>\s*[:：]\s*(.*)$", re.DOTALL)
_QUOTES = "\"'“”‘’「」"


@dataclass(frozen=True)
class Turn:
    """One LoCoMo turn: what becomes one memory."""

    dia_id: str
    session: int
    text: str
    at: datetime
    speaker: str | None = None


@dataclass(frozen=True)
class Question:
    question: str
    category: int
    evidence: tuple[str, ...]
    """Dia ids that resolve to a turn of the conversation (never empty)."""


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    skipped_questions: int
    """Questions of categories 1-4 whose evidence resolved to no turn."""


@dataclass(frozen=True)
class ArchiveMemory:
    """One MADial memory of the user's archive."""

    id: str
    text: str
    at: datetime


@dataclass(frozen=True)
class Observation:
    """One fact LoCoMo's annotators noted about a speaker, with the turns that state it."""

    speaker: str
    text: str
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Dialogue:
    id: str
    user_lines: tuple[str, ...]
    """The user's lines before the test turn, oldest first, without speaker prefix and quotes."""
    relevant: tuple[str, ...]


def parse_session_date(text: str) -> datetime:
    """"1:56 pm on 8 May, 2023" → 2023-05-08 13:56 UTC."""
    return datetime.strptime(" ".join(text.split()), SESSION_DATE_FORMAT).replace(tzinfo=UTC)


def split_evidence(raw: Iterable[str]) -> list[str]:
    """Evidence ids, with malformed strings ("D8:6; D9:17") split and junk ("D") dropped."""
    return [f"D{session}:{turn}" for item in raw for session, turn in _DIA_ID.findall(str(item))]


def session_of(dia_id: str) -> int:
    return int(dia_id[1:].split(":", 1)[0])


def load_locomo(path: Path, limit: int | None = None) -> list[Conversation]:
    """The conversations of a LoCoMo file (the first ``limit`` of them when given)."""
    samples = json.loads(Path(path).read_text(encoding="utf-8"))
    return [_conversation(sample) for sample in samples[:limit]]


def _conversation(sample: dict) -> Conversation:
    turns = _turns(sample["conversation"])
    known = {turn.dia_id for turn in turns}
    questions, skipped = [], 0
    for qa in sample.get("qa", []):
        if qa.get("category") not in LOCOMO_CATEGORIES:
            continue
        evidence = tuple(dict.fromkeys(i for i in split_evidence(qa.get("evidence", [])) if i in known))
        if evidence:
            questions.append(Question(str(qa["question"]), int(qa["category"]), evidence))
        else:
            skipped += 1
    return Conversation(str(sample.get("sample_id", "")), turns, tuple(questions), skipped)


def _turns(conversation: dict) -> tuple[Turn, ...]:
    turns = []
    for key, value in conversation.items():
        match = _SESSION_KEY.fullmatch(key)
        if not match or not isinstance(value, list):
            continue
        session = int(match.group(1))
        at = parse_session_date(conversation[f"{key}_date_time"])
        for turn in value:
            parts = [turn.get("text"), turn.get("blip_caption")]
            text = " ".join(str(part).strip() for part in parts if part and str(part).strip())
            if text:
                turns.append(Turn(str(turn["dia_id"]), session, text, at, turn.get("speaker")))
    return tuple(sorted(turns, key=lambda t: (t.session, t.at)))


def load_locomo_observations(path: Path, limit: int | None = None) -> dict[str, list[Observation]]:
    """The annotated observations of each conversation (the first ``limit``), by sample id."""
    samples = json.loads(Path(path).read_text(encoding="utf-8"))
    found: dict[str, list[Observation]] = {}
    for sample in samples[:limit]:
        notes = found.setdefault(str(sample.get("sample_id", "")), [])
        for session in (sample.get("observation") or {}).values():
            for speaker, items in session.items():
                notes += [Observation(speaker, str(item[0]), tuple(split_evidence(item[1:])))
                          for item in items if isinstance(item, list) and item]
    return found


def load_madial_user_lines(directory: Path, limit: int | None = None) -> list[tuple[str, tuple[str, ...]]]:
    """Every MADial dialogue's id and all of its user's lines (not only those before the test turn)."""
    dialogues = []
    for record in _jsonl(Path(directory) / "dialogues-dev.jsonl")[:limit]:
        lines = (clean_dialogue_line(line) for line in record["dialogue"])
        dialogues.append((str(record["id"]), tuple(text for speaker, text in lines
                                                   if text and speaker not in (ASSISTANT_SPEAKER, "BOD", "EOD"))))
    return dialogues


def clean_dialogue_line(line: str) -> tuple[str, str]:
    """'<Bart>:"我今天很开心！"\\n' → ("Bart", "我今天很开心！"); markers such as "<BOD>" → ("BOD", "")."""
    line = line.strip()
    match = _DIALOGUE_LINE.match(line)
    if not match:
        return (line.strip("<>"), "") if line.startswith("<") and line.endswith(">") else ("", line.strip(_QUOTES))
    return match.group(1).strip(), match.group(2).strip().strip(_QUOTES).strip()


def load_madial(directory: Path, limit: int | None = None) -> tuple[list[ArchiveMemory], list[Dialogue]]:
    """The memory archive and the dialogues (the first ``limit`` of them when given) of one user."""
    directory = Path(directory)
    memories = []
    for record in _jsonl(directory / "memories-dev.jsonl"):
        for key, value in record.items():
            at = datetime.fromisoformat(str(value["time"])).replace(tzinfo=UTC)
            memories.append(ArchiveMemory(str(value.get("id", key)), str(value["event"]), at))
    dialogues = [_dialogue(record) for record in _jsonl(directory / "dialogues-dev.jsonl")]
    return memories, dialogues[:limit]


def _dialogue(record: dict) -> Dialogue:
    test_turn = min(int(index) for index in record["test-turn"])
    lines = (clean_dialogue_line(line) for line in record["dialogue"][:test_turn])
    user_lines = tuple(text for speaker, text in lines if text and speaker != ASSISTANT_SPEAKER)
    return Dialogue(str(record["id"]), user_lines, tuple(str(i) for i in record["relevant-id"]))


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
