"""Re-tokenises memories and episodes stored with an older tokenizer (see ``TOKENIZER_VERSION``).

Rows carry the version of the tokenizer that made their ``search_tokens``; a row written after a
tokenizer change is re-tokenised on write by :mod:`shared.db.search_sync`, and this sweep catches
the rows nobody writes to. It works in small batches (safe to run again and from several workers:
each batch is claimed with ``FOR UPDATE SKIP LOCKED``) and returns how many rows it refreshed.
"""

from __future__ import annotations

from collections.abc import Callable

from shared.recall.round_keys import rekey_rounds
from shared.repositories.uow import UnitOfWork
from shared.search.tokenizer import TOKENIZER_VERSION, search_text
from shared.text import clean_text

REINDEX_BATCH_SIZE = 500


def retokenize_stale(uow: UnitOfWork, batch_size: int = REINDEX_BATCH_SIZE) -> int:
    """Refreshes up to ``batch_size`` stale memories, as many stale episodes and as many stale rounds (those
    keyed by an older tokenizer, or made before rounds were searchable); the caller commits."""
    refreshed = 0
    for row in uow.search_index.stale(TOKENIZER_VERSION, batch_size):
        row.search_tokens = search_text(clean_text(part) for part in row.searchable_parts() if part)
        row.tokenizer_version = TOKENIZER_VERSION
        refreshed += 1
    uow.flush()
    by_user: dict[int, list[int]] = {}
    for user_id, turn_id in uow.rounds.stale(TOKENIZER_VERSION, batch_size):
        by_user.setdefault(user_id, []).append(turn_id)
    for user_id, turn_ids in by_user.items():
        refreshed += rekey_rounds(uow, user_id, turn_ids, only_kept=False)
    return refreshed


def retokenize_all_stale(uow_factory: Callable[[], UnitOfWork], batch_size: int = REINDEX_BATCH_SIZE) -> int:
    """Runs :func:`retokenize_stale` batch after batch, one transaction each, until none is left."""
    total = 0
    while True:
        with uow_factory() as uow:
            refreshed = retokenize_stale(uow, batch_size)
            uow.commit()
        total += refreshed
        if refreshed == 0:
            return total
