"""Rounds for the scale benchmark: what users said to the bot and what it answered, bulk-loaded.

A round is a user's turn (its search keys precomputed, as the product keys it when the reply is recorded)
and the bot's turn answering it, in the same session, a few seconds later. Users are as skewed as their
memories (``USER_SKEW``); each has one private console chat (``scale-<id>``, the chat the hot path talks
in), and their rounds come in sessions of about ``ROUNDS_PER_SESSION``, spread over a year, ids rising
with time as in a live database. Lines and replies are conversational (questions, anecdotes, the bot's
suggestions) in English and Chinese, drawn from a pool of distinct pairs tokenised once.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from datetime import datetime, timedelta

from bench.databases import one_row
from bench.synthetic import MAX_AGE_DAYS, USER_SKEW, VOCABULARY, progress

ROUNDS_PER_SESSION = 10
"""Mean rounds in one sitting (1 to twice this, uniformly)."""
ROUND_GAP_SECONDS = (20, 300)
"""From one round to the next in a sitting."""
REPLY_DELAY_SECONDS = 3
TURN_COLUMNS = ("id", "user_id", "chat_id", "session_id", "role", "text", "token_estimate", "extracted",
                "reply_to_turn_id", "search_tokens", "tokenizer_version", "created_at")
SESSION_COLUMNS = ("id", "user_id", "chat_id", "turn_count", "created_at", "updated_at", "closed_at")

ROUND_TEMPLATES = (
    ("Do you think I should cook {food} tonight?", "Why not: {food} with a glass of {drink} sounds lovely."),
    ("{name} and I went {activity} in {city} yesterday, it was great",
     "That sounds wonderful! Maybe go {activity} again next {day}."),
    ("My {relation} just adopted a {pet}!", "How exciting! A {pet} needs patience in the first weeks."),
    ("How long does it take to get decent at {skill}?",
     "I'd recommend twenty minutes of {skill} a day; most people feel at home after a few months."),
    ("Being a {job} is exhausting this week", "Sorry to hear that. Could you take {day} off and try {activity}?"),
    ("Any tips for a weekend in {city}?", "In {city} I'd start with the markets, then {food} for dinner."),
    ("I burnt the {food} again lol", "It happens! Lower heat and a bit more patience, and maybe order {food}."),
    ("Should I switch from {drink} to something lighter?", "You could try {drink} with less sugar, or plain tea."),
    ("你觉得我今晚吃{食物}怎么样？", "好主意，{食物}配{饮料}很搭。"),
    ("昨天和{名字}去{城市}{活动}了，太开心了", "听起来真不错！下{星期}可以再去{活动}。"),
    ("我{亲属}刚养了一只{宠物}", "真好！刚到家的{宠物}需要多一点耐心。"),
    ("{技能}要学多久才能入门啊", "推荐你每天练二十分钟{技能}，几个月就能入门。"),
    ("这周当{职业}好累", "辛苦了，{星期}休息一下，去{活动}放松放松吧。"),
    ("周末去{城市}玩有什么推荐吗", "{城市}的{食物}很有名，一定要尝尝。"),
    ("我又把{食物}做糊了", "没关系，火小一点，多点耐心就好。"),
    ("最近总想喝{饮料}，是不是不太好", "适量就好，也可以换成{饮料}以外的温水或绿茶。"),
)
ROUND_QUERY_TEMPLATES = (
    "What did you recommend when I asked about {food}?", "What did I tell you about {city} last week?",
    "Remember what I said about my {relation} yesterday?", "你上次推荐我吃什么{食物}来着？",
    "我们昨天聊了什么？", "上周我跟你说过{名字}的什么事？",
)
"""Questions about what was said (with time cues), mixed in when there are rounds."""


def round_pool(rng: random.Random, size: int) -> list[tuple[str, str, str]]:
    """``size`` distinct (line, reply, search tokens) pairs, each keyed once as the product keys a round."""
    from shared.recall.round_keys import round_search_text

    pairs: set[tuple[str, str]] = set()
    while len(pairs) < size:
        line, reply = rng.choice(ROUND_TEMPLATES)
        slots = {slot: rng.choice(words) for slot, words in VOCABULARY.items()}
        pairs.add((line.format(**slots), reply.format(**slots)))
    return [(line, reply, round_search_text(line, reply)) for line, reply in sorted(pairs)]


def sittings(rounds: int, users: int, rng: random.Random, now: datetime) -> list[tuple[datetime, int, int]]:
    """(start, user, rounds) of the sittings holding ``rounds`` rounds, users drawn as memories are, oldest
    first."""
    per_user = [0] * (users + 1)
    for _ in range(rounds):
        per_user[1 + min(users - 1, int(users * rng.random() ** USER_SKEW))] += 1
    planned = []
    for user, count in enumerate(per_user):
        while count > 0:
            size = min(count, rng.randint(1, 2 * ROUNDS_PER_SESSION - 1))
            planned.append((now - timedelta(seconds=rng.randrange(MAX_AGE_DAYS * 86400)), user, size))
            count -= size
    planned.sort()
    return planned


def turn_rows(pool: list[tuple[str, str, str]], planned: list[tuple[datetime, int, int]], first_turn: int,
              first_session: int, rng: random.Random) -> tuple[list[tuple], Iterator[tuple]]:
    """The session rows (columns ``SESSION_COLUMNS``) and the turn rows (``TURN_COLUMNS``) of ``planned``;
    turn and session ids are given from ``first_turn`` and ``first_session`` on."""
    from shared.search.tokenizer import TOKENIZER_VERSION

    sessions = []
    for index, (start, user, size) in enumerate(planned):
        end = start + timedelta(seconds=size * sum(ROUND_GAP_SECONDS) / 2)
        sessions.append((first_session + index, user, user, 2 * size, start, end, end + timedelta(minutes=30)))

    def turns() -> Iterator[tuple]:
        turn = first_turn
        for session, (start, user, size) in enumerate(planned, start=first_session):
            said = start
            for _ in range(size):
                line, reply, tokens = rng.choice(pool)
                yield (turn, user, user, session, "user", line, len(line) // 4, True, None, tokens,
                       TOKENIZER_VERSION, said)
                yield (turn + 1, user, user, session, "assistant", reply, len(reply) // 4, True, turn, "", 0,
                       said + timedelta(seconds=REPLY_DELAY_SECONDS))
                turn += 2
                said += timedelta(seconds=rng.randint(*ROUND_GAP_SECONDS))

    return sessions, turns()


def ensure_chats(connection, users: int) -> None:
    """Each user's private console chat ``scale-<id>`` (id = the user's), made once."""
    if connection.execute("SELECT count(*) FROM chats").fetchone()[0]:
        return
    with connection.cursor().copy("COPY chats (id, platform, platform_chat_id, kind) FROM STDIN") as copy:
        for user in range(1, users + 1):
            copy.write_row((user, "console", f"scale-{user}", "private"))
    connection.execute("SELECT setval(pg_get_serial_sequence('chats', 'id'), (SELECT max(id) FROM chats))")


def grow_rounds(url: str, pool: list[tuple[str, str, str]], users: int, have: int, want: int,
                rng: random.Random, now: datetime) -> float:
    """Add rounds until there are ``want``, in new sittings, with the turns' secondary indexes dropped during
    the ``COPY`` and built again after it (foreign keys are not checked: the rows hold by construction);
    then vacuum and analyse as autovacuum would. Returns seconds."""
    import psycopg

    if want <= have:
        return 0.0
    started = time.perf_counter()
    planned = sittings(want - have, users, rng, now)
    with psycopg.connect(url) as connection:
        ensure_chats(connection, users)
        first_turn, first_session = connection.execute(
            "SELECT coalesce(max(id), 0) + 1 FROM conversation_turns UNION ALL "
            "SELECT coalesce(max(id), 0) + 1 FROM sessions").fetchall()
        sessions, turns = turn_rows(pool, planned, first_turn[0], first_session[0], rng)
        indexes = connection.execute(  # all but those of constraints (the primary key)
            "SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM pg_index "
            "WHERE indrelid = 'conversation_turns'::regclass "
            "AND NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conindid = indexrelid)").fetchall()
        connection.execute("SET session_replication_role = replica")
        for name, _ in indexes:
            connection.execute(f"DROP INDEX {name}")
        with connection.cursor().copy(f"COPY sessions ({', '.join(SESSION_COLUMNS)}) FROM STDIN") as copy:
            for row in sessions:
                copy.write_row(row)
        with connection.cursor().copy(f"COPY conversation_turns ({', '.join(TURN_COLUMNS)}) FROM STDIN") as copy:
            for done, row in enumerate(turns, start=1):
                copy.write_row(row)
                if done % 2_000_000 == 0:
                    progress(f"  {done // 2 + have:,} rounds loaded ({time.perf_counter() - started:.0f} s)")
        connection.execute("SET maintenance_work_mem = '512MB'")
        for _, definition in indexes:
            connection.execute(definition)
        for table in ("conversation_turns", "sessions"):
            connection.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("VACUUM (ANALYZE) conversation_turns, sessions, chats")
    return time.perf_counter() - started


def heaviest_user(url: str) -> tuple[int, int, int]:
    """The user with the most memories and rounds together: (user, memories, rounds)."""
    import psycopg

    with psycopg.connect(url) as connection:
        return one_row(connection, """
            SELECT user_id, sum(memories)::int, sum(rounds)::int FROM (
                SELECT user_id, count(*) AS memories, 0 AS rounds FROM memories GROUP BY user_id
                UNION ALL
                SELECT user_id, 0, count(*) FROM conversation_turns
                WHERE role = 'user' AND search_tokens <> '' GROUP BY user_id) AS per_kind
            GROUP BY user_id ORDER BY sum(memories) + sum(rounds) DESC, user_id LIMIT 1""")


def round_storage(url: str) -> dict:
    """What the turns take on disk, and how rounds spread over users."""
    import psycopg

    mib = 1024 * 1024
    with psycopg.connect(url) as connection:
        table, indexes, total = one_row(
            connection, "SELECT pg_relation_size('conversation_turns'), pg_indexes_size('conversation_turns'), "
                        "pg_total_relation_size('conversation_turns')")
        by_index: dict[str, int] = dict(connection.execute(
            "SELECT indexrelname, pg_relation_size(indexrelid) FROM pg_stat_user_indexes "
            "WHERE relname = 'conversation_turns' ORDER BY 2 DESC").fetchall())
        mean, p50, p99, most = one_row(
            connection, "SELECT avg(n), percentile_cont(0.5) WITHIN GROUP (ORDER BY n), "
                        "percentile_cont(0.99) WITHIN GROUP (ORDER BY n), max(n) FROM (SELECT count(*) AS n "
                        "FROM conversation_turns WHERE role = 'user' GROUP BY user_id) AS per_user")
    return {"turns_table_mib": round(table / mib, 1), "turns_indexes_mib": round(indexes / mib, 1),
            "turns_total_mib": round(total / mib, 1),
            "turns_index_mib": {name: round(size / mib, 1) for name, size in by_index.items()},
            "rounds_per_user": {"mean": round(float(mean or 0), 1), "p50": float(p50 or 0), "p99": float(p99 or 0),
                                "max": int(most or 0)}}
