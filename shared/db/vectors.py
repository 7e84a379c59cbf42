"""The optional pgvector columns: ``embedding vector(N)`` with an HNSW index on memories, episodes and
conversation turns (a round's embedding is on the user's turn, as its search keys are).

They exist only where the ``vector`` extension can be installed. Switching them on later (install
pgvector, run ``mnemo db upgrade`` again) adds the columns to the existing tables without touching
any other data; a change of ``EMBEDDING_DIMENSIONS`` re-creates only the embeddings, which are
derived data that the workers compute again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from sqlalchemy import Connection, text

VECTOR_TABLES = ("memories", "episodes", "conversation_turns")
MODEL_NAMED_TABLES = ("memories", "episodes")
"""Tables whose rows name the model that embedded them (a round is embedded once, by the configured model)."""

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class VectorStatus:
    """What the database offers: the extension, and each table's embedding dimension (None = no column)."""

    available: bool
    installed: bool
    dimensions: dict[str, int | None] = field(default_factory=dict)

    @property
    def enabled(self) -> bool:
        return self.installed and all(self.dimensions.get(table) for table in VECTOR_TABLES)


def vector_status(connection: Connection) -> VectorStatus:
    available = connection.scalar(text(
        "SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'")) > 0
    installed = connection.scalar(text("SELECT count(*) FROM pg_extension WHERE extname = 'vector'")) > 0
    dimensions = {table: _embedding_dimensions(connection, table) for table in VECTOR_TABLES}
    return VectorStatus(available=available, installed=installed, dimensions=dimensions)


def enable_vectors(connection: Connection, dimensions: int) -> VectorStatus:
    """Add the embedding columns and HNSW indexes where pgvector is available; idempotent."""
    status = vector_status(connection)
    if not status.available:
        return status
    connection.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
    for table in VECTOR_TABLES:
        current = status.dimensions.get(table)
        if current is not None and current != dimensions:
            log.warning("%s.embedding has %s dimensions, settings say %s: re-creating the embeddings",
                        table, current, dimensions)
            _drop_column(connection, table)
            current = None
        if current is None:
            connection.execute(text(f"ALTER TABLE {table} ADD COLUMN embedding vector({int(dimensions)})"))
            connection.execute(text(
                f"CREATE INDEX IF NOT EXISTS ix_{table}_embedding_hnsw ON {table} "
                "USING hnsw (embedding vector_cosine_ops)"))
    return vector_status(connection)


def disable_vectors(connection: Connection) -> None:
    """Drop the embedding columns (the extension stays; other databases may use it)."""
    for table in VECTOR_TABLES:
        _drop_column(connection, table)


def _drop_column(connection: Connection, table: str) -> None:
    connection.execute(text(f"DROP INDEX IF EXISTS ix_{table}_embedding_hnsw"))
    connection.execute(text(f"ALTER TABLE {table} DROP COLUMN IF EXISTS embedding"))
    if table in MODEL_NAMED_TABLES:
        connection.execute(text(f"UPDATE {table} SET embedding_model = NULL"))


def _embedding_dimensions(connection: Connection, table: str) -> int | None:
    """The declared dimension of ``table.embedding`` (pgvector stores it as the type modifier)."""
    row = connection.execute(text(
        "SELECT a.atttypmod FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
        "WHERE c.relname = :table AND a.attname = 'embedding' AND NOT a.attisdropped "
        "AND c.relnamespace = to_regnamespace(current_schema())::oid"), {"table": table}).first()
    return None if row is None else int(row[0])
