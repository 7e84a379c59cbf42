"""Nearest-neighbour search over the optional pgvector columns, always filtered by user.

The ``embedding`` columns are not mapped by the ORM (they exist only where pgvector is installed),
so this module speaks SQL. Whether they exist is checked once per process; the methods work inside
the caller's unit of work.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sqlalchemy import TextClause, text

from shared.db.results import rows_changed
from shared.db.vectors import vector_status
from shared.errors import EmbeddingError

if TYPE_CHECKING:
    from shared.repositories.uow import UnitOfWork

NEAREST_SQL = text("""
    SELECT id, 1 - (embedding <=> CAST(:vector AS vector)) AS similarity
    FROM memories
    WHERE user_id = :user_id AND deleted_at IS NULL AND superseded_by IS NULL AND embedding IS NOT NULL
    ORDER BY embedding <=> CAST(:vector AS vector)
    LIMIT :limit
""")

NEAREST_ROUNDS_SQL = text("""
    SELECT id, 1 - (embedding <=> CAST(:vector AS vector)) AS similarity
    FROM conversation_turns
    WHERE user_id = :user_id AND role = 'user' AND search_tokens <> '' AND embedding IS NOT NULL
    ORDER BY embedding <=> CAST(:vector AS vector)
    LIMIT :limit
""")
ROUNDS_WITHOUT_EMBEDDING_SQL = text("""
    SELECT id FROM conversation_turns
    WHERE user_id = :user_id AND id = ANY(CAST(:ids AS bigint[])) AND role = 'user' AND search_tokens <> ''
      AND embedding IS NULL
    ORDER BY id
""")

CLEAR_SQL = text("UPDATE memories SET embedding = NULL WHERE id = :memory_id AND user_id = :user_id")


class VectorIndex:
    """The memories' and rounds' embeddings: nearest neighbours for one user, and writing embeddings."""

    def __init__(self) -> None:
        self._enabled: bool | None = None
        self._iterative_scan = False

    def enabled(self, uow: UnitOfWork) -> bool:
        session = uow.session
        if self._enabled is None:
            self._enabled = vector_status(session.connection()).enabled
            if self._enabled:
                version = session.scalar(text("SELECT extversion FROM pg_extension WHERE extname = 'vector'"))
                self._iterative_scan = _version(version) >= (0, 8)  # filtered HNSW scans keep going
        return self._enabled

    def nearest_memories(self, uow: UnitOfWork, user_id: int, vector: Sequence[float],
                         limit: int) -> list[tuple[int, float]]:
        """Active memories of ``user_id`` closest to ``vector``: (id, cosine similarity), best first."""
        return self._nearest(uow, NEAREST_SQL, user_id, vector, limit)

    def nearest_rounds(self, uow: UnitOfWork, user_id: int, vector: Sequence[float],
                       limit: int) -> list[tuple[int, float]]:
        """Rounds (user turn ids) of ``user_id`` kept for recall closest to ``vector``, best first."""
        return self._nearest(uow, NEAREST_ROUNDS_SQL, user_id, vector, limit)

    def _nearest(self, uow: UnitOfWork, statement: TextClause, user_id: int, vector: Sequence[float],
                 limit: int) -> list[tuple[int, float]]:
        """(id, cosine similarity) of ``statement``'s rows of the user, best first; none when vectors are off."""
        if not self.enabled(uow):
            return []
        session = uow.session
        if self._iterative_scan:
            session.execute(text("SET LOCAL hnsw.iterative_scan = relaxed_order"))
        rows = session.execute(statement, {"vector": vector_literal(vector), "user_id": user_id, "limit": limit})
        return [(int(row.id), float(row.similarity)) for row in rows]

    def rounds_without_embedding(self, uow: UnitOfWork, user_id: int, turn_ids: Sequence[int]) -> list[int]:
        """Those of the user's rounds ``turn_ids`` kept for recall that have no embedding yet."""
        if not self.enabled(uow) or not turn_ids:
            return []
        rows = uow.session.execute(ROUNDS_WITHOUT_EMBEDDING_SQL, {"user_id": user_id, "ids": list(turn_ids)})
        return [int(row.id) for row in rows]

    def store_round_embedding(self, uow: UnitOfWork, user_id: int, turn_id: int, vector: Sequence[float]) -> bool:
        """Save one round's embedding on its user turn; False when the round is gone or vectors are off."""
        if not self.enabled(uow):
            return False
        result = uow.session.execute(
            text("UPDATE conversation_turns SET embedding = CAST(:vector AS vector) "
                 "WHERE id = :turn_id AND user_id = :user_id AND role = 'user'"),
            {"vector": vector_literal(vector), "turn_id": turn_id, "user_id": user_id})
        return rows_changed(result) == 1

    def store_memory_embedding(self, uow: UnitOfWork, user_id: int, memory_id: int,
                               vector: Sequence[float], model: str) -> bool:
        """Save one memory's embedding; False when the memory is gone or vectors are off."""
        if not self.enabled(uow):
            return False
        result = uow.session.execute(
            text("UPDATE memories SET embedding = CAST(:vector AS vector), embedding_model = :model "
                 "WHERE id = :memory_id AND user_id = :user_id"),
            {"vector": vector_literal(vector), "model": model, "memory_id": memory_id, "user_id": user_id})
        return rows_changed(result) == 1

    def clear_memory_embedding(self, uow: UnitOfWork, user_id: int, memory_id: int) -> None:
        """Forget one memory's embedding (its text changed); the embedding job writes a new one."""
        if self.enabled(uow):
            uow.session.execute(CLEAR_SQL, {"memory_id": memory_id, "user_id": user_id})


def _version(value: str | None) -> tuple[int, ...]:
    parts = []
    for part in (value or "0").split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def vector_literal(vector: Sequence[float]) -> str:
    """pgvector's text form, ``[0.1,0.2,...]``, to bind as ``CAST(:v AS vector)``."""
    values = [float(value) for value in vector]
    if not all(math.isfinite(value) for value in values):
        raise EmbeddingError("a vector holds NaN or infinity, which pgvector rejects")
    return "[" + ",".join(f"{value:.9g}" for value in values) + "]"
