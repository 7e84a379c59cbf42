"""Rounds: a user's line and the bot's reply to it, recallable like memories (DESIGN.md §2 and §5).

A round lives on the user's turn: its ``search_tokens`` hold the keys of the line, the reply and the facts
drawn from that line (fact-augmented keys), and the BM25 statement of :mod:`shared.repositories.ranked_search`
ranks the user's rounds as it ranks memories (the same per-user pool, LIKE fallback and rounds said right
before and after the best), then reads each found round's words and reply in the same round trip. A round
with no keys (a paused user's line, a bot turn) is never found. Every query is scoped to one user; in a
group the user's rounds are their own lines and the bot's replies to them, never another member's line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    DateTime,
    Float,
    Row,
    Text,
    func,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session, aliased

from shared.db.memory_models import Memory
from shared.db.models import ConversationTurn
from shared.repositories.ranked_search import USER_SCOPED_INDEX, bm25_parameters, bm25_statement

ROUND_ACTIVE = "m.role = 'user' AND m.search_tokens <> ''"
ROUND_POPULATION_CAP = 5000
"""A user's rounds are counted up to here for IDF (memories: 20,000): counting the heaviest user's 20,000 index
entries was 4-7 ms of every recall, and past a few thousand rounds the IDF of a rare word barely moves."""
ROUND_LIKE_SCAN = 1000
"""The inside-word pass (``LIKE``, for a Chinese word inside a longer one) reads the user's newest this many rounds
(memories: 5,000): it reads every row it looks at, and a user with 3,000 rounds spent 12 ms of a recall on it."""
ROUND_BM25_SQL = bm25_statement("conversation_turns", ROUND_ACTIVE, "m.search_tokens", USER_SCOPED_INDEX)

_REPLY = """COALESCE(
    (SELECT reply.text FROM conversation_turns reply
     WHERE reply.reply_to_turn_id = t.id AND reply.role = 'assistant' ORDER BY reply.id LIMIT 1),
    (SELECT reply.text FROM conversation_turns reply
     WHERE reply.session_id = t.session_id AND reply.id > t.id AND reply.role = 'assistant'
       AND reply.reply_to_turn_id IS NULL
     ORDER BY reply.id LIMIT 1))"""
"""The bot's reply to the user's turn ``t``: the bot turn that says it answers it (an imported round has no
session), else, for turns stored before replies said so (migration 0021), the first bot turn after it."""
_RANKED_ROUNDS = text(f"""
    SELECT ranked.id, ranked.score, ranked.next_to, t.created_at, t.session_id, t.text, t.search_tokens,
           {_REPLY} AS reply
    FROM ({ROUND_BM25_SQL.text}) AS ranked JOIN conversation_turns t ON t.id = ranked.id
""").columns(id=BigInteger, score=Float, next_to=ARRAY(BigInteger), created_at=DateTime(timezone=True),
             session_id=BigInteger, text=Text, search_tokens=Text, reply=Text)
_ROUNDS_IN_SPAN = text(f"""
    SELECT t.id, t.created_at, t.session_id, t.text, t.search_tokens, {_REPLY} AS reply
    FROM conversation_turns t
    WHERE t.user_id = :user_id AND t.role = 'user' AND t.search_tokens <> ''
      AND t.created_at >= :start AND t.created_at < :end
    ORDER BY t.created_at DESC, t.id DESC
    LIMIT :limit
""").columns(id=BigInteger, created_at=DateTime(timezone=True), session_id=BigInteger, text=Text,
             search_tokens=Text, reply=Text)


_ROUNDS_AMONG = text(f"""
    SELECT t.id, t.created_at, t.session_id, t.text, t.search_tokens, {_REPLY} AS reply
    FROM conversation_turns t
    WHERE t.user_id = :user_id AND t.id = ANY(CAST(:ids AS bigint[])) AND t.role = 'user' AND t.search_tokens <> ''
""").columns(id=BigInteger, created_at=DateTime(timezone=True), session_id=BigInteger, text=Text,
             search_tokens=Text, reply=Text)


@dataclass(frozen=True)
class Round:
    """One round as recall shows it: the user's turn id, when it was said, the line and the bot's reply."""

    turn_id: int
    said_at: datetime
    session_id: int | None
    line: str
    reply: str | None
    search_tokens: str = ""


@dataclass(frozen=True)
class RankedRounds:
    """Rounds with their BM25 score, best first (0 for those found by LIKE or beside another), and for each
    round found beside one of the best, the ids of those it was said next to."""

    found: list[tuple[Round, float]]
    next_to: dict[int, tuple[int, ...]] = field(default_factory=dict)
    similarity: dict[int, float] = field(default_factory=dict)
    """Cosine similarity of the rounds' embeddings to the message's, where vectors are in play."""


@dataclass(frozen=True)
class RoundMaterial:
    """What a round's keys are made of."""

    turn_id: int
    line: str
    reply: str | None
    facts: tuple[str, ...]


