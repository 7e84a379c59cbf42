"""The per-user index of rounds (migration 0025) on real PostgreSQL, with and without pgvector: a user's
matching rounds are found through it without reading their other rounds, the rounds it finds are exactly those
the question matches (phrases the parser makes of one piece, prefixes, quotes, long and mixed-script words),
and one user's lexemes never answer another user's query."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import BigInteger, Float, text
from sqlalchemy.dialects.postgresql import ARRAY

from shared.repositories.ranked_search import SHARED_INDEX_OFF, bm25_parameters, bm25_statement
from shared.repositories.rounds import ROUND_ACTIVE, ROUND_BM25_SQL
from shared.search.tokenizer import TOKENIZER_VERSION, query_terms, search_tokens

pytestmark = pytest.mark.pgvector

NOW = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
ROW_BY_ROW = bm25_statement("conversation_turns", ROUND_ACTIVE, "m.search_tokens", SHARED_INDEX_OFF).columns(
    id=BigInteger, score=Float, next_to=ARRAY(BigInteger))
"""The same ranking with every one of the user's rounds tested row by row, as before the index."""

LINES = ["I walked the dog by the lake", "我家猫咪叫豆豆", "it's raining in Portland, Oregon",
         "围棋应该怎么练？我想下得更好", "猫cat混写的一句话", "a" * 300 + " with a very long word",
         "O'Brien's café — naïve façade", "今天去博物馆看了敦煌展", "back\\slash and 'quotes' \"too\"",
         "the dog, the dog and the dog again", "5月2日我去看了电影", "my password hint is tangerine"]
QUESTIONS = ["dog", "猫", "Portland", "围棋怎么练", "cat", "aaaa", "O'Brien café", "敦煌", "slash quotes",
             "5月2日", "tangerine hint", "it's", "naïve", "nothing matches this"]


def add_rounds(session, user_id: int, chat_id: int, lines: list[str]) -> None:
    for index, line in enumerate(lines):
        session.execute(text(
            "INSERT INTO conversation_turns (user_id, chat_id, role, text, search_tokens, tokenizer_version, "
            "created_at) VALUES (:user, :chat, 'user', :line, :tokens, :version, :at)"),
            {"user": user_id, "chat": chat_id, "line": line, "tokens": search_tokens(line),
             "version": TOKENIZER_VERSION, "at": NOW - timedelta(minutes=len(lines) - index)})


def chat_of(session, user_id: int, name: str) -> int:
    return session.scalar(text("INSERT INTO chats (platform, platform_chat_id, kind) "
                               "VALUES ('console', :name, 'private') RETURNING id"), {"name": name})


@pytest.fixture
def two_users(uow_factory):
    with uow_factory() as uow:
        alice = uow.users.identify("console", "alice").user_id
        bob = uow.users.identify("console", "bob").user_id
        add_rounds(uow.session, alice, chat_of(uow.session, alice, "alice"), LINES)
        add_rounds(uow.session, bob, chat_of(uow.session, bob, "bob"), [f"bob's line {line}" for line in LINES])
        uow.commit()
    return alice, bob


def ranked(session, statement, user_id: int, question: str) -> list[tuple[int, float]]:
    parameters = bm25_parameters(user_id, [(term, 1.0) for term in query_terms(question)], 10,
                                 contains=query_terms(question), seeds=2)
    if parameters is None:
        return []
    return [(row.id, round(row.score, 9)) for row in session.execute(statement, parameters)]


@pytest.mark.parametrize("question", QUESTIONS)
def test_the_index_finds_exactly_the_rounds_the_question_matches(two_users, uow_factory, question):
    alice, bob = two_users
    with uow_factory() as uow:
        for user_id in (alice, bob):
            through_index = ranked(uow.session, ROUND_BM25_SQL.columns(id=BigInteger, score=Float,
                                                                       next_to=ARRAY(BigInteger)), user_id, question)
            assert through_index == ranked(uow.session, ROW_BY_ROW, user_id, question)


def test_a_users_lexemes_answer_only_that_users_query(two_users, uow_factory):
    alice, _ = two_users
    with uow_factory() as uow:
        found = uow.session.execute(text(
            "SELECT user_id, count(*) FROM conversation_turns "
            "WHERE role = 'user' AND search_tokens <> '' "
            "AND mnemo_user_lexemes(user_id, search_tsv) @@ mnemo_user_query(:user, to_tsquery('simple', 'dog')) "
            "GROUP BY user_id"), {"user": alice}).all()
    assert found == [(alice, 2)]


def test_a_heavy_users_rare_word_is_found_through_the_index_without_reading_their_other_rounds(two_users,
                                                                                              uow_factory):
    alice, _ = two_users
    with uow_factory() as uow:
        chat = uow.session.scalar(text("SELECT id FROM chats WHERE platform_chat_id = 'alice'"))
        add_rounds(uow.session, alice, chat, [f"ordinary chatter number {n} about the weather" for n in range(3000)])
        uow.session.execute(text("ANALYZE conversation_turns"))
        parameters = bm25_parameters(alice, [("tangerine", 1.0)], 10)
        plan = "\n".join(line for (line,) in uow.session.execute(
            text("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " + ROUND_BM25_SQL.text), parameters))
    pool = plan[plan.index("CTE pool"):plan.index("CTE hits") if "CTE hits" in plan else None]
    assert "ix_conversation_turns_round_keys" in pool
    assert "ix_conversation_turns_rounds" not in pool, pool
