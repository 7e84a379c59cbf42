"""The log context (turn, platform, user hash) of the work that owed a job, carried to the worker's logs.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23 22:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("jobs_outbox", sa.Column("log_context", postgresql.JSONB(), nullable=True))


def downgrade() -> None:
    op.drop_column("jobs_outbox", "log_context")
