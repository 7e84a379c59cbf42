"""When the model last judged a memory's look-alike cluster, so the nightly dedup asks once per change.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-22 04:40:00
"""

from __future__ import annotations

import sqlalchemy as sa

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("memories", sa.Column("dedup_reviewed_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column("memories", "dedup_reviewed_at")
