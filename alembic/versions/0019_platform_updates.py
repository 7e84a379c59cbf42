"""Platform updates the bots have taken: a command or button press delivered twice, or to two webhook
replicas, is handled once.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-24 02:00:00
"""

from __future__ import annotations

import sqlalchemy as sa

from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "platform_updates",
        sa.Column("platform", sa.String(16), primary_key=True),
        sa.Column("update_id", sa.BigInteger(), primary_key=True),
        sa.Column("seen_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("platform_updates")
