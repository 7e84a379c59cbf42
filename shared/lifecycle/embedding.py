"""Embedding memories and rounds in the background, so vector search can find them (when pgvector is present); what the
embedding endpoint's requests cost is recorded with the vectors."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime

from shared.llm.metering import metered
from shared.recall.embeddings import Embedder
from shared.repositories.uow import UnitOfWork
from shared.repositories.vectors import VectorIndex


def embed_memories(uow_factory: Callable[[], UnitOfWork], embedder: Embedder, vectors: VectorIndex,
                   user_id: int, memory_ids: Iterable[int], *, now: datetime | None = None) -> int:
    """Embed the user's memories that lack an embedding from this model; returns how many were stored.

    Idempotent: a memory already embedded by this model is skipped, and one whose text changed while
    it was being embedded is left for the next job.
    """
    with uow_factory() as uow:
        if not vectors.enabled(uow):
            return 0
        wanted = [memory for memory_id in memory_ids
                  if (memory := uow.memories.get(user_id, memory_id)) is not None
                  and memory.embedding_model != embedder.name]
        texts = {memory.id: (memory.content, memory.updated_at) for memory in wanted}
    if not texts:
        return 0
    with metered("embedding") as meter:
        embedded = embedder.embed([content for content, _ in texts.values()])
    stored = 0
    with uow_factory() as uow:
        for (memory_id, (_content, updated_at)), vector in zip(texts.items(), embedded, strict=True):
            current = uow.memories.get(user_id, memory_id)
            if current is not None and current.updated_at == updated_at:
                stored += vectors.store_memory_embedding(uow, user_id, memory_id, vector, embedder.name)
        uow.usage.record(user_id, None, meter.calls, now or datetime.now(UTC))
        uow.commit()
    return stored


def embed_rounds(uow_factory: Callable[[], UnitOfWork], embedder: Embedder, vectors: VectorIndex,
                 user_id: int, turn_ids: Iterable[int], *, now: datetime | None = None) -> int:
    """Embed the user's rounds (the line and the reply) that have no embedding; returns how many were stored.
    Idempotent: a round embedded already, or gone, is skipped."""
    with uow_factory() as uow:
        wanted = vectors.rounds_without_embedding(uow, user_id, list(turn_ids))
        texts = {item.turn_id: f"{item.line}\n{item.reply or ''}".strip()
                 for item in uow.rounds.material(user_id, wanted)}
    if not texts:
        return 0
    with metered("embedding") as meter:
        embedded = embedder.embed(list(texts.values()))
    stored = 0
    with uow_factory() as uow:
        for turn_id, vector in zip(texts, embedded, strict=True):
            stored += vectors.store_round_embedding(uow, user_id, turn_id, vector)
        uow.usage.record(user_id, None, meter.calls, now or datetime.now(UTC))
        uow.commit()
    return stored
