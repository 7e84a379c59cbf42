"""The user's control over rounds: a user's turn says whether it was said while remembering was paused
(``paused``: kept out of recall, deleted with its reply when the sitting closes; rows made before this
revision are taken as not paused); and the bot's replies are found by the user's turn they answer (a round's
reply is read, forgotten with it and deleted with it past ``CONVERSATION_RETENTION_DAYS`` by
``reply_to_turn_id``, also for rounds outside any session, imported ones), so that column gets a partial index.

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-26 07:00:00
"""

from __future__ import annotations

import sqlalchemy as sa

from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("conversation_turns", sa.Column("paused", sa.Boolean(), server_default=sa.text("false"),
                                                  nullable=False))
    op.create_index("ix_conversation_turns_reply_to", "conversation_turns", ["reply_to_turn_id"],
                    postgresql_where=sa.text("reply_to_turn_id IS NOT NULL"))


def downgrade() -> None:
    op.drop_index("ix_conversation_turns_reply_to", table_name="conversation_turns")
    op.drop_column("conversation_turns", "paused")
