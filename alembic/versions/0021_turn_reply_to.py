"""The bot's turns say which message of the user they answer, so that of two messages answered at once
(two replicas, or two updates handled together) neither takes the other's reply for its own.

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-25 16:00:00
"""

from __future__ import annotations

import sqlalchemy as sa

from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("conversation_turns", sa.Column("reply_to_turn_id", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    op.drop_column("conversation_turns", "reply_to_turn_id")
