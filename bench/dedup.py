"""Dedup benchmark: ``run_dedup`` over 10k and 100k synthetic memories, to show it grows like n log n.

Creates a scratch database (an embedded PostgreSQL in a temporary directory unless a server URL is
given), bulk-loads realistic memories with COPY (many users, Chinese and English sentences, some
near-duplicates, search tokens from the real tokenizer), times one dedup run per size, prints the
figures and writes them as JSON. The time growth divided by the size growth stays near 1 for a
linear-ish algorithm; an O(n²) one would show the size ratio itself (10).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path

from bench.hot_path import scratch_database

MEMORIES_PER_USER = 50
NEAR_DUPLICATE_SHARE = 0.15
SEED = 20261122
NOW = datetime(2026, 11, 22, 3, 40, tzinfo=UTC)

FILL = {
    "food": ["sushi", "ramen", "dumplings", "pizza", "tacos", "curry", "noodles", "oysters", "tofu", "mango cake"],
    "drink": ["green tea", "oolong tea", "black coffee", "matcha latte", "lemonade", "jasmine tea", "cold brew"],
    "city": ["Berlin", "Shanghai", "Lisbon", "Tokyo", "Chengdu", "Toronto", "Nairobi", "Oslo", "Lima", "Hangzhou"],
    "name": ["Anna", "Wei", "Marco", "Yuki", "Priya", "Lena", "Omar", "Sofia", "Jun", "Ivan", "Mia", "Tariq"],
    "hobby": ["hiking", "swimming", "climbing", "cycling", "fishing", "running", "dancing", "skating"],
    "day": ["Monday", "Tuesday", "Friday", "Saturday", "Sunday"],
    "job": ["nurse", "designer", "teacher", "backend engineer", "chef", "pilot", "lawyer", "translator"],
    "食物": ["火锅", "饺子", "小笼包", "烤鸭", "麻辣烫", "凉皮", "担担面", "月饼", "豆腐脑", "煎饼"],
    "城市": ["上海", "成都", "杭州", "北京", "广州", "西安", "重庆", "南京", "厦门", "青岛"],
    "名字": ["小明", "阿华", "小红", "老王", "丽丽", "小张", "阿杰", "婷婷", "小李", "大伟"],
    "爱好": ["游泳", "爬山", "跑步", "钓鱼", "下棋", "画画", "弹吉他", "打羽毛球"],
    "职业": ["护士", "设计师", "老师", "程序员", "厨师", "律师", "会计", "记者"],
    "宠物": ["咪咪", "旺财", "豆豆", "球球", "花花", "小黑"],
}
TEMPLATES = {
    "preference": ["I like {food}", "My favourite drink is {drink}", "I don't like {food}",
                   "I prefer {drink} over {food}", "我喜欢吃{食物}", "我不喜欢吃{食物}", "我最喜欢的运动是{爱好}"],
    "fact": ["I live in {city}", "I work as a {job} in {city}", "I am learning to cook {food}",
             "我住在{城市}", "我在{城市}当{职业}", "我家的猫叫{宠物}"],
    "person": ["My sister {name} lives in {city}", "{name} is my best friend from {city}",
               "My boss {name} loves {food}", "我的妹妹{名字}住在{城市}", "{名字}是我在{城市}认识的好朋友"],
    "event": ["I visited {city} with {name} last spring", "I had {food} for dinner with {name}",
              "我和{名字}上个月去了{城市}", "我昨天和{名字}一起吃了{食物}"],
    "pattern": ["I go {hobby} every {day}", "I drink {drink} every morning", "我每个周末都去{爱好}",
                "我每天早上都喝{食物}汤"],
}
VARIANTS = [lambda s: s + "!", lambda s: s.lower(), lambda s: s.replace("I ", "I really ", 1),
            lambda s: "Honestly, " + s, lambda s: s.replace("喜欢", "很喜欢", 1) + "。", lambda s: "其实" + s,
            lambda s: s + " too", lambda s: s + "，真的"]


@cache
def tokens_of(content: str) -> str:
    from shared.search.tokenizer import search_text

    return search_text([content])


def sentence(rng: random.Random, type_: str) -> str:
    template = rng.choice(TEMPLATES[type_])
    return template.format(**{slot: rng.choice(words) for slot, words in FILL.items()})


def synthetic_memories(count: int, rng: random.Random) -> Iterator[tuple]:
    """COPY rows: ``count`` memories over ``count / MEMORIES_PER_USER`` users, some near-duplicates."""
    users = max(1, count // MEMORIES_PER_USER)
    for user_id in range(1, users + 1):
        made: list[tuple[str, str]] = []
        share = count // users + (1 if user_id <= count % users else 0)
        for _ in range(share):
            if made and rng.random() < NEAR_DUPLICATE_SHARE:
                type_, original = rng.choice(made)
                content = rng.choice(VARIANTS)(original)
            else:
                type_ = rng.choice(list(TEMPLATES))
                content = sentence(rng, type_)
                made.append((type_, content))
            created = NOW - timedelta(days=rng.randint(1, 300))
            yield (user_id, type_, content, 1.0 + rng.random(), rng.choice((0.5, 0.7, 0.9)), "user_stated", "long",
                   tokens_of(content), created, created, rng.randint(0, 9))


def load(url: str, count: int, rng: random.Random) -> float:
    """Empty the tables and COPY ``count`` memories in; returns the seconds it took."""
    import psycopg

    from shared.search.tokenizer import TOKENIZER_VERSION

    started = time.perf_counter()
    with psycopg.connect(url) as connection:
        connection.execute("TRUNCATE memory_events, memories, users RESTART IDENTITY CASCADE")
        connection.execute("INSERT INTO users (id) SELECT generate_series(1, %s)",
                           (max(1, count // MEMORIES_PER_USER),))
        columns = ("user_id, type, content, importance, confidence, source, tier, search_tokens, created_at, "
                   "updated_at, access_count, tokenizer_version")
        with connection.cursor().copy(f"COPY memories ({columns}) FROM STDIN") as copy:
            for row in synthetic_memories(count, rng):
                copy.write_row((*row, TOKENIZER_VERSION))
        connection.execute("ANALYZE memories")
    return time.perf_counter() - started


def time_dedup(url: str) -> tuple[float, dict]:
    from dataclasses import asdict

    from shared.db.engine import make_engine, session_factory
    from shared.lifecycle.dedup import run_dedup
    from shared.repositories.uow import UnitOfWork

    engine = make_engine(url)
    sessions = session_factory(engine)
    try:
        started = time.perf_counter()
        result = run_dedup(lambda: UnitOfWork(sessions), NOW)
        return time.perf_counter() - started, asdict(result)
    finally:
        engine.dispose()


def run(database_url: str | None, sizes=(10_000, 100_000), out_dir: Path = Path("bench/results")) -> dict:
    rng = random.Random(SEED)
    runs = []
    with scratch_database(database_url) as url:
        for size in sizes:
            load_seconds = load(url, size, rng)
            seconds, result = time_dedup(url)
            runs.append({"memories": size, "users": max(1, size // MEMORIES_PER_USER), "seconds": seconds,
                         "memories_per_second": size / seconds, "load_seconds": load_seconds, "report": result})
    figures: dict = {"runs": runs}
    if len(runs) > 1:
        first, last = runs[0], runs[-1]
        figures["time_growth_vs_size_growth"] = ((last["seconds"] / first["seconds"])
                                                 / (last["memories"] / first["memories"]))
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "dedup.json").write_text(json.dumps(figures, indent=2))
    return figures


def report(figures: dict) -> str:
    lines = [f"dedup of {r['memories']:,} memories ({r['users']:,} users): {r['seconds']:.2f} s, "
             f"{r['memories_per_second']:,.0f} memories/s, {r['report']['merged']:,} duplicates merged "
             f"in {r['report']['clusters']:,} clusters" for r in figures["runs"]]
    if "time_growth_vs_size_growth" in figures:
        lines.append(f"time growth / size growth: {figures['time_growth_vs_size_growth']:.2f} "
                     "(1.0 = linear; an O(n²) pass would be the size ratio)")
    return "\n".join(lines)
