"""One-time tokens: confirmations of destructive commands, identity link codes, panel sign-in links.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "one_time_tokens",
        sa.Column("token", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("purpose", sa.String(length=16), nullable=False),
        sa.Column("payload", postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'"), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("purpose IN ('confirm', 'link', 'panel')", name=op.f("ck_one_time_tokens_purpose_allowed")),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_one_time_tokens_user_id_users"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("token", name=op.f("pk_one_time_tokens")),
    )
    op.create_index(op.f("ix_one_time_tokens_user_id_purpose"), "one_time_tokens", ["user_id", "purpose"])
    op.create_index(op.f("ix_one_time_tokens_expires_at"), "one_time_tokens", ["expires_at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_one_time_tokens_expires_at"), table_name="one_time_tokens")
    op.drop_index(op.f("ix_one_time_tokens_user_id_purpose"), table_name="one_time_tokens")
    op.drop_table("one_time_tokens")
