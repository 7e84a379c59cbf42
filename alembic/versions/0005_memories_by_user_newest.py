"""Index of each user's active memories newest first, for the LIKE fallback and memory pages.

Without it, ``ORDER BY id DESC LIMIT n`` for one user walks the primary key across every user's rows
whenever fewer than ``n`` match (measured: 58 ms at 1M memories, against about 1 ms with it).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22 03:15:00
"""

from __future__ import annotations

import sqlalchemy as sa

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_memories_user_active_id", "memories", ["user_id", sa.text("id DESC")],
                    postgresql_where=sa.text("deleted_at IS NULL AND superseded_by IS NULL"))


def downgrade() -> None:
    op.drop_index("ix_memories_user_active_id", table_name="memories")
