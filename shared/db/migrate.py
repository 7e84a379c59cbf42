"""Running the Alembic migrations from code (``mnemo db upgrade``, tests, the embedded default)."""

from __future__ import annotations

from pathlib import Path

from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, pool

from alembic import command
from shared.db.engine import make_engine
from shared.db.vectors import VectorStatus, enable_vectors, vector_status

ALEMBIC_DIR = Path(__file__).resolve().parents[2] / "alembic"


def alembic_config(database_url: str, embedding_dimensions: int = 384) -> Config:
    config = Config()
    config.set_main_option("script_location", str(ALEMBIC_DIR))
    config.attributes["database_url"] = database_url
    config.attributes["embedding_dimensions"] = embedding_dimensions
    return config


def upgrade(database_url: str, embedding_dimensions: int = 384, revision: str = "head") -> VectorStatus:
    """Migrate to ``revision`` and switch vectors on where pgvector has become available."""
    command.upgrade(alembic_config(database_url, embedding_dimensions), revision)
    engine = make_engine(database_url, poolclass=pool.NullPool)
    try:
        with engine.begin() as connection:
            if current_revision_of(connection) == head_revision():
                return enable_vectors(connection, embedding_dimensions)
            return vector_status(connection)
    finally:
        engine.dispose()


def downgrade(database_url: str, revision: str) -> None:
    command.downgrade(alembic_config(database_url), revision)


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config("")).get_current_head()


def current_revision(database_url: str) -> str | None:
    engine = make_engine(database_url, poolclass=pool.NullPool)
    try:
        with engine.connect() as connection:
            return current_revision_of(connection)
    finally:
        engine.dispose()


def current_revision_of(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()