class RoundRepository:
    """Ranks, reads and keys one user's rounds."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def ranked_with_adjacent(self, user_id: int, weighted_terms: Sequence[tuple[str, float]], limit: int,
                             contains: Sequence[str] = (), seeds: int = 0) -> RankedRounds:
        parameters = bm25_parameters(user_id, weighted_terms, limit, contains, seeds)
        if parameters is None:
            return RankedRounds([])
        parameters |= {"population_cap": ROUND_POPULATION_CAP, "like_scan": ROUND_LIKE_SCAN}
        rows = self.session.execute(_RANKED_ROUNDS, parameters).all()
        return RankedRounds([(_round(row), float(row.score)) for row in rows],
                            {row.id: tuple(row.next_to) for row in rows if row.next_to})

    def among(self, user_id: int, turn_ids: Sequence[int]) -> list[Round]:
        """Those of the user's rounds ``turn_ids`` kept for recall (those the vectors found), in one round trip."""
        if not turn_ids:
            return []
        rows = self.session.execute(_ROUNDS_AMONG, {"user_id": user_id, "ids": list(turn_ids)}).all()
        return [_round(row) for row in rows]

    def said_between(self, user_id: int, start: datetime, end: datetime, limit: int) -> list[Round]:
        """The user's rounds said in ``[start, end)``, newest first (a time cue: "5月2日", "last Tuesday")."""
        rows = self.session.execute(_ROUNDS_IN_SPAN, {"user_id": user_id, "start": start, "end": end,
                                                      "limit": limit}).all()
        return [_round(row) for row in rows]

    def material(self, user_id: int, turn_ids: Sequence[int]) -> list[RoundMaterial]:
        """The line, reply and active facts drawn from each of the user's turns ``turn_ids`` (user turns only)."""
        if not turn_ids:
            return []
        reply_text = reply_text_of(ConversationTurn)
        rows = self.session.execute(
            select(ConversationTurn.id, ConversationTurn.text, reply_text)
            .where(ConversationTurn.user_id == user_id, ConversationTurn.id.in_(turn_ids),
                   ConversationTurn.role == "user")).all()
        facts: dict[int, list[str]] = {}
        for source, content in self.session.execute(
                select(Memory.source_turn_id, Memory.content)
                .where(Memory.user_id == user_id, Memory.source_turn_id.in_(turn_ids),
                       Memory.deleted_at.is_(None), Memory.superseded_by.is_(None))
                .order_by(Memory.id)):
            if source is not None:  # never: the query asks for the given turns
                facts.setdefault(source, []).append(content)
        return [RoundMaterial(turn_id, line, reply_line, tuple(facts.get(turn_id, ())))
                for turn_id, line, reply_line in rows]

    def key(self, user_id: int, turn_id: int, tokens: str, version: int,
            shown_memory_ids: Sequence[int] = ()) -> None:
        """Set the search keys of the user's round ``turn_id`` ("" keeps it out of recall) and, in the same
        statement, the memories the prompt answering it showed (when it showed any)."""
        values: dict[str, object] = {"search_tokens": tokens, "tokenizer_version": version}
        if shown_memory_ids:
            values["memory_ids"] = list(shown_memory_ids)
        self.session.execute(update(ConversationTurn)
                             .where(ConversationTurn.id == turn_id, ConversationTurn.user_id == user_id,
                                    ConversationTurn.role == "user")
                             .values(**values))

    def kept_among(self, user_id: int, turn_ids: Sequence[int]) -> list[int]:
        """Those of the user's turns that are rounds kept for recall (keyed)."""
        if not turn_ids:
            return []
        return list(self.session.scalars(
            select(ConversationTurn.id).where(ConversationTurn.user_id == user_id, ConversationTurn.id.in_(turn_ids),
                                              ConversationTurn.role == "user", ConversationTurn.search_tokens != "")))

    def stale(self, version: int, limit: int) -> list[tuple[int, int]]:
        """Up to ``limit`` (user id, turn id) of rounds keyed by another tokenizer version, or never keyed since
        they were made before rounds were searchable (version 0), locked ``SKIP LOCKED``; a round left unkeyed
        on purpose (paused) is not one of them."""
        query = (select(ConversationTurn.user_id, ConversationTurn.id)
                 .where(ConversationTurn.role == "user", ConversationTurn.tokenizer_version != version,
                        ConversationTurn.paused.is_(False),
                        or_(ConversationTurn.search_tokens != "", ConversationTurn.tokenizer_version == 0))
                 .order_by(ConversationTurn.id).limit(limit).with_for_update(skip_locked=True))
        return [(user_id, turn_id) for user_id, turn_id in self.session.execute(query)]


def reply_text_of(turn: type[ConversationTurn]) -> ColumnElement[str | None]:
    """The text of the bot's reply to ``turn`` (correlated), as :data:`_REPLY` reads it."""
    linked, legacy = aliased(ConversationTurn), aliased(ConversationTurn)
    by_link = (select(linked.text).where(linked.reply_to_turn_id == turn.id, linked.role == "assistant")
               .order_by(linked.id).limit(1).correlate(turn).scalar_subquery())
    first_after = (select(legacy.text)
                   .where(legacy.session_id == turn.session_id, legacy.id > turn.id, legacy.role == "assistant",
                          legacy.reply_to_turn_id.is_(None))
                   .order_by(legacy.id).limit(1).correlate(turn).scalar_subquery())
    return func.coalesce(by_link, first_after)


def _round(row: Row[Any]) -> Round:
    return Round(turn_id=row.id, said_at=row.created_at, session_id=row.session_id, line=row.text, reply=row.reply,
                 search_tokens=row.search_tokens)



