"""A job a worker is running says so until when (``jobs_outbox.running_until``, renewed while the worker lives),
so the outbox sweep never sends it again meanwhile, and a second delivery does not run it twice at once. A turn
asks which of its sitting's turns an owed extraction job already covers (``ix_jobs_outbox_owed_by_user``).

``model_call_holds`` is the shared model gate when Redis is not there (:mod:`shared.db.model_gate`): one row
per live turn or background call in flight on the model server, until it ends or its lease runs out.

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-26 12:10:00
"""

from __future__ import annotations

import sqlalchemy as sa

from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("jobs_outbox", sa.Column("running_until", sa.DateTime(timezone=True), nullable=True))
    op.create_index("ix_jobs_outbox_owed_by_user", "jobs_outbox", ["user_id", "task"], unique=False,
                    postgresql_where=sa.text("status IN ('pending', 'sent')"))
    op.create_table(
        "model_call_holds",
        sa.Column("holder", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("holder", name=op.f("pk_model_call_holds")),
        sa.CheckConstraint("kind IN ('live', 'background')", name=op.f("ck_model_call_holds_kind_allowed")),
    )


def downgrade() -> None:
    op.drop_table("model_call_holds")
    op.drop_index("ix_jobs_outbox_owed_by_user", table_name="jobs_outbox",
                  postgresql_where=sa.text("status IN ('pending', 'sent')"))
    op.drop_column("jobs_outbox", "running_until")
