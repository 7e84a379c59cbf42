"""A user's time zone is the person's, not one account's: ``users.timezone`` (an IANA name or an offset such as
"UTC+05:30"; NULL: the operator's ``DEFAULT_TIMEZONE``), copied from the first of the user's identities that had
one, and ``identities.timezone`` goes. ``users.zone_told_at`` records that the user was told, once, which zone a
reminder used while they had none of their own.

A reminder says what kind it is (``todos.kind``): ``reminder`` pings at its time, ``deadline`` pings ahead of
its due time (``remind_at`` before ``due_at``). ``todos.wall_clock`` tells a time on the clock ("08:30"), which
keeps its clock time when the user's zone changes, from an amount of time ("in 10 minutes"), which does not.

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-27 08:00:00
"""

from __future__ import annotations

import sqlalchemy as sa

from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

COPY_TO_USERS = """
UPDATE users SET timezone = first.timezone
FROM (SELECT DISTINCT ON (user_id) user_id, timezone FROM identities
      WHERE timezone IS NOT NULL ORDER BY user_id, id) AS first
WHERE users.id = first.user_id"""
COPY_TO_IDENTITIES = "UPDATE identities SET timezone = users.timezone FROM users WHERE users.id = identities.user_id"


def upgrade() -> None:
    op.add_column("users", sa.Column("timezone", sa.String(length=64), nullable=True))
    op.add_column("users", sa.Column("zone_told_at", sa.DateTime(timezone=True), nullable=True))
    op.execute(COPY_TO_USERS)
    op.drop_column("identities", "timezone")
    op.add_column("todos", sa.Column("kind", sa.String(length=16), server_default=sa.text("'reminder'"),
                                     nullable=False))
    op.create_check_constraint(op.f("ck_todos_kind_allowed"), "todos", "kind IN ('reminder', 'deadline')")
    op.add_column("todos", sa.Column("wall_clock", sa.Boolean(), server_default=sa.text("true"), nullable=False))


def downgrade() -> None:
    op.drop_column("todos", "wall_clock")
    op.drop_constraint(op.f("ck_todos_kind_allowed"), "todos", type_="check")
    op.drop_column("todos", "kind")
    op.add_column("identities", sa.Column("timezone", sa.String(length=64), nullable=True))
    op.execute(COPY_TO_IDENTITIES)
    op.drop_column("users", "zone_told_at")
    op.drop_column("users", "timezone")
