"""``mnemo bench replay FILE --out DIR``: recall measured through the product's own write path.

Each conversation of the file (:mod:`bench.replay_format`) gets a fresh user on a scratch database. Its
memories go in through the import (``MemoryCommands.import_data``); its turns are played at their times as
live messages (:mod:`bench.replay_play`), with the worker's jobs, idle sittings and nightly maintenance in
between (:mod:`bench.replay_worker`); each question is asked at its time through step 1 at the product's
defaults, rolled back, and what its prompt shows is read in the file's ids (:mod:`bench.replay_evidence`).
With ``LLM_BASE_URL`` set the configured model answers (its memory update) and extracts; otherwise the
offline rules do. Writes ``replay.json`` and ``report.md`` (:mod:`bench.replay_report`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from bench import replay_model
from bench.replay_evidence import Asked, Baseline, Provenance, ask, in_order
from bench.replay_format import ReplayConversation, ReplayQuestion, read_replay
from bench.replay_junk import Junk
from bench.replay_play import PLATFORM, Player, ReplayClock, Script, ScriptedModel, ScriptedOffline, steps
from bench.replay_report import figures_of, report
from bench.replay_worker import ReplayWorker, worker_context

if TYPE_CHECKING:
    from shared.conversation.config import ConversationConfig
    from shared.conversation.service import ConversationService
    from shared.repositories.uow import UnitOfWork
    from shared.settings import Settings

QUICK_CONVERSATIONS = 2
PROGRESS_SECONDS = 1.0
IMPORT_LEAD = timedelta(minutes=1)
"""How long before the conversation's first moment at which its memories are imported."""


@dataclass
class Wiring:
    """What every conversation of one run shares: settings, database, model, the hot path and the worker."""

    settings: Settings
    config: ConversationConfig
    new_uow: Callable[[], UnitOfWork]
    clock: ReplayClock
    script: Script
    service: ConversationService
    worker: ReplayWorker
    run_tag: str


def run(path: Path, out_dir: Path, database_url: str | None = None, *, limit: int | None = None,
        quick: bool = False, ask_after_days: int = 0, fake_model: bool = False) -> dict:
    """Replays the file's conversations (the first ``limit``; two with ``quick``) and writes the figures.
    ``ask_after_days``: every question is asked that many days after its own time (the nightly maintenance of
    every day between runs first), to measure what the lifecycle keeps. ``fake_model``: the model is
    :mod:`bench.replay_model`'s fake, and the model calls per user message are counted."""
    from bench.hot_path import scratch_database

    started = time.perf_counter()
    conversations = read_replay(Path(path), QUICK_CONVERSATIONS if quick and limit is None else limit)
    if ask_after_days:
        conversations = [asked_later(conversation, ask_after_days) for conversation in conversations]
    rows: list[dict] = []
    junk = Junk()
    with ExitStack() as stack:
        llm = stack.enter_context(replay_model.fake_model()) if fake_model else None
        url = stack.enter_context(scratch_database(database_url))
        stack.enter_context(_product_logs_quiet())
        wiring = stack.enter_context(_wired(url, llm))
        progress = Progress(conversations)
        for number, conversation in enumerate(conversations):
            progress.next_conversation()
            found, stored = replay_conversation(wiring, conversation, number, progress)
            rows += found
            junk.add(stored)
        progress.done()
    user_messages = sum(1 for conversation in conversations for turn in conversation.turns if turn.role == "user")
    figures = figures_of(rows, junk) | {
        "file": str(path), "conversations": len(conversations), "quick": quick,
        "model": wiring.settings.llm_model if wiring.settings.llm_base_url else "offline rules",
        "prompt": {"retrieval_limit": wiring.config.retrieval_limit,
                   "memory_budget_tokens": wiring.config.memory_budget_tokens},
        "worker": {"jobs_run": wiring.worker.jobs_run, "nights": wiring.worker.nights},
        "ask_after_days": ask_after_days,
        "model_calls": replay_model.model_calls(llm, user_messages) if llm is not None else None,
        "elapsed_s": round(time.perf_counter() - started, 1)}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "replay.json").write_text(json.dumps(figures, indent=2, ensure_ascii=False))
    (out_dir / "report.md").write_text(f"# Replay: recall through the write path\n\n```\n{report(figures)}\n```\n")
    return figures


def asked_later(conversation: ReplayConversation, days: int) -> ReplayConversation:
    """The conversation with every question asked ``days`` later than its own time."""
    later = tuple(replace(question, at=question.at + timedelta(days=days)) for question in conversation.questions)
    return replace(conversation, questions=later)


def replay_conversation(wiring: Wiring, conversation: ReplayConversation, number: int,
                        progress: Progress) -> tuple[list[dict], Junk]:
    """One conversation for a fresh user: import, turns and questions in time order; its question rows."""
    idle = wiring.config.idle
    timeline = sorted([(step.at, 0, index, step) for index, step in enumerate(steps(conversation.turns, idle))]
                      + [(q.at, 1, index, q) for index, q in enumerate(conversation.questions)],
                      key=lambda event: event[:3])
    start = min((event[0] for event in timeline), default=None)
    if start is None:
        return [], Junk()
    player = Player(wiring.service, wiring.new_uow, wiring.script, wiring.clock, conversation,
                    f"replay-{wiring.run_tag}-{number}")
    wiring.clock.now = start - IMPORT_LEAD
    player.open_account()
    provenance = Provenance(player, import_memories(wiring, player))
    provenance.note()
    wiring.worker.after_drain = provenance.note
    baseline = Baseline(conversation, wiring.config)
    rows, last_activity, since = [], None, wiring.clock.now
    with asyncio.Runner() as loop:
        for at, _, index, event in timeline:
            wiring.worker.catch_up(since, at, last_activity)
            since = at
            if isinstance(event, ReplayQuestion):
                rows.append(_row(conversation, event, ask(provenance, wiring.config, event), baseline.ask(event),
                                 stated=bool(provenance.stated.intersection(event.evidence))))
                progress.question()
                continue
            loop.run(player.play(event, index))
            last_activity = at
            wiring.worker.drain()
            progress.turn(1 + len(event.replies))
    return rows, provenance.junk


