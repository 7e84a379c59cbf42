"""Scale benchmark: retrieval latency and hot-path overhead at 10k, 100k and 1M stored memories (and rounds).

The database grows in steps (synthetic English and Chinese memories spread over ``users`` users,
bulk-loaded with ``COPY``, and as many rounds as asked for alongside, :mod:`bench.scale_rounds`); at
each size the product's own ``recall_for_turn`` and
``ConversationService.handle_message`` (fake LLM answering at once) are timed for random users.
The slowest query's candidate SQL is re-run under ``EXPLAIN (ANALYZE, BUFFERS)`` so a missed
target comes with its plan. Figures go to ``scale.json`` (and ``latency.png`` with matplotlib).
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import random
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the fakes live in the checkout's tests/ (the bench runs from a checkout)
    sys.path.insert(0, str(ROOT))

from bench.databases import one_row  # noqa: E402
from bench.fakes.openai_server import FakeOpenAI  # noqa: E402
from bench.hot_path import REPLY, build_service, percentile, scratch_database  # noqa: E402
from bench.scale_report import plot, report, report_size  # noqa: E402,F401 (report: the command's)
from bench.synthetic import MAX_AGE_DAYS, USER_SKEW, VOCABULARY, progress  # noqa: E402

RETRIEVAL_P99_TARGET_MS = 5.0
HOT_PATH_P99_TARGET_MS = 25.0
ROUNDS_RETRIEVAL_P99_TARGET_MS = 15.0
"""With rounds (issue 25): a random user's recall p99; the heaviest user's below."""
ROUNDS_HEAVIEST_P99_TARGET_MS = 60.0
RECALL_LIMIT = 5
WARM_UP = 20
HEAVIEST_USER_QUERIES = 100
SEED = 20240601
MEMORY_COLUMNS = ("user_id", "type", "content", "importance", "confidence", "source", "tier", "search_tokens",
                  "tokenizer_version", "created_at", "updated_at", "last_accessed", "access_count")


POOL_SENTENCES = 4000
COMBINED_SHARE = 0.3
"""Memories made of two pool sentences (longer texts)."""
NICKNAME_SHARE = 0.25
"""Memories that mention the user's own nickname for someone (a token only that user has)."""
MEMORY_TEMPLATES = (
    ("preference", "I really like {food}, especially with {drink}"),
    ("preference", "I prefer {activity} on {day} mornings"),
    ("fact", "I work as a {job} in {city}"),
    ("fact", "I have a {pet} called {name}"),
    ("fact", "I have been learning {skill} since spring"),
    ("event", "Went {activity} in {city} with {name} last {day}"),
    ("person", "My {relation} {name} lives in {city} and works as a {job}"),
    ("person", "{name} is my {relation} and loves {food}"),
    ("preference", "我很喜欢吃{食物}，最爱喝{饮料}"),
    ("preference", "我{星期}早上喜欢去{活动}"),
    ("fact", "我在{城市}当{职业}"),
    ("fact", "我养了一只{宠物}，名字叫{名字}"),
    ("fact", "我最近在学{技能}"),
    ("event", "上{星期}和{名字}在{城市}{活动}"),
    ("person", "我的{亲属}{名字}住在{城市}，是{职业}"),
    ("person", "{名字}是我的{亲属}，特别喜欢{食物}"),
)
QUERY_TEMPLATES = (
    "Do you remember which {food} I like?", "I'm meeting {name} in {city} this {day}, any ideas?",
    "What should I drink instead of {drink}?", "How do I get better at {skill}?",
    "My {relation} wants a {pet}, what do you think?", "Thinking about {activity} tomorrow",
    "你还记得我喜欢吃什么{食物}吗？", "这个{星期}想和{名字}去{城市}{活动}", "{技能}应该怎么练？",
    "我的{亲属}最近怎么样了", "推荐几种{饮料}吧", "在{城市}当{职业}累不累",
)
SYLLABLES = ["ka", "mi", "ro", "sa", "ne", "to", "lu", "ve", "da", "po", "ri", "xe"]


def fill(template: str, rng: random.Random) -> str:
    return template.format(**{slot: rng.choice(words) for slot, words in VOCABULARY.items()})


def sentence_pool(rng: random.Random, size: int = POOL_SENTENCES) -> list[tuple[str, str, str]]:
    """``size`` distinct (type, sentence, search tokens), each tokenised once with the product tokenizer."""
    from shared.search.tokenizer import search_text

    sentences: dict[str, str] = {}
    while len(sentences) < size:
        kind, template = rng.choice(MEMORY_TEMPLATES)
        sentences.setdefault(fill(template, rng), kind)
    return [(kind, text, search_text([text])) for text, kind in sentences.items()]


