"""Memories and episodes whose search tokens an older tokenizer made (:mod:`shared.recall.reindex`)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from shared.db.memory_models import Episode, Memory


class SearchIndexRepository:
    """Finds rows to re-tokenise, whoever's they are (the tokens are derived data, not read here)."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def stale(self, version: int, limit: int) -> list[Memory | Episode]:
        """Up to ``limit`` memories, then up to ``limit`` episodes, tokenised by another version than
        ``version``, each in id order and locked with ``SKIP LOCKED`` (parallel sweeps take other rows)."""
        rows: list[Memory | Episode] = []
        for model in (Memory, Episode):
            rows += self.session.scalars(
                select(model).where(model.tokenizer_version != version)
                .order_by(model.id).limit(limit).with_for_update(skip_locked=True))
        return rows
