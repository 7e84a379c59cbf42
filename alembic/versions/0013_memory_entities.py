"""What a memory is about, as the knowledge monitor read it: the people, pets, places and things it
names (``entities``) and when what it tells of happened (``happened_at``); both go into its search
tokens, and the time into the match of time cues.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-23 23:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("memories", sa.Column("entities", JSONB(), nullable=False, server_default=sa.text("'[]'")))
    op.add_column("memories", sa.Column("happened_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column("memories", "happened_at")
    op.drop_column("memories", "entities")
