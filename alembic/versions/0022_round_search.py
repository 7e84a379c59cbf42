"""Rounds are searchable: a user's line and the bot's reply to it (a round) get search keys on the user's
turn, tokenised like memories (jieba and Snowball), with a generated tsvector, so what was said is
recalled beside what was extracted from it. Rows made before this revision have ``tokenizer_version``
0 and are keyed by the re-tokenising sweep (``mnemo db retokenize`` / the worker's reindex).

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-26 06:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

TSVECTOR_SQL = "to_tsvector('simple'::regconfig, coalesce(search_tokens, ''))"


def upgrade() -> None:
    op.add_column("conversation_turns", sa.Column("search_tokens", sa.Text(), server_default=sa.text("''"),
                                                  nullable=False))
    op.add_column("conversation_turns", sa.Column("search_tsv", postgresql.TSVECTOR(),
                                                  sa.Computed(TSVECTOR_SQL, persisted=True), nullable=True))
    op.add_column("conversation_turns", sa.Column("tokenizer_version", sa.SmallInteger(),
                                                  server_default=sa.text("0"), nullable=False))
    op.create_index("ix_conversation_turns_rounds", "conversation_turns", ["user_id", sa.text("id DESC")],
                    postgresql_where=sa.text("role = 'user' AND search_tokens <> ''"))


def downgrade() -> None:
    op.drop_index("ix_conversation_turns_rounds", table_name="conversation_turns")
    op.drop_column("conversation_turns", "tokenizer_version")
    op.drop_column("conversation_turns", "search_tsv")
    op.drop_column("conversation_turns", "search_tokens")
