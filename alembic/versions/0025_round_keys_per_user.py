"""Rounds are found through a per-user inverted index: a GIN over each round's lexemes written as
``<user id>:<lexeme>`` (``mnemo_user_lexemes``), searched with the question's lexemes scoped the same way
(``mnemo_user_query``). A user's few matching rounds are read without reading their others (the heaviest user
of the scale benchmark has 21,609), and without walking other users' postings of a common word, as the shared
GIN of ``memories.search_tsv`` would (``btree_gin`` is not in every PostgreSQL Mnemo runs on).

Both functions are immutable SQL. The scoped query is a superset of the question's own: each of its lexemes,
ORed (a phrase the parser made of one piece, ``'a' <-> 'b'``, becomes ``'a' | 'b'``), with the prefix marks
kept; ranking still tests the round's own ``search_tsv`` against the question, so what is found is exactly
what was found before. Lexemes are cut to 256 characters, more than any query term (64), so no 2 KB lexeme
limit is ever reached and a prefix term still finds a long lexeme.

``conversation_turns`` is never scanned in parallel (``parallel_workers = 0``): every query Mnemo sends reads one
user's few rows, and the planner, which cannot know that a scoped lexeme belongs to one user, expected tens of
thousands of matches and started two workers for three rows (12 of a recall's 23 ms at 10M rounds).

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-26 09:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

USER_LEXEMES = """
CREATE OR REPLACE FUNCTION mnemo_user_lexemes(owner bigint, keys tsvector) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN array_to_tsvector(ARRAY(SELECT owner::text || ':' || left(lexeme, 256) FROM unnest(keys) AS k(lexeme)))
"""
USER_QUERY = r"""
CREATE OR REPLACE FUNCTION mnemo_user_query(owner bigint, query tsquery) RETURNS tsquery
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN CAST(regexp_replace(
    regexp_replace(CAST(query AS text), '''((?:[^'']|'''')*)''', '''' || owner::text || ':\1''', 'g'),
    '<(?:-|\d+)>|&', '|', 'g') AS tsquery)
"""


def upgrade() -> None:
    op.execute(USER_LEXEMES)
    op.execute(USER_QUERY)
    op.execute("CREATE INDEX ix_conversation_turns_round_keys ON conversation_turns "
               "USING gin (mnemo_user_lexemes(user_id, search_tsv)) WHERE role = 'user' AND search_tokens <> ''")
    op.execute("ALTER TABLE conversation_turns SET (parallel_workers = 0)")


def downgrade() -> None:
    op.execute("ALTER TABLE conversation_turns RESET (parallel_workers)")
    op.execute("DROP INDEX ix_conversation_turns_round_keys")
    op.execute("DROP FUNCTION mnemo_user_query(bigint, tsquery)")
    op.execute("DROP FUNCTION mnemo_user_lexemes(bigint, tsvector)")
