"""The development halves of LoCoMo and MADial-Bench in the replay format (``--from-locomo``, ``--from-madial``).

LoCoMo: one conversation per sample; ``speaker_a`` is the user, ``speaker_b`` the bot; each session's turns
are 30 seconds apart from the session's time, a shared photo's caption is written "[shares a photo: …]";
questions of categories 1-4 (5 has no answer) are asked the day after the last session, with the dia ids
("D1:3") that resolve to a turn as evidence and the category's name as kind.

MADial-Bench: one conversation per dialogue, each a fresh user bringing the whole memory archive (memories
at their ``time``, ids the archive's); the dialogue's lines before the test turn are the turns (the user's
as user, ``<Assistant>``'s as assistant) but for the user's last one, which is the question; its evidence is
the relevant ids found in the archive. The dialogues are held the day after the latest memory.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.datasets import ASSISTANT_SPEAKER, LOCOMO_CATEGORIES, clean_dialogue_line, parse_session_date, split_evidence
from bench.replay_format import ReplayConversation, ReplayMemory, ReplayQuestion, ReplayTurn, ReplayUser

LINE_GAP = timedelta(seconds=30)
ASKED_AFTER = timedelta(days=1)
MADIAL_HOUR = 12
"""The MADial dialogues start at this hour (UTC) the day after the latest memory."""
MADIAL_USER = ReplayUser(name="Bart", language="zh", timezone="Asia/Shanghai")
LOCOMO_LANGUAGE, LOCOMO_TIMEZONE = "en", "UTC"
MADIAL_KIND = "madial"
_SESSION_KEY = re.compile(r"session_(\d+)")
_MARKERS = ("BOD", "EOD")


def from_locomo(path: Path, limit: int | None = None) -> list[ReplayConversation]:
    """The samples of a LoCoMo file (the first ``limit``) as replay conversations."""
    samples = json.loads(Path(path).read_text(encoding="utf-8"))
    return [_locomo_conversation(sample) for sample in samples[:limit]]


def _locomo_conversation(sample: dict) -> ReplayConversation:
    conversation = sample["conversation"]
    user, bot = str(conversation["speaker_a"]), str(conversation["speaker_b"])
    turns = []
    for number in sorted(int(m.group(1)) for key in conversation if (m := _SESSION_KEY.fullmatch(key))):
        lines = conversation[f"session_{number}"]
        if not isinstance(lines, list):
            continue
        start = parse_session_date(conversation[f"session_{number}_date_time"])
        for index, line in enumerate(lines):
            role = "user" if line.get("speaker") == user else "assistant" if line.get("speaker") == bot else None
            text = locomo_text(line)
            if role and text:
                turns.append(ReplayTurn(str(line["dia_id"]), start + LINE_GAP * index, role, text))
    turns.sort(key=lambda turn: turn.at)
    known = {turn.id for turn in turns}
    asked_at = max(turn.at for turn in turns) + ASKED_AFTER
    questions = []
    for index, qa in enumerate(sample.get("qa", [])):
        evidence = tuple(dict.fromkeys(i for i in split_evidence(qa.get("evidence", [])) if i in known))
        if qa.get("category") in LOCOMO_CATEGORIES and evidence:
            questions.append(ReplayQuestion(f"q{index}", asked_at, str(qa["question"]), evidence,
                                            LOCOMO_CATEGORIES[qa["category"]]))
    return ReplayConversation(str(sample.get("sample_id", "")), ReplayUser(user, LOCOMO_LANGUAGE, LOCOMO_TIMEZONE),
                              (), tuple(turns), tuple(questions))


def locomo_text(line: dict) -> str:
    """A LoCoMo turn's words, with the caption of a photo it shares."""
    text = str(line.get("text") or "").strip()
    caption = str(line.get("blip_caption") or "").strip()
    shared = f"[shares a photo: {caption}]" if caption else ""
    return " ".join(part for part in (text, shared) if part)


def from_madial(directory: Path, limit: int | None = None) -> list[ReplayConversation]:
    """MADial-Bench's dialogues (the first ``limit``), each a conversation with the whole archive imported."""
    directory = Path(directory)
    memories = tuple(_archive(directory / "memories-dev.jsonl"))
    known = {memory.id for memory in memories}
    start = datetime.combine((max(m.at for m in memories) + ASKED_AFTER).date(), datetime.min.time(), UTC)
    start += timedelta(hours=MADIAL_HOUR)
    conversations = []
    for record in _jsonl(directory / "dialogues-dev.jsonl")[:limit]:
        conversation = _madial_conversation(record, memories, known, start)
        if conversation is not None:
            conversations.append(conversation)
    return conversations


def _archive(path: Path) -> list[ReplayMemory]:
    """The archive's memories at their ``time``; one without a readable time is placed at the earliest one."""
    entries = [(str(value.get("id", key)), str(value.get("time", "")), str(value["event"]))
               for record in _jsonl(path) for key, value in record.items()]
    times = {memory_id: _date(when) for memory_id, when, _ in entries}
    earliest = min((at for at in times.values() if at is not None), default=datetime(2020, 1, 1, tzinfo=UTC))
    return [ReplayMemory(memory_id, times[memory_id] or earliest, text) for memory_id, _, text in entries]


def _date(text: str) -> datetime | None:
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _madial_conversation(record: dict, memories: tuple[ReplayMemory, ...], known: set[str],
                         start: datetime) -> ReplayConversation | None:
    test_turn = min(int(index) for index in record["test-turn"])
    lines = [clean_dialogue_line(line) for line in record["dialogue"][:test_turn]]
    lines = [(speaker, text) for speaker, text in lines if text and speaker not in _MARKERS]
    users = [index for index, (speaker, _) in enumerate(lines) if speaker != ASSISTANT_SPEAKER]
    evidence = tuple(dict.fromkeys(str(i) for i in record.get("relevant-id", []) if str(i) in known))
    if not users or not evidence:
        return None
    dialogue_id = str(record["id"])
    turns = tuple(ReplayTurn(f"d{dialogue_id}:{index}", start + LINE_GAP * index,
                             "assistant" if speaker == ASSISTANT_SPEAKER else "user", text)
                  for index, (speaker, text) in enumerate(lines[:users[-1]]))
    question = ReplayQuestion(f"d{dialogue_id}:{users[-1]}", start + LINE_GAP * users[-1], lines[users[-1]][1],
                              evidence, MADIAL_KIND)
    name = lines[users[-1]][0] or MADIAL_USER.name
    return ReplayConversation(f"madial-{dialogue_id}", ReplayUser(name, MADIAL_USER.language, MADIAL_USER.timezone),
                              memories, turns, (question,))


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
