"""Scale benchmark: retrieval latency and hot-path overhead at 10k, 100k and 1M stored memories.

The database grows in steps (synthetic English and Chinese memories spread over ``users`` users,
bulk-loaded with ``COPY``); at each size the product's own ``recall_for_turn`` and
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

from bench.fakes.openai_server import FakeOpenAI  # noqa: E402
from bench.hot_path import REPLY, build_service, percentile, scratch_database  # noqa: E402

RETRIEVAL_P99_TARGET_MS = 5.0
HOT_PATH_P99_TARGET_MS = 25.0
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
USER_SKEW = 1.5
"""Users are drawn as ``users * random() ** USER_SKEW``: a few heavy users, a long light tail."""
MAX_AGE_DAYS = 365

VOCABULARY = {
    "food": ["pasta", "sushi", "ramen", "curry", "dumplings", "tacos",
             "pizza", "salad", "risotto", "pho", "kimchi", "falafel", "paella"],
    "drink": ["coffee", "matcha", "oolong", "espresso", "lemonade", "cider", "kombucha", "chai"],
    "activity": ["hiking", "cycling", "swimming", "climbing", "running",
                 "yoga", "painting", "gardening", "fishing", "skating"],
    "day": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
    "city": ["Berlin", "Lisbon", "Toronto", "Osaka", "Seattle", "Melbourne", "Dublin", "Prague", "Austin", "Kyoto"],
    "job": ["nurse", "architect", "teacher", "plumber", "designer",
            "accountant", "chef", "pilot", "librarian", "engineer"],
    "pet": ["cat", "dog", "parrot", "rabbit", "hamster", "tortoise"],
    "name": ["Alice", "Bruno", "Chen", "Dmitri", "Elena", "Farah", "Gustav",
             "Hana", "Ivan", "Julia", "Kenji", "Leila", "Marco", "Nadia", "Omar"],
    "skill": ["piano", "Spanish", "calligraphy", "woodworking", "photography", "chess", "guitar", "Japanese"],
    "relation": ["sister", "brother", "cousin", "colleague", "neighbour", "mother", "father", "friend"],
    "食物": ["火锅", "饺子", "小笼包", "烤鸭", "麻婆豆腐", "牛肉面", "寿司", "披萨", "糖醋排骨", "煎饼"],
    "饮料": ["乌龙茶", "绿茶", "咖啡", "奶茶", "豆浆", "果汁", "红酒"],
    "活动": ["爬山", "游泳", "跑步", "骑车", "钓鱼", "看电影", "打篮球", "练瑜伽", "逛公园"],
    "城市": ["北京", "上海", "杭州", "成都", "广州", "西安", "南京", "厦门", "重庆", "苏州"],
    "职业": ["医生", "老师", "程序员", "设计师", "会计", "厨师", "律师", "记者"],
    "宠物": ["猫", "小狗", "兔子", "鹦鹉", "金鱼", "乌龟"],
    "名字": ["小王", "小李", "张伟", "王芳", "李娜", "刘洋", "陈静", "赵磊", "周敏", "孙浩"],
    "技能": ["钢琴", "书法", "英语", "日语", "摄影", "吉他", "围棋", "编程"],
    "亲属": ["妹妹", "哥哥", "表姐", "同事", "邻居", "妈妈", "爸爸", "朋友"],
    "星期": ["周一", "周二", "周三", "周四", "周五", "周六", "周日"],
}
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


def query_texts(rng: random.Random, count: int) -> list[str]:
    return [fill(rng.choice(QUERY_TEMPLATES), rng) for _ in range(count)]


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


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


def heaviest_user(url: str) -> tuple[int, int]:
    import psycopg

    with psycopg.connect(url) as connection:
        row = connection.execute("SELECT user_id, count(*) FROM memories GROUP BY user_id ORDER BY 2 DESC LIMIT 1")
        return row.fetchone()


def storage(url: str) -> dict:
    """What the memories take on disk at this size, and how they spread over users (docs/scaling.md)."""
    import psycopg

    with psycopg.connect(url) as connection:
        table, indexes, total = connection.execute(
            "SELECT pg_relation_size('memories'), pg_indexes_size('memories'), "
            "pg_total_relation_size('memories')").fetchone()
        by_index = dict(connection.execute(
            "SELECT indexrelname, pg_relation_size(indexrelid) FROM pg_stat_user_indexes "
            "WHERE relname = 'memories' ORDER BY 2 DESC").fetchall())
        mean, p50, p99, most = connection.execute(
            "SELECT avg(n), percentile_cont(0.5) WITHIN GROUP (ORDER BY n), "
            "percentile_cont(0.99) WITHIN GROUP (ORDER BY n), max(n) "
            "FROM (SELECT count(*) AS n FROM memories GROUP BY user_id) AS per_user").fetchone()
        database = connection.execute("SELECT pg_database_size(current_database())").fetchone()[0]
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


def explain_recall(engine, sessions, user: int, text: str, now: datetime) -> dict:
    """``EXPLAIN (ANALYZE, BUFFERS)`` of the memory candidate queries this recall sends."""
    with captured_sql(engine) as seen:
        time_recall(sessions, [(user, text)], now)
    plans = {}
    for statement, parameters in seen:
        if "FROM memories" not in statement:
            continue
        name = "text_candidates" if "@@" in statement else None  # ranking and the LIKE fallback are one statement
        if name:
            with engine.connect() as connection:
                result = connection.exec_driver_sql("EXPLAIN (ANALYZE, BUFFERS) " + statement, parameters)
                plans[name] = [line for (line,) in result]
    return {"user_id": user, "text": text, "plans": plans}


def measure(url: str, engine, sessions, service, users: int, queries: int, size: int, rng: random.Random) -> dict:
    now = datetime.now(UTC)
    asks = [(rng.randint(1, users), text) for text in query_texts(rng, queries + WARM_UP)]
    time_recall(sessions, asks[:WARM_UP], now)
    retrieval = time_recall(sessions, asks[WARM_UP:], now)
    heavy_user, heavy_count = heaviest_user(url)
    heavy_asks = [(heavy_user, text) for text in query_texts(rng, HEAVIEST_USER_QUERIES)]
    heavy = time_recall(sessions, heavy_asks, now)
    asyncio.run(time_hot_path(service, asks[:WARM_UP], f"warm-{size}"))
    hot = asyncio.run(time_hot_path(service, asks[WARM_UP:], f"hot-{size}"))
    slowest = max(range(len(retrieval)), key=retrieval.__getitem__)
    return {"memories": size, "retrieval": summary(retrieval), "hot_path": summary(hot),
            "heaviest_user": {"memories": heavy_count} | summary(heavy),
            "explain_slowest": explain_recall(engine, sessions, *asks[WARM_UP + slowest], now),
            "storage": storage(url)}


def run(database_url: str | None, sizes: tuple[int, ...] = (10_000, 100_000, 1_000_000), users: int = 10_000,
        out_dir: Path = Path("bench/results"), queries: int = 1000, pool: int = POOL_SENTENCES) -> dict:
    """Grows one scratch database through ``sizes`` memories of ``users`` users, built from ``pool``
    distinct sentences, and times ``queries`` recalls and hot-path turns at each size."""
    from shared.db.engine import session_factory

    rng = random.Random(SEED)
    progress("tokenising the sentence pool…")
    rows = memory_rows(sentence_pool(rng, pool), users, rng, datetime.now(UTC) - timedelta(minutes=1))
    targets = {"retrieval_p99_ms": RETRIEVAL_P99_TARGET_MS, "hot_path_p99_ms": HOT_PATH_P99_TARGET_MS}
    figures: dict = {"machine": machine(), "users": users, "queries": queries, "sizes": [], "targets": targets}
    with FakeOpenAI(models=("fake-chat",)) as llm, scratch_database(database_url) as url:
        llm.set_responder(lambda _request: REPLY)
        service, engine = build_service(url, llm, pool_size=5)
        try:
            figures["machine"]["postgres"] = server_version(engine)
            load_users(url, users)
            have = 0
            for size in sorted(sizes):
                progress(f"growing to {size:,} memories…")
                load_seconds = grow(url, rows, have, size)
                have = size
                progress(f"measuring at {size:,} memories ({queries} queries)…")
                step = measure(url, engine, session_factory(engine), service, users, queries, size, rng)
                figures["sizes"].append(step | {"load_s": load_seconds})
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


def report_size(step: dict) -> str:
    r, h, u = step["retrieval"], step["hot_path"], step["heaviest_user"]
    return (f"{step['memories']:>9,} memories (loaded in {step['load_s']:.0f} s): retrieval p50 {r['p50_ms']:.2f} / "
            f"p95 {r['p95_ms']:.2f} / p99 {r['p99_ms']:.2f} ms; hot path p50 {h['p50_ms']:.1f} / p95 "
            f"{h['p95_ms']:.1f} / p99 {h['p99_ms']:.1f} ms; heaviest user ({u['memories']:,} memories) "
            f"retrieval p99 {u['p99_ms']:.2f} ms" + _storage_line(step.get("storage")))


def _storage_line(storage: dict | None) -> str:
    if not storage:
        return ""
    per_user = storage["memories_per_user"]
    return (f"; on disk {storage['total_mib']:,.0f} MiB (table {storage['table_mib']:,.0f}, indexes "
            f"{storage['indexes_mib']:,.0f}); memories per user mean {per_user['mean']:,.0f}, p99 "
            f"{per_user['p99']:,.0f}, max {per_user['max']:,}")


def report(figures: dict) -> str:
    lines = [f"scale: {figures['users']:,} users, {figures['queries']} queries per size, "
             f"{figures['machine']['cpus']} CPUs, PostgreSQL {figures['machine'].get('postgres')}"]
    lines += [report_size(step) for step in figures["sizes"]]
    last, targets = figures["sizes"][-1], figures["targets"]
    for name, key in (("retrieval", "retrieval_p99_ms"), ("hot path", "hot_path_p99_ms")):
        measured = last["retrieval" if name == "retrieval" else "hot_path"]["p99_ms"]
        verdict = "met" if measured <= targets[key] else "MISSED"
        lines.append(f"target {name} p99 <= {targets[key]:g} ms at {last['memories']:,}: {measured:.2f} ms, {verdict}")
    explain = last["explain_slowest"]
    lines.append(f"slowest query at {last['memories']:,} (user {explain['user_id']}: {explain['text']!r}):")
    for name, plan in explain["plans"].items():
        lines.append(f"  {name}:")
        lines += [f"    {line}" for line in plan if "Scan" in line or "Time" in line or "Buffers" in line][:12]
    return "\n".join(lines)


def plot(figures: dict, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: latency.png skipped", file=sys.stderr)
        return
    sizes = [step["memories"] for step in figures["sizes"]]
    figure, axes = plt.subplots(figsize=(7, 4.5))
    for part, label in (("retrieval", "retrieval"), ("hot_path", "hot path (LLM excluded)")):
        for share in ("p50", "p99"):
            axes.plot(sizes, [step[part][f"{share}_ms"] for step in figures["sizes"]], marker="o",
                      label=f"{label} {share}")
    axes.axhline(RETRIEVAL_P99_TARGET_MS, linestyle=":", color="grey")
    axes.axhline(HOT_PATH_P99_TARGET_MS, linestyle="--", color="grey")
    axes.set(xscale="log", xlabel=f"stored memories ({figures['users']:,} users)", ylabel="ms",
             title="Mnemo latency against stored memories")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
