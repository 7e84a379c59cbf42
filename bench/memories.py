"""``mnemo bench memories``: what the offline responder remembers when real dialogues are replayed
through it — the junk rate and the coverage.

The development halves are replayed through the product's ``ConversationService`` with no model, on a
scratch database: every LoCoMo turn is a message from its speaker (one user per speaker, the clock at
the session's time), every MADial-Bench user line a message from its user (one session per dialogue).
Then the knowledge monitor's rule pass runs over every turn, as the worker does without a model. Each
memory stored (a new row) is judged by the rules of :mod:`bench.memory_judges`, independent of the
product's guard:

* **question**: its text asks something, or the sentence it came from ends with a question mark;
* **bot's words**: its text is found in a reply the bot gave that user before;
* **near-duplicate**: a memory active when it was stored says nearly the same;
* **recalled restatement**: it nearly repeats a memory recalled for the turn it came from.

The junk rate is the share of stored memories with any of these (goal: at most ``JUNK_GOAL``). The
coverage is the share of LoCoMo's annotated observations (facts about a speaker, with the turns that
state them) for which a memory sharing a keyword with the observation was stored from such a turn;
MADial-Bench annotates no facts in its dialogues, so it has no coverage figure. Writes
``memories.json`` and ``memories.md``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.datasets import load_locomo, load_locomo_observations, load_madial_user_lines
from bench.memory_judges import JUNK_KINDS, Said, judge
from bench.quality import Progress

JUNK_GOAL = 0.02
QUICK_CONVERSATIONS = 1
QUICK_DIALOGUES = 20
SECONDS_BETWEEN_MESSAGES = 30
MADIAL_START = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)
EXAMPLES_KEPT = 8


@dataclass
class Tally:
    """What one data set's replay stored, and how much of it is junk."""

    messages: int = 0
    stored: int = 0
    junk: dict[str, int] = field(default_factory=lambda: dict.fromkeys(JUNK_KINDS, 0))
    junk_memories: int = 0
    examples: list[dict] = field(default_factory=list)
    observations: int = 0
    covered: int = 0

    def figures(self) -> dict:
        return {"messages": self.messages, "stored": self.stored, "junk": self.junk_memories,
                "junk_by_kind": dict(self.junk), "junk_rate": _share(self.junk_memories, self.stored),
                "observations": self.observations, "covered": self.covered,
                "coverage": _share(self.covered, self.observations) if self.observations else None,
                "junk_examples": self.examples}


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def run(locomo_path: Path, madial_dir: Path, database_url: str | None, out_dir: Path, quick: bool = False) -> dict:
    """Both replays on a scratch database; writes ``memories.json`` and ``memories.md``; returns the figures."""
    from bench.hot_path import scratch_database

    started = time.perf_counter()
    conversations = load_locomo(Path(locomo_path), QUICK_CONVERSATIONS if quick else None)
    observations = load_locomo_observations(Path(locomo_path), QUICK_CONVERSATIONS if quick else None)
    dialogues = load_madial_user_lines(Path(madial_dir), QUICK_DIALOGUES if quick else None)
    with scratch_database(database_url) as url:
        locomo = _replay(url, _locomo_messages(conversations), "LoCoMo turns", observations)
        madial = _replay(url, _madial_messages(dialogues), "MADial lines", {})
    figures: dict[str, Any] = {"quick": quick, "goal_junk_rate": JUNK_GOAL, "locomo": locomo.figures(),
                               "madial": madial.figures(), "elapsed_s": round(time.perf_counter() - started, 1)}
    total = Tally(messages=locomo.messages + madial.messages, stored=locomo.stored + madial.stored,
                  junk_memories=locomo.junk_memories + madial.junk_memories,
                  junk={kind: locomo.junk[kind] + madial.junk[kind] for kind in JUNK_KINDS},
                  observations=locomo.observations, covered=locomo.covered)
    figures["all"] = {**total.figures(), "junk_examples": []}
    figures["all"]["goal_met"] = figures["all"]["junk_rate"] <= JUNK_GOAL
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "memories.json").write_text(json.dumps(figures, indent=2, ensure_ascii=False))
    (out_dir / "memories.md").write_text(f"# Memories stored offline\n\n```\n{report(figures)}\n```\n")
    return figures


def _locomo_messages(conversations) -> list[tuple[str, str, str, datetime, str]]:
    """(sample, user, message id, time, text) of every LoCoMo turn, in order."""
    messages = []
    for conversation in conversations:
        for index, turn in enumerate(conversation.turns):
            at = turn.at + timedelta(seconds=SECONDS_BETWEEN_MESSAGES * index)
            messages.append((conversation.sample_id, f"{conversation.sample_id}:{turn.speaker}", turn.dia_id, at,
                             turn.text))
    return messages


def _madial_messages(dialogues) -> list[tuple[str, str, str, datetime, str]]:
    messages = []
    for number, (dialogue_id, lines) in enumerate(dialogues):
        start = MADIAL_START + timedelta(days=number)
        messages += [("madial", "madial:user-1", f"{dialogue_id}:{index}",
                      start + timedelta(seconds=SECONDS_BETWEEN_MESSAGES * index), line)
                     for index, line in enumerate(lines)]
    return messages


