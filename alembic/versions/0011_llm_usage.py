"""LLM and embedding usage: one row per request, a daily sum per user, kind and chat; quota lifts.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-23 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

KINDS = "kind IN ('turn', 'turn_embedding', 'extraction', 'episode', 'review', 'dedup', 'embedding')"


def upgrade() -> None:
    op.add_column("users", sa.Column("quota_lifted_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "llm_usage",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("chat_id", sa.BigInteger(), nullable=True),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("cached_tokens", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("estimated", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(KINDS, name=op.f("ck_llm_usage_kind_allowed")),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_llm_usage_user_id_users"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_llm_usage")),
    )
    op.create_index(op.f("ix_llm_usage_user_id_created_at"), "llm_usage", ["user_id", "created_at"])
    op.create_table(
        "llm_usage_daily",
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("chat_id", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("messages", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("calls", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("prompt_tokens", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("completion_tokens", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("cached_tokens", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("estimated_calls", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.CheckConstraint(KINDS, name=op.f("ck_llm_usage_daily_kind_allowed")),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_llm_usage_daily_user_id_users"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("user_id", "day", "kind", "chat_id", name=op.f("pk_llm_usage_daily")),
    )
    op.create_index(op.f("ix_llm_usage_daily_day"), "llm_usage_daily", ["day"])
    op.create_index(op.f("ix_llm_usage_daily_chat_id_day"), "llm_usage_daily", ["chat_id", "day"],
                    postgresql_where=sa.text("chat_id <> 0"))


def downgrade() -> None:
    op.drop_table("llm_usage_daily")
    op.drop_table("llm_usage")
    op.drop_column("users", "quota_lifted_at")
