"""BM25 ranking of one user's memories inside PostgreSQL, with that user's own term statistics.

``ts_rank`` knows nothing of how rare a word is, so a memory that repeats a common word outranks
the one holding the rare word the user asked about. Here every query lexeme is its own prefix
tsquery; the rows of the user that match any of them (at most ``pool_limit``, newest first) are
scored with Okapi BM25: each matched lexeme adds ``weight · idf · (k1 + 1) / (1 + k1 · (1 - b +
b · length / average length))``. Document frequencies come from the matching rows, the population
from the user's active memories (counted up to a cap), lengths from ``length(search_tsv)``. A term
counts once per memory (memories are short, so term frequency adds little).

The same statement adds the ``LIKE`` fallback (what the tokens missed, e.g. 猫 inside 猫咪): the
user's newest memories containing a pattern, score 0, up to ``limit`` candidates in all. One round
trip.

Cost follows the user, not the table: rows are found through the user's index and tested one by
one (``coalesce`` keeps the planner off the GIN index, which is shared by every user: for a common
word it walked 100k+ postings of other users to find a heavy user's few hundred, 37 of 40 ms at 1M
memories). A user's turn costs in proportion to that user's memories, whatever the others hold.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Float, text

MEMORY_BM25_SQL = text("""
    WITH terms AS (
        SELECT t.ord, to_tsquery('simple', t.query) AS query, t.weight
        FROM unnest(CAST(:queries AS text[]), CAST(:weights AS float8[])) WITH ORDINALITY AS t(query, weight, ord)
    ),
    pool AS MATERIALIZED (
        SELECT m.id, m.search_tsv, greatest(length(m.search_tsv), 1) AS len
        FROM memories m
        WHERE m.user_id = :user_id AND m.deleted_at IS NULL AND m.superseded_by IS NULL
          AND coalesce(m.search_tsv, ''::tsvector) @@ to_tsquery('simple', :any_query)
        ORDER BY m.id DESC
        LIMIT :pool_limit
    ),
    hits AS (
        SELECT pool.id, pool.len, terms.ord, terms.weight
        FROM pool JOIN terms ON pool.search_tsv @@ terms.query
    ),
    frequency AS (SELECT ord, count(*) AS df FROM hits GROUP BY ord),
    population AS (
        SELECT greatest(count(*), (SELECT count(*) FROM pool)) AS n FROM (
            SELECT 1 FROM memories
            WHERE user_id = :user_id AND deleted_at IS NULL AND superseded_by IS NULL
            LIMIT :population_cap) AS active_rows
    ),
    shape AS (SELECT avg(len) AS avg_len FROM pool),
    ranked AS MATERIALIZED (
        SELECT hits.id,
               sum(hits.weight * ln(1 + (population.n - frequency.df + 0.5) / (frequency.df + 0.5))
                   * (:k1 + 1) / (1 + :k1 * (1 - :b + :b * hits.len / shape.avg_len))) AS score
        FROM hits JOIN frequency USING (ord) CROSS JOIN population CROSS JOIN shape
        GROUP BY hits.id
        ORDER BY score DESC, hits.id DESC
        LIMIT :limit
    ),
    contained AS (
        SELECT m.id, 0.0::float8 AS score
        FROM memories m
        WHERE m.user_id = :user_id AND m.deleted_at IS NULL AND m.superseded_by IS NULL
          AND m.content ILIKE ANY (CAST(:patterns AS text[]))
          AND m.id NOT IN (SELECT id FROM ranked)
        ORDER BY m.id DESC
        LIMIT greatest(:limit - (SELECT count(*) FROM ranked), 0)
    )
    SELECT id, score FROM ranked
    UNION ALL
    SELECT id, score FROM contained
""")

MEMORY_BM25 = MEMORY_BM25_SQL.columns(id=BigInteger, score=Float).subquery("ranked")
"""The ranking as a subquery of ``(id, score)``, built once so SQLAlchemy compiles it once."""
