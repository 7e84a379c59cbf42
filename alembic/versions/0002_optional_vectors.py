"""Optional vector columns: embedding + HNSW index on memories and episodes where pgvector exists.

On a PostgreSQL without pgvector this migration changes nothing; `mnemo db upgrade` runs the
same idempotent step again every time, so installing pgvector later switches vectors on.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 02:05:00
"""

from __future__ import annotations

from alembic import context, op
from shared.db.vectors import disable_vectors, enable_vectors

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

DEFAULT_DIMENSIONS = 384


def upgrade() -> None:
    dimensions = context.config.attributes.get("embedding_dimensions", DEFAULT_DIMENSIONS)
    enable_vectors(op.get_bind(), dimensions)


def downgrade() -> None:
    disable_vectors(op.get_bind())
