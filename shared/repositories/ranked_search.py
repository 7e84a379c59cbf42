"""BM25 ranking of one user's memories inside PostgreSQL, with that user's own term statistics.

``ts_rank`` knows nothing of how rare a word is, so a memory that repeats a common word outranks
the one holding the rare word the user asked about. Here every query lexeme is its own prefix
tsquery; the rows of the user that match any of them (at most ``pool_limit``, newest first) are
scored with Okapi BM25: each matched lexeme adds ``weight · idf · (k1 + 1) / (1 + k1 · (1 - b +
b · length / average length))``. Document frequencies come from the matching rows, the population
from the user's active memories (counted up to a cap), lengths from ``length(search_tsv)``. A term
counts once per memory (memories are short, so term frequency adds little).

The same statement adds the ``LIKE`` fallback (what the tokens missed, e.g. 猫 inside 猫咪): the
user's newest memories containing a pattern (``ILIKE`` only for a pattern with a case), score 0, up to
``limit`` candidates in all; and, beyond ``limit``, the memories noted just before and just after each
of the best ``seeds`` (score 0, and in ``next_to`` the ids they were found beside; through the user's
``(user_id, id)`` index, two index probes a seed), since a line often answers or continues the one
before it without repeating its words. One round trip.

Cost follows the user, not the table: rows are found through the user's index and tested one by
one (``coalesce`` keeps the planner off the GIN index, which is shared by every user: for a common
word it walked 100k+ postings of other users to find a heavy user's few hundred, 37 of 40 ms at 1M
memories). A user's turn costs in proportion to that user's memories, whatever the others hold.
Each term's IDF is computed once (``rarity``: a ``numeric`` logarithm per matching row was 10 ms of a heavy user's
2,000 matches). The per-query statistics (``frequency``, ``population``, ``shape``) are ``MATERIALIZED``: inlined, the
planner (which expects one matching row) re-ran them for every matching row, 0.3 ms each time; for a
user with 700 memories and a common word in the question that was 120 of 123 ms.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import BigInteger, Float, TextClause, text
from sqlalchemy.dialects.postgresql import ARRAY

from shared.db.memory_models import Memory
from shared.search.scoring import BM25_B, BM25_K1
from shared.search.tsquery import MAX_QUERY_TERMS, like_pattern, weighted_prefix_queries

BM25_POOL_LIMIT = 2000
"""At most this many matching memories (the newest) are scored for one query."""
BM25_POPULATION_CAP = 20000
"""The user's memories are counted up to here for IDF; beyond it the figure barely moves."""
LIKE_SCAN_LIMIT = 5000
"""The inside-word pass (``LIKE``) reads at most the user's newest this many rows: the words a user asks about
in their own earlier lines are found by their tokens in all of them, and the pass, which reads every row it
looks at, stays bounded for a user with tens of thousands."""



@dataclass(frozen=True)
class RankedCandidates:
    """Memories with their BM25 score, best first (0 for those found by ``LIKE`` or beside another), and
    for each memory found beside one of the best, the ids of those it was noted next to."""

    found: list[tuple[Memory, float]]
    next_to: dict[int, tuple[int, ...]] = field(default_factory=dict)


BM25_SQL_TEMPLATE = """
    WITH terms AS (
        SELECT t.ord, to_tsquery('simple', t.query) AS query, t.weight
        FROM unnest(CAST(:queries AS text[]), CAST(:weights AS float8[])) WITH ORDINALITY AS t(query, weight, ord)
    ),
    pool AS MATERIALIZED (
        SELECT m.id, m.search_tsv, greatest(length(m.search_tsv), 1) AS len
        FROM {table} m
        WHERE {matches} AND {active}
        ORDER BY m.id DESC
        LIMIT :pool_limit
    ),
    hits AS (
        SELECT pool.id, pool.len, terms.ord, terms.weight
        FROM pool JOIN terms ON pool.search_tsv @@ terms.query
    ),
    frequency AS MATERIALIZED (SELECT ord, count(*) AS df FROM hits GROUP BY ord),
    population AS MATERIALIZED (
        SELECT greatest(count(*), (SELECT count(*) FROM pool)) AS n FROM (
            SELECT 1 FROM {table} m
            WHERE m.user_id = :user_id AND {active}
            LIMIT :population_cap) AS active_rows
    ),
    shape AS MATERIALIZED (SELECT avg(len) AS avg_len FROM pool),
    rarity AS MATERIALIZED (
        SELECT frequency.ord,
               CAST(ln(1 + (population.n - frequency.df + 0.5) / (frequency.df + 0.5)) AS float8) AS idf
        FROM frequency CROSS JOIN population
    ),
    ranked AS MATERIALIZED (
        SELECT hits.id,
               sum(hits.weight * rarity.idf
                   * (:k1 + 1) / (1 + :k1 * (1 - :b + :b * hits.len / shape.avg_len))) AS score
        FROM hits JOIN rarity USING (ord) CROSS JOIN shape
        GROUP BY hits.id
        ORDER BY score DESC, hits.id DESC
        LIMIT :limit
    ),
    contained AS MATERIALIZED (
        SELECT recent.id, 0.0::float8 AS score
        FROM (SELECT m.id, {text} AS words
              FROM {table} m
              WHERE cardinality(CAST(:exact_patterns AS text[])) + cardinality(CAST(:folded_patterns AS text[])) > 0
                AND m.user_id = :user_id AND {active}  -- no pattern: no row read
              ORDER BY m.id DESC
              LIMIT :like_scan) AS recent
        WHERE (recent.words LIKE ANY (CAST(:exact_patterns AS text[]))
               OR recent.words ILIKE ANY (CAST(:folded_patterns AS text[])))
          AND recent.id NOT IN (SELECT id FROM ranked)
        ORDER BY recent.id DESC
        LIMIT greatest(:limit - (SELECT count(*) FROM ranked), 0)
    ),
    seeds AS (SELECT id FROM ranked ORDER BY score DESC, id DESC LIMIT :seeds),
    adjacent AS MATERIALIZED (
        SELECT beside.id, seeds.id AS seed
        FROM seeds CROSS JOIN LATERAL (
            (SELECT m.id FROM {table} m
             WHERE m.user_id = :user_id AND {active} AND m.id < seeds.id
             ORDER BY m.id DESC LIMIT 1)
            UNION ALL
            (SELECT m.id FROM {table} m
             WHERE m.user_id = :user_id AND {active} AND m.id > seeds.id
             ORDER BY m.id LIMIT 1)
        ) AS beside
    ),
    found AS (
        SELECT id, score FROM ranked
        UNION ALL
        SELECT id, score FROM contained
        UNION ALL
        SELECT DISTINCT id, 0.0::float8 FROM adjacent
        WHERE id NOT IN (SELECT id FROM ranked) AND id NOT IN (SELECT id FROM contained)
    )
    SELECT found.id, found.score,
           coalesce((SELECT array_agg(adjacent.seed) FROM adjacent WHERE adjacent.id = found.id),
                    '{}'::bigint[]) AS next_to
    FROM found
"""
"""The ranking statement for a table of ``{table}`` rows whose live ones satisfy ``{active}`` (about alias ``m``),
the user's rows that match the question being those where ``{matches}`` holds, looked for inside words in
``{text}``."""

