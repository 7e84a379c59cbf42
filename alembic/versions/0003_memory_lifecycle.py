"""Memory lifecycle: the once-a-day decay guard and the review marks on memories.

``decayed_at`` is when the daily decay last lowered a memory's importance (at most once a UTC day);
``promotion_reviewed_at`` is when a promotion review decided to keep it as it is (it is not asked
again); ``decay_reviewed_at`` is when a decay review kept it (asked again only once it has been used
since).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

COLUMNS = ("decayed_at", "promotion_reviewed_at", "decay_reviewed_at")


def upgrade() -> None:
    for name in COLUMNS:
        op.add_column("memories", sa.Column(name, sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    for name in reversed(COLUMNS):
        op.drop_column("memories", name)
