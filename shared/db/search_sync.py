"""Keeps ``search_tokens`` in step with the text of memories and episodes on every ORM write.

The tokens are computed in Python (jieba) and Postgres derives ``search_tsv`` from them, so the
only way to get them out of step would be a bulk SQL update of the text, which the repositories
never do. A bulk insert (:mod:`shared.repositories.bulk_rows`) fills them with
:func:`refresh_search_tokens` before its statement, as the hook would.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, event, inspect
from sqlalchemy.orm import InstanceState, Mapper

from shared.db.memory_models import Episode, Memory
from shared.search.tokenizer import TOKENIZER_VERSION, search_text
from shared.text import clean_text

SEARCHABLE = (Memory, Episode)
"""The models that keep search tokens."""
_WATCHED = {Memory: ("subject", "predicate", "content", "entities", "happened_at"), Episode: ("summary", "entities")}
"""The columns of each that its tokens are made of."""


def refresh_search_tokens(target: Memory | Episode) -> None:
    """Tokenise the row's text into ``search_tokens`` with the current tokenizer."""
    target.search_tokens = search_text(clean_text(part) for part in target.searchable_parts() if part)
    target.tokenizer_version = TOKENIZER_VERSION


def _before_insert(_mapper: Mapper[Any], _connection: Connection, target: Memory | Episode) -> None:
    refresh_search_tokens(target)


def _before_update(_mapper: Mapper[Any], _connection: Connection, target: Memory | Episode) -> None:
    state: InstanceState[Memory | Episode] = inspect(target)
    stale = target.tokenizer_version != TOKENIZER_VERSION
    if stale or any(state.attrs[name].history.has_changes() for name in _WATCHED[type(target)]):
        refresh_search_tokens(target)


for _model in _WATCHED:
    event.listen(_model, "before_insert", _before_insert)
    event.listen(_model, "before_update", _before_update)
