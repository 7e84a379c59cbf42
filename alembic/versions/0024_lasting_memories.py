"""Memories that last: each memory keeps the importance it was given where it was made (``base_importance``;
rows made before this revision were all made at 1.0), a partial index finds the recycle bin (``deleted_at`` now
means "put in the bin by a rule"), sources ``imported`` and ``operator`` and the audit actions ``bin``,
``restore`` and ``purge`` are allowed, and each daily maintenance run's report is kept (``maintenance_runs``).

Rows soft-deleted before this revision were hidden because the user asked, in chat, to forget them: they are
really deleted now, with the older values they had replaced, and their audit is reduced to tombstones, as
``/forget`` does.

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-26 08:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

OLD_SOURCES = "'user_stated', 'inferred', 'system', 'manual'"
NEW_SOURCES = "'user_stated', 'inferred', 'imported', 'operator', 'system', 'manual'"
OLD_ACTIONS = "'add', 'update', 'boost', 'delete', 'supersede', 'promote', 'decay', 'forget', 'expire'"
NEW_ACTIONS = OLD_ACTIONS + ", 'bin', 'restore', 'purge'"
FORGOTTEN = "forgotten by the user"
HIDDEN_AND_HISTORY = """
    WITH RECURSIVE chain(id) AS (
        SELECT id FROM memories WHERE deleted_at IS NOT NULL
        UNION SELECT m.id FROM memories m JOIN chain c ON m.superseded_by = c.id
    ) SELECT id FROM chain"""


def upgrade() -> None:
    op.add_column("memories", sa.Column("base_importance", sa.Float(), server_default=sa.text("1.0"),
                                        nullable=False))
    _forget_hidden_rows()
    op.create_index("ix_memories_binned", "memories", ["user_id", "deleted_at"],
                    postgresql_where=sa.text("deleted_at IS NOT NULL"))
    _allow("memories", "source", NEW_SOURCES)
    _allow("memory_events", "action", NEW_ACTIONS)
    op.create_table(
        "maintenance_runs",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("as_of", sa.DateTime(timezone=True), nullable=False),
        sa.Column("report", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_maintenance_runs")),
    )
    op.create_index(op.f("ix_maintenance_runs_finished_at"), "maintenance_runs", ["finished_at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_maintenance_runs_finished_at"), table_name="maintenance_runs")
    op.drop_table("maintenance_runs")
    op.execute("DELETE FROM memory_events WHERE action IN ('bin', 'restore', 'purge')")
    _allow("memory_events", "action", OLD_ACTIONS)
    op.execute("UPDATE memories SET source = 'manual' WHERE source = 'imported'")
    op.execute("UPDATE memories SET source = 'system' WHERE source = 'operator'")
    _allow("memories", "source", OLD_SOURCES)
    op.drop_index("ix_memories_binned", table_name="memories")
    op.drop_column("memories", "base_importance")


def _allow(table: str, column: str, values: str) -> None:
    name = op.f(f"ck_{table}_{column}_allowed")
    op.drop_constraint(name, table, type_="check")
    op.create_check_constraint(name, table, f"{column} IN ({values})")


def _forget_hidden_rows() -> None:
    """What chat hid on the user's word goes for real: tombstones in the audit, one ``forget`` event, the rows."""
    op.execute(f"""
        UPDATE memory_events SET before = NULL, after = NULL, reason = '{FORGOTTEN}'
        WHERE memory_id IN ({HIDDEN_AND_HISTORY})""")
    op.execute(f"""
        INSERT INTO memory_events (user_id, memory_id, action, actor, reason)
        SELECT user_id, id, 'forget', 'user', '{FORGOTTEN}' FROM memories WHERE id IN ({HIDDEN_AND_HISTORY})""")
    op.execute(f"DELETE FROM memories WHERE id IN ({HIDDEN_AND_HISTORY})")
