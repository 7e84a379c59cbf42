"""One user's rounds as records the user controls (DESIGN.md §2 and §7): listed and searched in the panel,
offered and deleted by ``/forget``, their replies linked again on import, and a paused user's dropped when
the sitting closes.

A round is the user's turn and the bot's reply to it (the bot turn whose ``reply_to_turn_id`` names it, or,
for turns stored before replies said so, the first bot turn after it in its session). Deleting a round
deletes both; memories drawn from it stay and lose their link (``ON DELETE SET NULL``). Every method but
:meth:`RoundRecordRepository.drop_unkept` is scoped to one user.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.orm import Session, aliased

from shared.db.models import ConversationTurn
from shared.repositories.rounds import reply_text_of
from shared.search.tsquery import like_pattern

_BULK = {"synchronize_session": False}


@dataclass(frozen=True)
class RoundRecord:
    """One round as the user sees it in the panel or a /forget preview."""

    turn_id: int
    said_at: datetime
    line: str
    reply: str | None
    recalled: bool
    """False for a round kept out of recall on purpose (said while remembering was paused)."""


class RoundRecordRepository:
    """Lists, deletes and links one user's rounds."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def page(self, user_id: int, *, search: str | None = None, limit: int = 20,
             offset: int = 0) -> tuple[list[RoundRecord], int]:
        """One page of the user's rounds, newest first, and how many match; ``search`` is words the line or the
        reply contains."""
        reply = reply_text_of(ConversationTurn)
        query = select(ConversationTurn.id, ConversationTurn.created_at, ConversationTurn.text, reply.label("reply"),
                       ConversationTurn.paused).where(ConversationTurn.user_id == user_id,
                                                                   ConversationTurn.role == "user")
        if search:
            pattern = like_pattern(search)
            query = query.where(or_(ConversationTurn.text.ilike(pattern, escape="\\"),
                                    reply.ilike(pattern, escape="\\")))
        total = self.session.scalar(select(func.count()).select_from(query.subquery())) or 0
        rows = self.session.execute(query.order_by(ConversationTurn.id.desc()).limit(limit).offset(offset))
        return [RoundRecord(row.id, row.created_at, row.text, row.reply, not row.paused) for row in rows], total

    def forget(self, user_id: int, turn_ids: Sequence[int]) -> list[int]:
        """Delete the user's rounds ``turn_ids`` (their user turns and the bot's replies); returns the ids of the
        user turns deleted."""
        if not turn_ids:
            return []
        lines = select(ConversationTurn.id).where(ConversationTurn.user_id == user_id,
                                                  ConversationTurn.id.in_(turn_ids), ConversationTurn.role == "user")
        return self._delete_rounds(user_id, list(self.session.scalars(lines)))

    def link_replies(self, user_id: int, links: dict[int, int]) -> None:
        """Mark each of the user's bot turns (key) as the reply to the user's turn (value)."""
        for reply_id, line_id in links.items():
            self.session.execute(update(ConversationTurn)
                                 .where(ConversationTurn.user_id == user_id, ConversationTurn.id == reply_id,
                                        ConversationTurn.role == "assistant")
                                 .values(reply_to_turn_id=line_id).execution_options(**_BULK))

    def drop_unkept(self, session_ids: Sequence[int]) -> int:
        """Delete the rounds kept out of recall (said while paused) in these sessions, whoever's they are (each
        session is one user's); returns how many rounds went."""
        if not session_ids:
            return 0
        owners = self.session.execute(select(ConversationTurn.user_id, ConversationTurn.id)
                                      .where(ConversationTurn.session_id.in_(session_ids), ConversationTurn.paused))
        by_user: dict[int, list[int]] = {}
        for user_id, turn_id in owners:
            by_user.setdefault(user_id, []).append(turn_id)
        return sum(len(self._delete_rounds(user_id, ids)) for user_id, ids in by_user.items())

    def _delete_rounds(self, user_id: int, line_ids: list[int]) -> list[int]:
        if not line_ids:
            return []
        legacy = aliased(ConversationTurn)
        first_after = (select(legacy.id)
                       .where(legacy.session_id == ConversationTurn.session_id, legacy.id > ConversationTurn.id,
                              legacy.role == "assistant", legacy.reply_to_turn_id.is_(None))
                       .order_by(legacy.id).limit(1).correlate(ConversationTurn).scalar_subquery())
        legacy_replies = [reply for reply in self.session.scalars(
            select(first_after).where(ConversationTurn.id.in_(line_ids))) if reply is not None]
        self.session.execute(delete(ConversationTurn)
                             .where(ConversationTurn.user_id == user_id,
                                    or_(ConversationTurn.id.in_(line_ids + legacy_replies),
                                        ConversationTurn.reply_to_turn_id.in_(line_ids)))
                             .execution_options(**_BULK))
        return sorted(line_ids)
