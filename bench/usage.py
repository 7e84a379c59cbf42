"""Usage benchmark: reading usage at a million recorded requests, and recording one turn's.

Fills a scratch database with ``rows`` requests of ``users`` users over the last 30 UTC days (and their
daily sums, as ``UsageRepository.record`` keeps them), then times, through the product's own code: the
quota check of a message (one user's tokens today), ``/usage`` (today, 7 and 30 days), a group's tokens
today, the operators' 30-day report, and recording a turn's two requests (the hot path's addition: the
statement alone, inside a transaction, as in the turn's). For comparison it also times the operators'
top users summed from the requests themselves.

The requests come in active user-days of ``per_user_day`` requests (default 50: 20 answers with their
20 query embeddings, 6 extractions and one each of episode, review, dedup and embedding), each user-day
in one chat: a companion's active user writes a few dozen messages on the days they write at all.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import text

from bench.hot_path import scratch_database
from bench.stats import percentile

DAYS = 30
CHATS_PER_USER = 2
KINDS = ("ARRAY[" + ",".join(["'turn'"] * 20 + ["'turn_embedding'"] * 20 + ["'extraction'"] * 6
                             + ["'episode'", "'review'", "'dedup'", "'embedding'"]) + "]")
"""The requests of one active user-day, by position; reviews, dedup and embeddings have no chat."""
KINDS_PER_DAY = 50
CHATLESS_FROM = 47
FILL = (
    text("INSERT INTO users (id) SELECT g FROM generate_series(1, :users) AS g"),
    text(f"""
INSERT INTO llm_usage (user_id, chat_id, kind, model, prompt_tokens, completion_tokens, cached_tokens, estimated,
                       latency_ms, created_at)
SELECT 1 + (g / :per_day) % :users,
       CASE WHEN g % {KINDS_PER_DAY} < {CHATLESS_FROM} THEN 1 + (g / :per_day) % (:users * {CHATS_PER_USER}) END,
       ({KINDS})[1 + g % {KINDS_PER_DAY}], 'fake-chat', 800 + g % 700, 40 + g % 200, (g % 3) * 300, g % 17 = 0,
       200 + g % 900, date_trunc('day', now()) - make_interval(days => (g / :per_day / :users) % :days)
       + make_interval(secs => g % 86000)
FROM generate_series(0, :rows - 1) AS g"""),
    text("""
INSERT INTO llm_usage_daily (user_id, day, kind, chat_id, messages, calls, prompt_tokens, completion_tokens,
                             cached_tokens, estimated_calls)
SELECT user_id, (created_at AT TIME ZONE 'UTC')::date, kind, coalesce(chat_id, 0),
       count(*) FILTER (WHERE kind = 'turn'), count(*), sum(prompt_tokens), sum(completion_tokens),
       sum(cached_tokens), count(*) FILTER (WHERE estimated)
FROM llm_usage GROUP BY 1, 2, 3, 4"""),
    text("ANALYZE llm_usage"),
    text("ANALYZE llm_usage_daily"),
)
RAW_TOP_USERS = text("""
SELECT user_id, sum(prompt_tokens + completion_tokens) AS tokens FROM llm_usage
WHERE created_at >= now() - interval '30 days' GROUP BY user_id ORDER BY tokens DESC LIMIT 10
""")


def timed(work: Callable[[], object], repeats: int) -> dict[str, float]:
    spent = []
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        spent.append((time.perf_counter() - started) * 1000)
    return {"n": repeats, "p50_ms": statistics.median(spent), "p99_ms": percentile(spent, 0.99),
            "max_ms": max(spent)}


def run(database_url: str | None, out_dir: Path, rows: int = 1_000_000, users: int = 10_000,
        reads: int = 300, per_user_day: int = 50) -> dict:
    from shared.db.engine import make_engine, session_factory
    from shared.db.usage_models import usage_day
    from shared.llm.metering import CallUsage
    from shared.repositories.uow import UnitOfWork
    from shared.usage.policy import Prices, QuotaPolicy, UsagePolicy
    from shared.usage.report import operator_usage, user_usage

    with scratch_database(database_url) as url:
        engine = make_engine(url, pool_size=2)
        try:
            started = time.perf_counter()
            with engine.begin() as connection:
                for statement in FILL:
                    connection.execute(statement, {"users": users, "rows": rows, "days": DAYS,
                                                   "per_day": per_user_day})
            figures: dict = {"rows": rows, "users": users, "per_user_day": per_user_day,
                             "fill_s": time.perf_counter() - started}
            sessions = session_factory(engine)
            uow = lambda: UnitOfWork(sessions)  # noqa: E731
            policy = UsagePolicy(QuotaPolicy(per_user=100_000), Prices(0.15, 0.075, 0.6))
            now, rng = datetime.now(UTC), random.Random(7)

            def read(work):
                def once():
                    with uow() as unit:
                        work(unit, rng.randrange(1, users + 1))
                return once

            figures["quota_check"] = timed(read(lambda u, user: u.usage.tokens_on(user, usage_day(now))), reads)
            figures["group_quota_check"] = timed(read(lambda u, chat: u.usage.chat_tokens_on(chat, usage_day(now))),
                                                 reads)
            figures["user_report"] = timed(read(lambda u, user: user_usage(u, user, now, policy)), reads)
            figures["operator_report_30d"] = timed(read(lambda u, _user: operator_usage(u, now, policy, days=DAYS)),
                                                   max(3, reads // 30))
            figures["raw_top_users_30d"] = timed(read(lambda u, _user: u.session.execute(RAW_TOP_USERS).all()),
                                                 max(3, reads // 30))
            turn = [CallUsage("turn_embedding", "fake-embed", 12, 0, latency_ms=5),
                    CallUsage("turn", "fake-chat", 1200, 80, 900, latency_ms=700)]

            spent = []
            for _ in range(reads):
                with uow() as unit:
                    unit.ping()  # the transaction is open, as the turn's is
                    started = time.perf_counter()
                    unit.usage.record(rng.randrange(1, users + 1), 1, turn, now, messages=1)
                    spent.append((time.perf_counter() - started) * 1000)
                    unit.commit()
            figures["record_turn"] = {"n": reads, "p50_ms": statistics.median(spent),
                                      "p99_ms": percentile(spent, 0.99), "max_ms": max(spent)}
            with engine.connect() as connection:
                figures["daily_rows"] = connection.scalar(text("SELECT count(*) FROM llm_usage_daily"))
        finally:
            engine.dispose()
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "usage.json").write_text(json.dumps(figures, indent=2))
    return figures


def report(figures: dict) -> str:
    lines = [f"usage at {figures['rows']:,} requests of {figures['users']:,} users over {DAYS} days, "
             f"{figures['per_user_day']} a user-day ({figures['daily_rows']:,} daily rows; filled in "
             f"{figures['fill_s']:.0f} s):"]
    for name in ("quota_check", "group_quota_check", "user_report", "operator_report_30d", "raw_top_users_30d",
                 "record_turn"):
        timing = figures[name]
        lines.append(f"  {name}: p50 {timing['p50_ms']:.2f} ms, p99 {timing['p99_ms']:.2f} ms ({timing['n']} runs)")
    return "\n".join(lines)
