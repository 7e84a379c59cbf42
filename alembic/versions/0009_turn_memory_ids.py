"""Which memories the prompt answering a user's turn showed, so later prompts show them again the same way.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23 21:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("conversation_turns", sa.Column("memory_ids", postgresql.ARRAY(sa.BigInteger()), nullable=True))


def downgrade() -> None:
    op.drop_column("conversation_turns", "memory_ids")
