"""Platform updates become an inbox: each keeps its body until handled, and is marked handled in the same
transaction as the turn or the change it made, so a replica that dies in between leaves it to another.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-24 03:00:00
"""

from __future__ import annotations

import sqlalchemy as sa

from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("platform_updates", sa.Column("body", sa.Text(), nullable=True))
    op.add_column("platform_updates", sa.Column("handled_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("platform_updates", sa.Column("handled_by", sa.String(36), nullable=True))
    op.add_column("platform_updates", sa.Column("attempts", sa.SmallInteger(), server_default="1", nullable=False))
    op.execute("UPDATE platform_updates SET handled_at = seen_at")  # taken before: handled by the old rule
    op.create_index("platform_updates_unhandled", "platform_updates", ["platform", "seen_at"],
                    postgresql_where=sa.text("handled_at IS NULL"))


def downgrade() -> None:
    op.drop_index("platform_updates_unhandled", table_name="platform_updates")
    for column in ("attempts", "handled_by", "handled_at", "body"):
        op.drop_column("platform_updates", column)