def _replay(url: str, messages: list, label: str, observations: dict) -> Tally:
    """Sends every message, runs the rule extraction, then judges what was stored."""
    from shared.conversation.config import ConversationConfig
    from shared.conversation.service import ConversationService
    from shared.db.engine import make_engine, session_factory
    from shared.repositories.uow import UnitOfWork
    from shared.settings import load_settings

    engine = make_engine(url)
    factory = session_factory(engine)
    new_uow = lambda: UnitOfWork(factory)  # noqa: E731
    clock = _Clock()
    service = ConversationService(new_uow, ConversationConfig.from_settings(load_settings(database_url=url)),
                                  chat_model=None, clock=clock)
    said: dict[str, Said] = {}
    progress = Progress(label, len(messages))
    try:
        for sample, user, message_id, at, text in messages:
            clock.now = at
            reply = asyncio.run(service.handle_message(_message(sample, user, message_id, at, text)))
            said[f"{user}|{message_id}"] = Said(user, text, reply.text, tuple(m.content for m in reply.memories_used))
            progress.step()
        _rule_pass(new_uow, clock.now + timedelta(minutes=1))
        return _judge_all(new_uow, said, observations)
    finally:
        engine.dispose()


class _Clock:
    def __init__(self) -> None:
        self.now = MADIAL_START

    def __call__(self) -> datetime:
        return self.now


def _message(sample: str, user: str, message_id: str, at: datetime, text: str):
    from shared.conversation.messages import IncomingMessage

    return IncomingMessage(platform="console", chat_id=f"bench-{sample}-{user}", user_id=user, text=text, sent_at=at,
                           display_name=user.split(":")[-1], message_id=message_id)


def _rule_pass(new_uow, now: datetime) -> None:
    """The knowledge monitor without a model, over every turn not yet extracted (as the worker runs it)."""
    from sqlalchemy import select

    from shared.db.models import ConversationTurn
    from shared.lifecycle.extraction import extract_turns

    with new_uow() as uow:
        turn_ids = list(uow.session.scalars(select(ConversationTurn.id).where(
            ConversationTurn.role == "user", ConversationTurn.extracted.is_(False)).order_by(ConversationTurn.id)))
    for start in range(0, len(turn_ids), 200):
        extract_turns(new_uow, None, turn_ids[start:start + 200], [], now)


def _judge_all(new_uow, said: dict[str, Said], observations: dict) -> Tally:
    """Judges every stored memory in the order it was stored, against what was active at that moment."""
    from sqlalchemy import select

    from shared.db.memory_models import Memory
    from shared.db.models import ConversationTurn, Identity
    from shared.search.tokenizer import query_terms

    tally = Tally(messages=len(said))
    with new_uow() as uow:
        rows = uow.session.execute(
            select(Memory, Identity.platform_user_id, ConversationTurn.platform_message_id)
            .join(Identity, Identity.user_id == Memory.user_id)
            .outerjoin(ConversationTurn, ConversationTurn.id == Memory.source_turn_id)
            .order_by(Memory.id)).all()
    replies: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for key, item in said.items():
        replies[item.user].append((key.split("|", 1)[1], item.reply))
    order = {key: index for index, key in enumerate(said)}
    replaced_by: dict[int, list[int]] = defaultdict(list)
    for memory, _, _ in rows:
        if memory.superseded_by is not None:
            replaced_by[memory.superseded_by].append(memory.id)
    active: dict[str, dict[int, str]] = defaultdict(dict)
    stored_from: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for memory, user, message_id in rows:
        key = f"{user}|{message_id}"
        item = said.get(key) or Said(user, "", "", ())
        earlier = [reply for other, reply in replies[user] if order.get(f"{user}|{other}", 0) < order.get(key, 0)]
        kinds = judge(memory.content, item, earlier, list(active[user].values()))
        tally.stored += 1
        for kind in kinds:
            tally.junk[kind] += 1
        if kinds:
            tally.junk_memories += 1
            if len(tally.examples) < EXAMPLES_KEPT:
                tally.examples.append({"memory": memory.content, "said": item.text[:200], "kinds": kinds})
        for old_id in replaced_by.get(memory.id, ()):
            active[user].pop(old_id, None)
        active[user][memory.id] = memory.content
        stored_from[user].append((message_id or "", memory.content))
    for sample, notes in observations.items():
        for note in notes:
            tally.observations += 1
            terms = set(query_terms(note.text))
            found = stored_from.get(f"{sample}:{note.speaker}", [])
            if any(message_id in note.evidence and terms & set(query_terms(content)) for message_id, content in found):
                tally.covered += 1
    return tally


def report(figures: dict) -> str:
    """The figures as a small table."""
    lines = [f"{'replay':<14}{'messages':>9}{'stored':>8}{'junk':>6}{'questions':>10}{'bot words':>10}"
             f"{'near-dup':>9}{'recalled':>9}{'junk rate':>10}{'coverage':>10}"]
    for name, label in (("locomo", "LoCoMo (en)"), ("madial", "MADial (zh)"), ("all", "all")):
        part = figures[name]
        kinds = part["junk_by_kind"]
        coverage = "—" if part["coverage"] is None else f"{part['coverage']:.1%}"
        lines.append(f"{label:<14}{part['messages']:>9}{part['stored']:>8}{part['junk']:>6}{kinds['question']:>10}"
                     f"{kinds['bot_words']:>10}{kinds['near_duplicate']:>9}{kinds['recalled_restatement']:>9}"
                     f"{part['junk_rate']:>10.1%}{coverage:>10}")
    verdict = "met" if figures["all"]["goal_met"] else "NOT met"
    lines.append(f"goal: junk rate ≤ {figures['goal_junk_rate']:.0%} ({verdict}); coverage = LoCoMo observations "
                 f"with a memory stored from their evidence turn ({figures['locomo']['covered']}/"
                 f"{figures['locomo']['observations']})")
    for name in ("locomo", "madial"):
        for example in figures[name]["junk_examples"][:3]:
            lines.append(f"  junk ({', '.join(example['kinds'])}): {example['memory']!r} from {example['said']!r}")
    return "\n".join(lines)