def nickname(user: int) -> str:
    return "".join(SYLLABLES[user // 12 ** place % 12] for place in range(3)).capitalize()


def memory_rows(pool: list[tuple[str, str, str]], users: int, rng: random.Random, now: datetime) -> Iterator[tuple]:
    """Endless memory rows for ``COPY`` (columns ``MEMORY_COLUMNS``), assembled from the pool."""
    from shared.search.tokenizer import TOKENIZER_VERSION, search_text

    nickname_tokens: dict[int, str] = {}
    while True:
        user = 1 + min(users - 1, int(users * rng.random() ** USER_SKEW))
        kind, content, tokens = rng.choice(pool)
        if rng.random() < COMBINED_SHARE:
            _, more, more_tokens = rng.choice(pool)
            content, tokens = f"{content}. {more}", f"{tokens} {more_tokens}"
        if rng.random() < NICKNAME_SHARE:
            name = nickname(user)
            content = f"{content} ({name})"
            tokens = f"{tokens} {nickname_tokens.setdefault(user, search_text([name]))}"
        created = now - timedelta(seconds=rng.randrange(MAX_AGE_DAYS * 86400))
        uses = int(rng.expovariate(0.5))
        accessed = created + (now - created) * rng.random() if uses else None
        yield (user, kind, content, round(rng.uniform(0.5, 2.5), 2), round(rng.uniform(0.4, 1.0), 2), "user_stated",
               "long", tokens.strip(), TOKENIZER_VERSION, created, created, accessed, uses)


def query_texts(rng: random.Random, count: int, templates: tuple[str, ...] = QUERY_TEMPLATES) -> list[str]:
    return [fill(rng.choice(templates), rng) for _ in range(count)]


def load_users(url: str, users: int) -> None:
    """``users`` users, each with a console identity ``scale-<id>``; sequences moved past them."""
    import psycopg

    with psycopg.connect(url) as connection:
        with connection.cursor().copy("COPY users (id) FROM STDIN") as copy:
            for user in range(1, users + 1):
                copy.write_row((user,))
        with connection.cursor().copy("COPY identities (user_id, platform, platform_user_id) FROM STDIN") as copy:
            for user in range(1, users + 1):
                copy.write_row((user, "console", f"scale-{user}"))
        for table in ("users", "identities"):
            connection.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")


def grow(url: str, rows: Iterator[tuple], have: int, want: int) -> float:
    """Add memories until there are ``want``; vacuum and analyse as autovacuum would. Returns seconds."""
    import psycopg

    started = time.perf_counter()
    statement = f"COPY memories ({', '.join(MEMORY_COLUMNS)}) FROM STDIN"
    with psycopg.connect(url) as connection, connection.cursor().copy(statement) as copy:
        for done in range(have, want):
            copy.write_row(next(rows))
            if (done + 1) % 100_000 == 0:
                progress(f"  {done + 1:,} memories loaded ({time.perf_counter() - started:.0f} s)")
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("VACUUM (ANALYZE) memories")
        connection.execute("ANALYZE users, identities")
    return time.perf_counter() - started


def held(url: str) -> tuple[int, int]:
    """The memories and rounds a database already holds (a kept one): (memories, rounds)."""
    import psycopg

    with psycopg.connect(url) as connection:
        return one_row(connection, "SELECT (SELECT count(*) FROM memories), "
                                   "(SELECT count(*) FROM conversation_turns WHERE role = 'user')")


def heaviest_user(url: str) -> tuple[int, int]:
    import psycopg

    with psycopg.connect(url) as connection:
        return one_row(connection, "SELECT user_id, count(*) FROM memories GROUP BY user_id ORDER BY 2 DESC LIMIT 1")


def storage(url: str) -> dict:
    """What the memories take on disk at this size, and how they spread over users (docs/scaling.md)."""
    import psycopg

    with psycopg.connect(url) as connection:
        table, indexes, total = one_row(
            connection, "SELECT pg_relation_size('memories'), pg_indexes_size('memories'), "
                        "pg_total_relation_size('memories')")
        by_index: dict[str, int] = dict(connection.execute(
            "SELECT indexrelname, pg_relation_size(indexrelid) FROM pg_stat_user_indexes "
            "WHERE relname = 'memories' ORDER BY 2 DESC").fetchall())
        mean, p50, p99, most = one_row(
            connection, "SELECT avg(n), percentile_cont(0.5) WITHIN GROUP (ORDER BY n), "
                        "percentile_cont(0.99) WITHIN GROUP (ORDER BY n), max(n) "
                        "FROM (SELECT count(*) AS n FROM memories GROUP BY user_id) AS per_user")
        database = one_row(connection, "SELECT pg_database_size(current_database())")[0]
    mib = 1024 * 1024
    return {"table_mib": round(table / mib, 1), "indexes_mib": round(indexes / mib, 1),
            "total_mib": round(total / mib, 1), "database_mib": round(database / mib, 1),
            "index_mib": {name: round(size / mib, 1) for name, size in by_index.items()},
            "memories_per_user": {"mean": round(float(mean), 1), "p50": float(p50), "p99": float(p99),
                                  "max": int(most)}}


def time_recall(sessions, asks: list[tuple[int, str]], now: datetime) -> list[float]:
    """Milliseconds per ``recall_for_turn``, the transaction already open as it is in a turn."""
    from shared.recall.retrieval import recall_for_turn
    from shared.repositories.uow import UnitOfWork

    spent = []
    for user, text in asks:
        with UnitOfWork(sessions) as uow:
            uow.session.connection()
            started = time.perf_counter()
            recall_for_turn(uow, user, text, now=now, limit=RECALL_LIMIT)
            spent.append((time.perf_counter() - started) * 1000)
    return spent


async def time_hot_path(service, asks: list[tuple[int, str]], tag: str) -> list[float]:
    """Milliseconds per message spent outside the LLM (``prepare`` + ``apply``)."""
    spent = []
    for index, (user, text) in enumerate(asks):
        reply = await service.handle_message(_message(user, f"{tag}-{index}", text))
        spent.append(reply.timings_ms["prepare"] + reply.timings_ms["apply"])
    return spent


def _message(user: int, message_id: str, text: str):
    from shared.conversation.messages import IncomingMessage

    return IncomingMessage(platform="console", chat_id=f"scale-{user}", user_id=f"scale-{user}", text=text,
                           sent_at=datetime.now(UTC), message_id=message_id)


def summary(values: list[float]) -> dict[str, float]:
    return {"count": len(values), "p50_ms": percentile(values, 0.50), "p95_ms": percentile(values, 0.95),
            "p99_ms": percentile(values, 0.99), "max_ms": max(values)}


@contextmanager
def captured_sql(engine) -> Iterator[list[tuple[str, object]]]:
    """The statements (and parameters) the engine sends while the block runs."""
    from sqlalchemy import event

    seen: list[tuple[str, object]] = []

    def record(_conn, _cursor, statement, parameters, _context, _many) -> None:
        seen.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


EXPLAINED = (("text_candidates", "FROM memories", "@@"), ("round_candidates", "FROM conversation_turns", "@@"),
             ("rounds_in_span", "FROM conversation_turns", ":start"))
"""(name, what the statement reads, what marks it) of the statements explained: the memory and round rankings
(each with its LIKE fallback in the same statement) and the rounds of an asked-about time."""


def explain_recall(engine, sessions, user: int, text: str, now: datetime) -> dict:
    """``EXPLAIN (ANALYZE, BUFFERS)`` of the candidate queries this recall sends."""
    with captured_sql(engine) as seen:
        time_recall(sessions, [(user, text)], now)
    plans = {}
    for statement, parameters in seen:
        name = next((name for name, table, mark in EXPLAINED if table in statement and mark in statement), None)
        if name:
            with engine.connect() as connection:
                result = connection.exec_driver_sql("EXPLAIN (ANALYZE, BUFFERS) " + statement, parameters)
                plans[name] = [line for (line,) in result]
    return {"user_id": user, "text": text, "plans": plans}


def measure(url: str, engine, sessions, service, users: int, queries: int, size: int, rng: random.Random,
            rounds: int = 0) -> dict:
    """Recall for random users and for the heaviest (by memories and rounds), the hot path, the slowest
    recall of each explained; with rounds, a share of the questions ask about what was said."""
    from bench import scale_rounds

    now = datetime.now(UTC)
    templates = QUERY_TEMPLATES + (scale_rounds.ROUND_QUERY_TEMPLATES if rounds else ())
    asks = [(rng.randint(1, users), text) for text in query_texts(rng, queries + WARM_UP, templates)]
    time_recall(sessions, asks[:WARM_UP], now)
    retrieval = time_recall(sessions, asks[WARM_UP:], now)
    heavy_user, heavy_memories, heavy_rounds = scale_rounds.heaviest_user(url) if rounds else (*heaviest_user(url), 0)
    heavy_asks = [(heavy_user, text) for text in query_texts(rng, HEAVIEST_USER_QUERIES, templates)]
    heavy = time_recall(sessions, heavy_asks, now)
    run = f"{now:%Y%m%dT%H%M%S}"  # a kept database has seen the message ids of earlier runs
    asyncio.run(time_hot_path(service, asks[:WARM_UP], f"warm-{size}-{run}"))
    hot = asyncio.run(time_hot_path(service, asks[WARM_UP:], f"hot-{size}-{run}"))
    slowest = max(range(len(retrieval)), key=retrieval.__getitem__)
    step = {"memories": size, "rounds": rounds, "retrieval": summary(retrieval), "hot_path": summary(hot),
            "heaviest_user": {"user_id": heavy_user, "memories": heavy_memories, "rounds": heavy_rounds}
            | summary(heavy),
            "explain_slowest": explain_recall(engine, sessions, *asks[WARM_UP + slowest], now),
            "storage": storage(url) | (scale_rounds.round_storage(url) if rounds else {})}
    if rounds:
        heavy_slowest = max(range(len(heavy)), key=heavy.__getitem__)
        step["explain_heaviest"] = explain_recall(engine, sessions, *heavy_asks[heavy_slowest], now)
    return step


def run(database_url: str | None, sizes: tuple[int, ...] = (10_000, 100_000, 1_000_000), users: int = 10_000,
        out_dir: Path = Path("bench/results"), queries: int = 1000, pool: int = POOL_SENTENCES,
        rounds: tuple[int, ...] = (), keep: Path | None = None) -> dict:
    """Grows one scratch database through ``sizes`` memories of ``users`` users, built from ``pool``
    distinct sentences, with ``rounds`` rounds alongside each size (none if empty), and times ``queries``
    recalls and hot-path turns at each size. With ``keep`` (an embedded data directory kept after the run), what
    an earlier run left there is measured again, without loading it anew (only what a size asks beyond it)."""
    from bench import scale_rounds
    from shared.db.engine import session_factory

    if rounds and len(rounds) != len(sizes):
        raise ValueError("give as many round counts as memory sizes")
    steps = list(zip(sorted(sizes), sorted(rounds) or [0] * len(sizes), strict=True))
    rng, round_rng = random.Random(SEED), random.Random(SEED + 1)  # the memories do not depend on the rounds
    progress("tokenising the sentence pool…")
    started_at = datetime.now(UTC) - timedelta(minutes=1)
    rows = memory_rows(sentence_pool(rng, pool), users, rng, started_at)
    said = scale_rounds.round_pool(round_rng, pool) if any(rounds) else []
    targets = {"retrieval_p99_ms": ROUNDS_RETRIEVAL_P99_TARGET_MS if any(rounds) else RETRIEVAL_P99_TARGET_MS,
               "hot_path_p99_ms": HOT_PATH_P99_TARGET_MS}
    if any(rounds):
        targets["heaviest_user_p99_ms"] = ROUNDS_HEAVIEST_P99_TARGET_MS
    figures: dict = {"machine": machine(), "users": users, "queries": queries, "sizes": [], "targets": targets}
    with FakeOpenAI(models=("fake-chat",)) as llm, scratch_database(database_url, keep) as url:
        llm.set_responder(lambda _request: REPLY)
        service, engine = build_service(url, llm, pool_size=5)
        try:
            figures["machine"]["postgres"] = server_version(engine)
            have, have_rounds = held(url)
            if have or have_rounds:
                progress(f"measuring what {keep} holds: {have:,} memories, {have_rounds:,} rounds")
                figures["reused"] = {"memories": have, "rounds": have_rounds}
            else:
                load_users(url, users)
            for size, wanted_rounds in steps:
                progress(f"growing to {size:,} memories and {wanted_rounds:,} rounds…")
                load_seconds = grow(url, rows, have, size)
                rounds_seconds = scale_rounds.grow_rounds(url, said, users, have_rounds, wanted_rounds, round_rng,
                                                          started_at)
                have, have_rounds = size, max(have_rounds, wanted_rounds)
                progress(f"measuring at {size:,} memories, {have_rounds:,} rounds ({queries} queries)…")
                step = measure(url, engine, session_factory(engine), service, users, queries, size, rng,
                               rounds=have_rounds)
                figures["sizes"].append(step | {"load_s": load_seconds + rounds_seconds,
                                                "rounds_load_s": rounds_seconds})
                progress(report_size(figures["sizes"][-1]))
        finally:
            engine.dispose()
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "scale.json").write_text(json.dumps(figures, indent=2, ensure_ascii=False))
    plot(figures, out_dir / "latency.png")
    return figures


def server_version(engine) -> str:
    with engine.connect() as connection:
        return connection.exec_driver_sql("SHOW server_version").scalar_one()


def machine() -> dict:
    return {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()}
