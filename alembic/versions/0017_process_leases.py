"""Leases for duties there must be only one of (beat): a row renewed by its holder, instead of a
session-level advisory lock, which a pooler in transaction mode (PgBouncer) would not keep.

Revision ID: 0017
Revises: 0013
Create Date: 2026-11-24 01:00:00
"""

from __future__ import annotations

import sqlalchemy as sa

from alembic import op

revision = "0017"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "process_leases",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("holder", sa.String(160), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("process_leases")