def import_memories(wiring: Wiring, player: Player) -> dict[int, tuple[str, ...]]:
    """The conversation's memories through the product's import; database memory id → the file's memory ids."""
    from shared.commands.service import Caller, MemoryCommands

    memories = player.conversation.memories
    if not memories:
        return {}
    document = {"format": "mnemo-export", "version": 1,
                "memories": [{"id": index + 1, "type": "event", "content": m.text, "created_at": m.at.isoformat()}
                             for index, m in enumerate(memories)]}
    commands = MemoryCommands(wiring.new_uow, default_timezone=player.conversation.user.timezone, clock=wiring.clock)
    caller = Caller(PLATFORM, player.platform_user_id, display_name=player.conversation.user.name,
                    locale=player.conversation.user.language)
    commands.import_data(caller, json.dumps(document, ensure_ascii=False).encode("utf-8"))
    with wiring.new_uow() as uow:
        rows, _ = uow.memories.page(player.user_id, limit=len(memories))
    stored: dict[tuple, list[int]] = {}
    for row in sorted(rows, key=lambda row: row.id):  # inserted in the file's order
        stored.setdefault((row.content, row.created_at), []).append(row.id)
    found: dict[int, tuple[str, ...]] = {}
    for memory in memories:  # an entry the import skipped as a duplicate is the memory it duplicates
        ids = stored.get((memory.text, memory.at), [])
        memory_id = ids.pop(0) if len(ids) > 1 else ids[0] if ids else None
        if memory_id is not None:
            found[memory_id] = (*found.get(memory_id, ()), memory.id)
    return found


def _row(conversation: ReplayConversation, question, asked: Asked, baseline: Asked, *, stated: bool) -> dict:
    shown = in_order(question.evidence, asked.shown)
    roles = {turn.id: turn.role for turn in conversation.turns}
    return {"conversation": conversation.id, "id": question.id, "kind": question.kind,
            "sides": sorted({roles.get(evidence, "memory") for evidence in question.evidence}),
            "stated": stated, "evidence": list(question.evidence), "shown": shown, "evidence_in_prompt": bool(shown),
            "all_evidence_in_prompt": len(shown) == len(question.evidence), "context_tokens": asked.tokens,
            "baseline_shown": in_order(question.evidence, baseline.shown), "baseline_context_tokens": baseline.tokens}


@contextmanager
def _wired(url: str, llm=None) -> Iterator[Wiring]:
    from bench.prompt_evidence import product_config
    from shared.conversation.service import ConversationService
    from shared.db.engine import make_engine, session_factory
    from shared.llm.client import ChatModel
    from shared.repositories.uow import UnitOfWork
    from shared.settings import load_settings
    from worker.context import running_with

    settings, config = load_settings(), product_config()
    if llm is not None:
        settings = settings.model_copy(update={"llm_base_url": llm.base_url, "llm_model": "fake-chat",
                                               "llm_server_slots": 0})
    engine = make_engine(url)
    sessions = session_factory(engine)
    clock, script, model = ReplayClock(datetime.now(UTC)), Script(), ChatModel.from_settings(settings)
    service = ConversationService(lambda: UnitOfWork(sessions), config, offline=ScriptedOffline(script), clock=clock,
                                  chat_model=ScriptedModel(model, script) if model is not None else None)
    ctx = worker_context(settings, engine, model, clock)
    try:
        with running_with(ctx):
            yield Wiring(settings, config, lambda: UnitOfWork(sessions), clock, script, service,
                         ReplayWorker(ctx, clock, config.idle), uuid.uuid4().hex[:8])
    finally:
        engine.dispose()


@contextmanager
def _product_logs_quiet() -> Iterator[None]:
    """The product's per-message INFO lines off while thousands of messages are played (warnings stay)."""
    product = logging.getLogger("shared")
    level = product.level
    product.setLevel(max(logging.WARNING, level))
    try:
        yield
    finally:
        product.setLevel(level)


class Progress:
    """One line on stderr, rewritten: conversations, turns and questions done."""

    def __init__(self, conversations: list[ReplayConversation]) -> None:
        self.total = (len(conversations), sum(len(c.turns) for c in conversations),
                      sum(len(c.questions) for c in conversations))
        self.conversation, self.turns, self.questions = 0, 0, 0
        self.started = self.shown = time.perf_counter()

    def next_conversation(self) -> None:
        self.conversation += 1
        self._show()

    def turn(self, count: int) -> None:
        self.turns += count
        self._show()

    def question(self) -> None:
        self.questions += 1
        self._show()

    def _show(self) -> None:
        if time.perf_counter() - self.shown < PROGRESS_SECONDS and self.questions < self.total[2]:
            return
        self.shown = time.perf_counter()
        conversations, turns, questions = self.total
        print(f"\rreplay: conversation {self.conversation}/{conversations}, turns {self.turns}/{turns}, "
              f"questions {self.questions}/{questions}, {time.perf_counter() - self.started:.0f} s",
              end="", file=sys.stderr, flush=True)

    def done(self) -> None:
        print(file=sys.stderr, flush=True)
