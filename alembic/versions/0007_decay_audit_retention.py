"""Index of the daily decay events by age, for the audit retention rule of the nightly decay.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-22 04:20:00
"""

from __future__ import annotations

import sqlalchemy as sa

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_memory_events_decay_created_at", "memory_events", ["created_at"],
                    postgresql_where=sa.text("action = 'decay'"))


def downgrade() -> None:
    op.drop_index("ix_memory_events_decay_created_at", table_name="memory_events")
