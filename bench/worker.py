"""Worker benchmark: extraction jobs per second per worker, and background LLM calls per user message.

Everything goes the product's way: user messages through ``ConversationService`` (turn and outbox
job in one transaction), the outbox relay onto the broker (Redis when a URL is given, otherwise the
PostgreSQL itself), and a real ``mnemo worker`` subprocess (prefork pool, the product default)
whose knowledge monitor and episode summariser call a fake LLM that answers at once.

1. Throughput: a backlog of extraction jobs, one message from each of many users (every job is one
   LLM call, no batching), drained by one worker at each concurrency; jobs/s is measured from the
   jobs' own ``done_at`` times.
2. Calls per message: users chat while a worker runs and their jobs are dispatched after each turn;
   then their sessions are aged past the idle limit and the beat's idle-close task is sent, so every
   episode summary is owed. The fake LLM's requests are counted per kind and divided by messages.
Writes ``worker.json``.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from bench.fakes.openai_server import FakeOpenAI
from bench.hot_path import REPLY, build_service, message_at, scratch_database
from bench.llm_calls import EPISODE_SUMMARY, EXTRACTION, SITTING, TURN, count_kinds, per_message, request_kind
from bench.prompt_cost import load_replays, prompt_tokens
from bench.worker_process import WORKER_START_SECONDS, running_worker, wait_for
from shared.conversation.extraction_timing import ExtractionTiming

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from shared.conversation.service import ConversationService

CONCURRENCIES = (1, 2)
BACKLOG_JOBS = {("redis", False): 1000, ("redis", True): 200, ("postgresql", False): 60, ("postgresql", True): 10}
"""Jobs per drain, by broker and quick. The PostgreSQL transport polls once a second, so it gets few."""
CHATTING_USERS = {False: 4, True: 1}
MESSAGES_PER_USER = {False: 32, True: 16}
"""User messages: 16 make 32 messages (both sides), past the 30 that owe an episode part; closing owes one more."""
SECONDS_PER_JOB_LIMIT = 1.0
"""How long a drain may take per job before the run gives up (a stuck worker, not a slow one)."""
CHAT_TAG = "chat"
AGE_SESSIONS = ("UPDATE sessions SET updated_at = updated_at - interval '1 day' WHERE closed_at IS NULL AND user_id IN "
                "(SELECT user_id FROM identities WHERE platform_user_id LIKE :pattern)")
"""The chatting users' sessions (not the backlog's) fall idle, as if the users had left a day ago."""
UNSUMMARISED = ("SELECT count(*) FROM conversation_turns WHERE episode_id IS NULL AND user_id IN "
                "(SELECT user_id FROM identities WHERE platform_user_id LIKE :pattern)")


def background_answer(request: dict) -> dict:
    """The fake LLM at once: the turn reply, one ADD of the first user line to read, a short summary (a closed
    sitting's shared call: both)."""
    kind = request_kind(request)
    if kind == TURN:
        return REPLY
    if kind in (EXTRACTION, SITTING):
        first = FIRST_LINE_TO_READ.search(request["messages"][-1]["content"])
        said = first.group(1)[:200] if first else ""
        operations = {"operations": [{"op": "ADD", "type": "event", "subject": "user", "predicate": "mentioned",
                                      "content": said, "tier": "long"}] if said else [{"op": "SKIP"}]}
        return {**operations, "episode": SUMMARY} if kind == SITTING else operations
    if kind == EPISODE_SUMMARY:
        return SUMMARY
    return {"operations": [{"op": "SKIP"}]}


FIRST_LINE_TO_READ = re.compile(r"^\[\d+\] USER \([^)]*\): (.+)$", re.MULTILINE)
SUMMARY = {"summary": "talked about their week", "entities": [], "importance": 1.0,
           "scratchpad": {"current_focus": "", "open_threads": [], "next_steps": []}, "core_summary": None}


def owed_jobs(engine, ids: list[int] | None = None) -> int:
    where = "status <> 'done'" + (" AND id = ANY(%(ids)s)" if ids is not None else "")
    with engine.connect() as connection:
        return connection.exec_driver_sql(f"SELECT count(*) FROM jobs_outbox WHERE {where}", {"ids": ids}).scalar_one()


def drain_seconds(engine, ids: list[int]) -> float:
    """Seconds from the first job done to the last (the worker's own clock, no polling in it)."""
    with engine.connect() as connection:
        row = connection.exec_driver_sql("SELECT extract(epoch FROM max(done_at) - min(done_at)) FROM jobs_outbox "
                                         "WHERE id = ANY(%(ids)s)", {"ids": ids}).scalar_one()
    return float(row)


@dataclass
class Bench:
    """What both measurements share: the scratch database, the fake LLM, the hot path and the relay."""

    url: str
    llm: FakeOpenAI
    service: ConversationService
    engine: Engine
    redis_url: str | None = None

    def send(self, job_ids: Iterable[int]) -> int:
        """The outbox relay: the jobs onto this run's broker."""
        from shared.lifecycle.outbox import dispatch_jobs
        from worker.tasks import send_task

        return dispatch_jobs(self.service.uow_factory, send_task, job_ids, datetime.now(UTC))

    def use_broker(self, redis_url: str | None) -> str:
        """Points the relay (and ``running_worker``) at Redis, or at the PostgreSQL; empties its queue."""
        from shared.app.bootstrap import broker_url
        from shared.settings import load_settings
        from worker.celery_app import configure

        self.redis_url = redis_url
        configure(broker_url(load_settings(redis_url=redis_url, database_url=self.url), self.url)).control.purge()
        return "redis" if redis_url else "postgresql"

    def worker(self, concurrency: int):
        return running_worker(self.url, self.redis_url, self.llm, concurrency)


def store_backlog(bench: Bench, texts: list[str], tag: str) -> list[int]:
    """One message from each of ``len(texts)`` new users, each owing its extraction at once (a backlog of one-turn
    reads, as a busy day of sittings that closed leaves); returns their jobs, left pending in the outbox."""
    async def send() -> None:
        for index, text in enumerate(texts):
            await bench.service.handle_message(message_at(f"{tag}-{index}", f"{tag}-{index}", text,
                                                          datetime.now(UTC)))

    config = bench.service.config
    bench.service.config = replace(config, extraction=ExtractionTiming(batch_turns=1))
    try:
        asyncio.run(send())
    finally:
        bench.service.config = config
    with bench.engine.connect() as connection:
        return list(connection.exec_driver_sql("SELECT id FROM jobs_outbox WHERE status = 'pending' ORDER BY id")
                    .scalars())


def throughput(bench: Bench, texts: list[str], concurrency: int, tag: str) -> dict:
    """Jobs/s of one worker draining ``len(texts)`` extraction jobs at ``concurrency``."""
    progress(f"worker: {len(texts)} extraction jobs, concurrency {concurrency}, {tag} broker…")
    ids = store_backlog(bench, texts, f"backlog-{tag}-{concurrency}")
    before = len(bench.llm.chat_requests())
    bench.send(ids)
    with bench.worker(concurrency):
        wait_for(lambda: owed_jobs(bench.engine, ids) == 0, WORKER_START_SECONDS + SECONDS_PER_JOB_LIMIT * len(ids),
                 "the backlog to drain")
    seconds = drain_seconds(bench.engine, ids)
    return {"concurrency": concurrency, "jobs": len(ids), "seconds": seconds,
            "jobs_per_s": (len(ids) - 1) / seconds if seconds else None,
            "llm_calls": count_kinds(bench.llm.chat_requests()[before:])}


def calls_per_message(bench: Bench, conversations: list[list[str]]) -> dict:
    """Background LLM calls per user message while users chat with a worker running."""
    from sqlalchemy import text

    from worker.tasks import send_task

    messages = sum(len(c) for c in conversations)
    progress(f"worker: {len(conversations)} users chatting, {messages} messages…")
    before = len(bench.llm.chat_requests())
    with bench.worker(concurrency=2):
        bench.service.dispatch = bench.send
        asyncio.run(_chat(bench.service, conversations))
        bench.service.dispatch = None
        wait_for(lambda: owed_jobs(bench.engine) == 0, WORKER_START_SECONDS + messages * 2, "the turns' jobs")
        with bench.engine.begin() as connection:
            connection.execute(text(AGE_SESSIONS), {"pattern": f"{CHAT_TAG}-%"})
        send_task("close_idle_sessions", {})
        wait_for(lambda: _unsummarised(bench.engine) == 0 and owed_jobs(bench.engine) == 0, WORKER_START_SECONDS,
                 "the idle sessions' summaries")
    bodies = bench.llm.chat_requests()[before:]
    calls = count_kinds(bodies)
    tokens = {kind: sum(prompt_tokens(body) for body in bodies if request_kind(body) == kind) for kind in calls}
    return {"users": len(conversations), "user_messages": messages, "llm_calls": calls,
            "per_message": per_message(calls, messages), "prompt_tokens_per_message": per_message(tokens, messages)}


def _unsummarised(engine) -> int:
    """The chatting users' turns in no episode yet."""
    from sqlalchemy import text

    with engine.connect() as connection:
        return connection.execute(text(UNSUMMARISED), {"pattern": f"{CHAT_TAG}-%"}).scalar_one()


async def _chat(service, conversations: list[list[str]]) -> None:
    for user, texts in enumerate(conversations):
        for index, text in enumerate(texts):
            who = f"{CHAT_TAG}-{user}"
            await service.handle_message(message_at(who, f"{who}-{index}", text, datetime.now(UTC)))


def run(locomo_path: Path, database_url: str | None, redis_url: str | None, out_dir: Path,
        quick: bool = False) -> dict:
    """Throughput on the PostgreSQL broker (and Redis when given), calls per message on the last of
    them, on one scratch database; writes ``worker.json`` and returns the figures."""
    started = time.perf_counter()
    lines = [m.text for replay in load_replays(Path(locomo_path)) for m in replay.messages]
    figures: dict = {"quick": quick, "pool": "prefork", "throughput": {}}
    with FakeOpenAI(models=("fake-chat",)) as llm, scratch_database(database_url) as url:
        llm.set_responder(background_answer)
        service, engine = build_service(url, llm, pool_size=2)
        bench, used = Bench(url, llm, service, engine), 0
        try:
            for broker in (None, redis_url) if redis_url else (None,):
                name = bench.use_broker(broker)
                jobs = BACKLOG_JOBS[(name, quick)]
                figures["throughput"][name] = [throughput(bench, _take(lines, jobs, used + n * jobs), c, name)
                                               for n, c in enumerate(CONCURRENCIES)]
                used += jobs * len(CONCURRENCIES)
            users = range(CHATTING_USERS[quick])
            length = MESSAGES_PER_USER[quick]
            chats = [_take(lines, length, used + u * length) for u in users]
            figures["calls_per_message"] = calls_per_message(bench, chats) | {"broker": name}
        finally:
            engine.dispose()
    figures["elapsed_s"] = round(time.perf_counter() - started, 1)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "worker.json").write_text(json.dumps(figures, indent=2))
    return figures


