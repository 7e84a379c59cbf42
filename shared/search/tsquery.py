"""Safe search expressions built from anything a user can type.

Nothing here touches the database: it turns text into a ``tsquery`` string and ``LIKE`` patterns
that are passed as bound parameters, so quotes, tsquery operators (``& | ! ( ) : *``), backslashes,
emoji, NUL bytes and 100k-character messages can never break a query. Chinese words (and numbers,
and other scripts) are prefix terms (``'猫':*``); English stems match whole (``'dog'``, see
:func:`shared.search.tokenizer.matches_by_prefix`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from shared.search.tokenizer import MAX_TOKEN_CHARS, matches_by_prefix, query_terms
from shared.text import clean_text

_LEXEME = re.compile(r"[^\W_]+")

MAX_QUERY_TERMS = 32
"""More terms than this add nothing to ranking and only make the query slower."""

MAX_LIKE_CHARS = 200
"""A LIKE fallback term is a word or phrase; longer input is cut to this."""


def prefix_tsquery(terms: Iterable[str], max_terms: int = MAX_QUERY_TERMS) -> str | None:
    """``'term1':* | 'term2'`` for ``to_tsquery('simple', …)``, or None when nothing is left.

    ``terms`` are search tokens (see :func:`shared.search.tokenizer.query_terms`). Whatever they hold, only
    runs of letters and digits (at most ``MAX_TOKEN_CHARS`` long) become lexemes, each quoted, so
    operators, quotes and whitespace can never reach the tsquery parser as syntax.
    """
    pieces = (piece for term in terms for piece in _LEXEME.findall(clean_text(term)))
    unique = [piece for piece in dict.fromkeys(pieces) if len(piece) <= MAX_TOKEN_CHARS][:max_terms]
    return " | ".join(_lexeme_query(term) for term in unique) or None


def weighted_prefix_queries(terms: Iterable[tuple[str, float]],
                            max_terms: int = MAX_QUERY_TERMS) -> list[tuple[str, float]]:
    """One tsquery per lexeme (``'lexeme':*``, or ``'lexeme'`` for an English stem) with its weight, for
    scoring terms one by one.

    ``terms`` are ``(search token, weight)`` pairs, most important first; a lexeme met twice keeps
    its highest weight, and only the first ``max_terms`` distinct lexemes are kept. The same rules
    as :func:`prefix_tsquery` make every piece safe to parse.
    """
    weights: dict[str, float] = {}
    for term, weight in terms:
        for piece in _LEXEME.findall(clean_text(term)):
            if len(piece) > MAX_TOKEN_CHARS or (piece not in weights and len(weights) >= max_terms):
                continue
            weights[piece] = max(weight, weights.get(piece, weight))
    return [(_lexeme_query(piece), weight) for piece, weight in weights.items()]


def tsquery_for_text(text: str, max_terms: int = MAX_QUERY_TERMS) -> str | None:
    """The prefix tsquery for free text a user typed (its stemmed search tokens, as stored)."""
    return prefix_tsquery(query_terms(text), max_terms)


def like_pattern(term: str) -> str:
    """``%term%`` with LIKE's wildcards escaped; use with ``ESCAPE '\\'``."""
    escaped = clean_text(term)[:MAX_LIKE_CHARS].replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _lexeme_query(piece: str) -> str:
    """One quoted lexeme, a prefix term unless it is an English stem."""
    return _quote_lexeme(piece) + (":*" if matches_by_prefix(piece) else "")


def _quote_lexeme(term: str) -> str:
    """A tsquery quoted lexeme: quotes doubled, backslashes escaped."""
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"