SHARED_INDEX_OFF = "m.user_id = :user_id AND coalesce(m.search_tsv, ''::tsvector) @@ to_tsquery('simple', :any_query)"
"""The user's rows that match the question, tested one by one (``coalesce`` keeps the planner off a GIN index
shared by every user)."""
USER_SCOPED_INDEX = ("mnemo_user_lexemes(m.user_id, m.search_tsv)"
                     " @@ mnemo_user_query(CAST(:user_id AS bigint), to_tsquery('simple', :any_query))"
                     " AND m.search_tsv @@ to_tsquery('simple', :any_query) AND coalesce(m.user_id, 0) = :user_id")
"""The user's rows that match the question, found through a per-user GIN index (migration 0025: the user's
lexemes as ``<user>:<lexeme>``, searched with a scoped superset of the question) and tested against the question
itself, so the rows are exactly those :data:`SHARED_INDEX_OFF` finds, without reading the user's other rows. The
scoped lexemes already hold only the user's rows; the user is still tested, through ``coalesce`` so the planner
does not AND in every one of the user's index entries (43,000 for the heaviest, more than the matches)."""


def bm25_statement(table: str, active: str, text_column: str, matches: str = SHARED_INDEX_OFF) -> TextClause:
    """:data:`BM25_SQL_TEMPLATE` for one kind of searchable row (memories, rounds)."""
    shaped = (BM25_SQL_TEMPLATE.replace("{table}", table).replace("{active}", active)
              .replace("{text}", text_column).replace("{matches}", matches))
    return text(shaped)


MEMORY_BM25_SQL = bm25_statement("memories", "m.deleted_at IS NULL AND m.superseded_by IS NULL", "m.content")


MEMORY_BM25 = MEMORY_BM25_SQL.columns(id=BigInteger, score=Float, next_to=ARRAY(BigInteger)).subquery("ranked")
"""The ranking as a subquery of ``(id, score)``, built once so SQLAlchemy compiles it once."""


def has_case(term: str) -> bool:
    """Whether ``term`` holds a letter with an upper and a lower case: only then must ``ILIKE`` fold case. A
    Chinese word or a number is looked for with ``LIKE``, which compares bytes (a third of ``ILIKE``'s time
    per row, which lowers every memory it reads)."""
    return term.lower() != term.upper()


def bm25_parameters(user_id: int, weighted_terms: Sequence[tuple[str, float]], limit: int,
                    contains: Sequence[str] = (), seeds: int = 0) -> dict[str, Any] | None:
    """The bound parameters of :data:`MEMORY_BM25_SQL` (None when no term can be searched for); the
    memories noted just before and after the best ``seeds`` come too."""
    queries = weighted_prefix_queries(weighted_terms)
    if not queries:
        return None
    terms = [term for term in list(dict.fromkeys(contains))[:MAX_QUERY_TERMS] if term]
    return {"queries": [query for query, _ in queries], "weights": [weight for _, weight in queries],
            "any_query": " | ".join(query for query, _ in queries), "user_id": user_id, "limit": limit,
            "exact_patterns": [like_pattern(term) for term in terms if not has_case(term)],
            "folded_patterns": [like_pattern(term) for term in terms if has_case(term)],
            "pool_limit": BM25_POOL_LIMIT, "population_cap": BM25_POPULATION_CAP, "like_scan": LIKE_SCAN_LIMIT,
            "k1": BM25_K1, "b": BM25_B, "seeds": seeds}