def _take(lines: list[str], count: int, start: int) -> list[str]:
    return [lines[(start + i) % len(lines)] for i in range(count)]


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def report(figures: dict) -> str:
    out = [f"worker{' (quick)' if figures['quick'] else ''}: one `mnemo worker` ({figures['pool']} pool), "
           f"instant fake LLM, {figures['elapsed_s']} s"]
    for broker, runs in figures["throughput"].items():
        for r in runs:
            rate = f"{r['jobs_per_s']:.1f} jobs/s" if r["jobs_per_s"] else "n/a"
            out.append(f"  {broker} broker, concurrency {r['concurrency']}: {r['jobs']} extraction jobs in "
                       f"{r['seconds']:.2f} s = {rate} (LLM calls: {r['llm_calls']})")
    c = figures["calls_per_message"]
    per = ", ".join(f"{kind} {value:.3f}" for kind, value in c["per_message"].items())
    out.append(f"  LLM calls per user message ({c['user_messages']} messages, {c['users']} users, {c['broker']} "
               f"broker): {per}")
    tokens = c["prompt_tokens_per_message"]
    background = sum(value for kind, value in tokens.items() if kind != TURN)
    out.append(f"  prompt tokens per user message: hot path {tokens.get(TURN, 0):.0f}, background {background:.0f} ("
               + ", ".join(f"{kind} {value:.0f}" for kind, value in tokens.items() if kind != TURN) + ")")
    return "\n".join(out)
