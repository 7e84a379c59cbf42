"""The access lists operators change from chat (``/access``), on top of the settings' lists.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "access_entries",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("effect", sa.String(length=8), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("platform", sa.String(length=16), nullable=False),
        sa.Column("value", sa.String(length=32), nullable=False),
        sa.Column("added_by", sa.String(length=96), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("effect IN ('allow', 'block')", name=op.f("ck_access_entries_effect_allowed")),
        sa.CheckConstraint("kind IN ('user', 'chat', 'guild', 'channel', 'role')",
                           name=op.f("ck_access_entries_kind_allowed")),
        sa.CheckConstraint("platform IN ('discord', 'telegram')", name=op.f("ck_access_entries_platform_allowed")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_access_entries")),
        sa.UniqueConstraint("kind", "platform", "value", name=op.f("uq_access_entries_kind_platform_value")),
    )


def downgrade() -> None:
    op.drop_table("access_entries")
