"""Follow-ups (issue 31): ``open_threads`` holds what a user mentioned is coming up ("周五上午面试"), when (absolute),
the memory it relates to, and what became of it (open, asked, answered, closed), with the leased claim of the
follow-up's delivery (``claimed_until``, ``attempts``) as reminders have. ``users`` gains the user's consent
(``followups_on_at``), the once-only offer (``followups_offered_at``) and their quiet hours; ``llm_usage`` counts
the model's follow-up words under their own kind, ``followup``.

Revision ID: 0028
Revises: 0027
Create Date: 2026-11-26 16:00:00
"""

from __future__ import annotations

import sqlalchemy as sa

from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

OLD_KINDS = "kind IN ('turn', 'turn_embedding', 'extraction', 'episode', 'review', 'dedup', 'embedding')"
NEW_KINDS = "kind IN ('turn', 'turn_embedding', 'extraction', 'episode', 'review', 'dedup', 'embedding', 'followup')"
USAGE_TABLES = ("llm_usage", "llm_usage_daily")


def upgrade() -> None:
    op.add_column("users", sa.Column("followups_on_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("users", sa.Column("followups_offered_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("users", sa.Column("quiet_hours", sa.String(length=16), nullable=True))
    op.create_table(
        "open_threads",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("chat_id", sa.BigInteger(), nullable=True),
        sa.Column("what", sa.Text(), nullable=False),
        sa.Column("happens_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("day_only", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("timezone", sa.String(length=64), nullable=False),
        sa.Column("language", sa.String(length=8), server_default=sa.text("'en'"), nullable=False),
        sa.Column("memory_id", sa.BigInteger(), nullable=True),
        sa.Column("source_turn_id", sa.BigInteger(), nullable=True),
        sa.Column("status", sa.String(length=16), server_default=sa.text("'open'"), nullable=False),
        sa.Column("claimed_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("attempts", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("asked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("followup_turn_id", sa.BigInteger(), nullable=True),
        sa.Column("answered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("closed_reason", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("status IN ('open', 'asked', 'answered', 'closed')",
                           name=op.f("ck_open_threads_status_allowed")),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_open_threads_user_id_users"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["chat_id"], ["chats.id"], name=op.f("fk_open_threads_chat_id_chats"),
                                ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["memory_id"], ["memories.id"], name=op.f("fk_open_threads_memory_id_memories"),
                                ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["source_turn_id"], ["conversation_turns.id"],
                                name=op.f("fk_open_threads_source_turn_id_conversation_turns"), ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["followup_turn_id"], ["conversation_turns.id"],
                                name=op.f("fk_open_threads_followup_turn_id_conversation_turns"), ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_open_threads")),
    )
    op.create_index("ix_open_threads_due", "open_threads", ["happens_at"], unique=False,
                    postgresql_where=sa.text("status = 'open'"))
    op.create_index(op.f("ix_open_threads_user_id_status"), "open_threads", ["user_id", "status"], unique=False)
    op.create_index("ix_open_threads_asked_in_chat", "open_threads", ["chat_id", "user_id"], unique=False,
                    postgresql_where=sa.text("status = 'asked'"))
    for table in USAGE_TABLES:
        op.drop_constraint(op.f(f"ck_{table}_kind_allowed"), table, type_="check")
        op.create_check_constraint(op.f(f"ck_{table}_kind_allowed"), table, NEW_KINDS)


def downgrade() -> None:
    for table in USAGE_TABLES:
        op.execute(f"DELETE FROM {table} WHERE kind = 'followup'")
        op.drop_constraint(op.f(f"ck_{table}_kind_allowed"), table, type_="check")
        op.create_check_constraint(op.f(f"ck_{table}_kind_allowed"), table, OLD_KINDS)
    op.drop_table("open_threads")
    op.drop_column("users", "quiet_hours")
    op.drop_column("users", "followups_offered_at")
    op.drop_column("users", "followups_on_at")
