"""Working memory (open sessions) and the raw turns of conversation."""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from sqlalchemy import ColumnElement, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from shared.db.models import Chat, ConversationSession, ConversationTurn, Identity
from shared.db.results import rows_changed
from shared.text import clean_text


class UnansweredTurn(NamedTuple):
    """A user's message that ends an open conversation: recorded, never answered."""

    turn: ConversationTurn
    chat: Chat
    identity: Identity


class SessionRepository:
    """Opens, finds and closes working-memory sessions (one open session per user and chat)."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def open_for(self, user_id: int, chat_id: int, *, lock: bool = False) -> ConversationSession | None:
        query = select(ConversationSession).where(
            ConversationSession.user_id == user_id,
            ConversationSession.chat_id == chat_id,
            ConversationSession.closed_at.is_(None),
        )
        if lock:
            query = query.with_for_update()
        return self.session.scalars(query).one_or_none()

    def start(self, user_id: int, chat_id: int, now: datetime) -> ConversationSession:
        """The open session for user and chat, opened now (turn_count 0) if there is none."""
        self.session.execute(
            insert(ConversationSession)
            .values(user_id=user_id, chat_id=chat_id, created_at=now, updated_at=now, turn_count=0)
            .on_conflict_do_nothing(index_elements=["user_id", "chat_id"],
                                    index_where=ConversationSession.closed_at.is_(None))
        )
        opened = self.open_for(user_id, chat_id, lock=True)
        assert opened is not None
        return opened

    def get(self, user_id: int, session_id: int) -> ConversationSession | None:
        query = select(ConversationSession).where(
            ConversationSession.id == session_id, ConversationSession.user_id == user_id)
        return self.session.scalars(query).one_or_none()

    def open_of(self, user_id: int) -> list[ConversationSession]:
        """The user's open sessions (one per chat), most recently active first."""
        query = (select(ConversationSession)
                 .where(ConversationSession.user_id == user_id, ConversationSession.closed_at.is_(None))
                 .order_by(ConversationSession.updated_at.desc()))
        return list(self.session.scalars(query))

    def open_in_same_chats(self, user_id: int, other_user_id: int) -> list[int]:
        """Ids of the user's open sessions in chats where ``other_user_id`` has an open session too."""
        open_of_other = select(ConversationSession.chat_id).where(ConversationSession.user_id == other_user_id,
                                                                  ConversationSession.closed_at.is_(None))
        query = select(ConversationSession.id).where(
            ConversationSession.user_id == user_id, ConversationSession.closed_at.is_(None),
            ConversationSession.chat_id.in_(open_of_other))
        return list(self.session.scalars(query))

    def to_summarise(self, session_id: int) -> ConversationSession | None:
        """Any user's session, for the summary job that carries only its id: the row's ``user_id``
        says whose it is, and every read that follows is scoped by it."""
        return self.session.get(ConversationSession, session_id)

    def close_idle(self, cutoff: datetime, now: datetime, limit: int = 100) -> list[int]:
        """Close every user's open sessions with no activity since ``cutoff`` (the idle sweep), oldest
        first; sessions a turn holds locked are skipped. Returns the closed ids, ascending."""
        idle = (
            select(ConversationSession.id)
            .where(ConversationSession.closed_at.is_(None), ConversationSession.updated_at < cutoff)
            .order_by(ConversationSession.updated_at)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        closed = self.session.scalars(
            update(ConversationSession).where(ConversationSession.id.in_(idle.scalar_subquery()))
            .values(closed_at=now).returning(ConversationSession.id))
        return sorted(closed)

    def close(self, session_id: int, now: datetime) -> bool:
        """Close an open session; False when it was already closed."""
        result = self.session.execute(
            update(ConversationSession)
            .where(ConversationSession.id == session_id, ConversationSession.closed_at.is_(None))
            .values(closed_at=now)
        )
        return rows_changed(result) == 1


class TurnRepository:
    """Records raw messages and reads them back, always for one user."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def add(self, turn: ConversationTurn) -> ConversationTurn:
        turn.text = clean_text(turn.text)
        self.session.add(turn)
        self.session.flush()
        return turn

    def add_unless_seen(self, turn: ConversationTurn) -> int | None:
        """Insert a turn in one round trip; None when its platform message id was recorded already."""
        values = {column.key: getattr(turn, column.key) for column in ConversationTurn.__table__.columns
                  if getattr(turn, column.key, None) is not None}
        values["text"] = clean_text(turn.text)
        statement = (insert(ConversationTurn).values(**values)
                     .on_conflict_do_nothing(index_elements=["chat_id", "role", "platform_message_id"],
                                             index_where=ConversationTurn.platform_message_id.is_not(None))
                     .returning(ConversationTurn.id))
        return self.session.execute(statement).scalar_one_or_none()

    def get(self, user_id: int, turn_id: int) -> ConversationTurn | None:
        query = select(ConversationTurn).where(ConversationTurn.id == turn_id, ConversationTurn.user_id == user_id)
        return self.session.scalars(query).one_or_none()

    def last_said_before(self, user_id: int, turn_id: int) -> datetime | None:
        """When the user last spoke before their turn ``turn_id``, in any chat (None for a first message)."""
        return self.session.scalar(
            select(ConversationTurn.created_at)
            .where(ConversationTurn.user_id == user_id, ConversationTurn.role == "user", ConversationTurn.id < turn_id)
            .order_by(ConversationTurn.created_at.desc()).limit(1))

    def by_platform_message(self, chat_id: int, role: str, platform_message_id: str) -> ConversationTurn | None:
        query = select(ConversationTurn).where(
            ConversationTurn.chat_id == chat_id,
            ConversationTurn.role == role,
            ConversationTurn.platform_message_id == str(platform_message_id),
        )
        return self.session.scalars(query).one_or_none()

    def recent(self, user_id: int, session_id: int, limit: int, *,
               before_turn_id: int | None = None) -> list[ConversationTurn]:
        """The last ``limit`` turns of a session (those before ``before_turn_id`` when given), oldest first."""
        query = (
            select(ConversationTurn)
            .where(ConversationTurn.user_id == user_id, ConversationTurn.session_id == session_id)
            .order_by(ConversationTurn.id.desc())
            .limit(limit)
        )
        if before_turn_id is not None:
            query = query.where(ConversationTurn.id < before_turn_id)
        return list(reversed(self.session.scalars(query).all()))

    def recent_counted(self, user_id: int, session_id: int, limit: int, *,
                       before_turn_id: int | None = None) -> tuple[list[ConversationTurn], int]:
        """:meth:`recent`, and how many turns the session holds in all (before ``before_turn_id``), in one query."""
        in_all = func.count().over().label("in_all")
        query = (
            select(ConversationTurn, in_all)
            .where(ConversationTurn.user_id == user_id, ConversationTurn.session_id == session_id)
            .order_by(ConversationTurn.id.desc())
            .limit(max(limit, 1))
        )
        if before_turn_id is not None:
            query = query.where(ConversationTurn.id < before_turn_id)
        rows = self.session.execute(query).all()
        turns = [turn for turn, _ in reversed(rows)][-limit:] if limit else []
        return turns, rows[0].in_all if rows else 0

    def show_memories(self, user_id: int, turn_id: int, memory_ids: tuple[int, ...]) -> None:
        """Record which memories the prompt answering the user's turn showed, so later prompts show them
        again the same way."""
        self.session.execute(update(ConversationTurn)
                             .where(ConversationTurn.id == turn_id, ConversationTurn.user_id == user_id)
                             .values(memory_ids=list(memory_ids)))

    def unanswered(self, platform: str, since: datetime, limit: int, *,
                   platform_user_id: str | None = None) -> list[UnansweredTurn]:
        """Messages on ``platform`` that are the last turn of a conversation still open and active since
        ``since``: the bot stopped (or lost its database) after recording them and before answering.
        Oldest first, with the chat and the speaker's identity on that platform."""
        last_turn = (select(func.max(ConversationTurn.id)).where(ConversationTurn.session_id == ConversationSession.id)
                     .correlate(ConversationSession).scalar_subquery())
        speaker = (select(func.min(Identity.id))  # a user joined by /link may hold two accounts on one platform
                   .where(Identity.user_id == ConversationTurn.user_id, Identity.platform == Chat.platform)
                   .correlate(ConversationTurn, Chat).scalar_subquery())
        query = (
            select(ConversationTurn, Chat, Identity)
            .join(ConversationSession, ConversationSession.id == ConversationTurn.session_id)
            .join(Chat, Chat.id == ConversationTurn.chat_id)
            .join(Identity, Identity.id == speaker)
            .where(ConversationSession.closed_at.is_(None), ConversationSession.updated_at >= since,
                   Chat.platform == platform, ConversationTurn.id == last_turn, ConversationTurn.role == "user",
                   ConversationTurn.platform_message_id.is_not(None))
            .order_by(ConversationTurn.id)
            .limit(limit)
        )
        if platform_user_id is not None:
            query = query.where(Identity.platform_user_id == platform_user_id)
        return [UnansweredTurn(*row) for row in self.session.execute(query).all()]

    def for_user(self, user_id: int, limit: int | None = None, offset: int = 0) -> list[ConversationTurn]:
        query = (
            select(ConversationTurn)
            .where(ConversationTurn.user_id == user_id)
            .order_by(ConversationTurn.id)
            .offset(offset)
            .limit(limit)
        )
        return list(self.session.scalars(query))

    def hold_for_reply(self, user_id: int, turn_id: int) -> bool:
        """Lock the user's message ``turn_id`` until the transaction ends: of two processes answering it at once
        (a replica that just started answers what looks unanswered), the second sees the first's reply.
        False when the message is gone (the user had the bot forget the conversation meanwhile)."""
        held = self.session.execute(select(ConversationTurn.id).where(ConversationTurn.user_id == user_id,
                                                                      ConversationTurn.id == turn_id).with_for_update())
        return held.first() is not None

    def reply_in_session(self, user_id: int, session_id: int | None, after_turn_id: int) -> ConversationTurn | None:
        """The bot's answer to the user's message ``after_turn_id`` in its session (not the answer to another
        message the user sent a moment before, stored later)."""
        query = (
            select(ConversationTurn)
            .where(ConversationTurn.user_id == user_id, ConversationTurn.session_id == session_id,
                   ConversationTurn.role == "assistant", ConversationTurn.id > after_turn_id, _answers(after_turn_id))
            .order_by(ConversationTurn.id)
            .limit(1)
        )
        return self.session.scalars(query).one_or_none()

    def unsummarised(self, user_id: int, session_id: int, limit: int | None = None) -> list[ConversationTurn]:
        """The session's turns not yet in an episode, oldest first (the first ``limit`` of them)."""
        query = (
            select(ConversationTurn)
            .where(ConversationTurn.user_id == user_id, ConversationTurn.session_id == session_id,
                   ConversationTurn.episode_id.is_(None))
            .order_by(ConversationTurn.id)
            .limit(limit)
        )
        return list(self.session.scalars(query))

    def lock_unsummarised(self, user_id: int, turn_ids: list[int]) -> list[int]:
        """Lock those of the turns that are in no episode yet, in id order (so two lockers cannot deadlock);
        returns their ids in that order."""
        query = (
            select(ConversationTurn.id)
            .where(ConversationTurn.user_id == user_id, ConversationTurn.id.in_(turn_ids),
                   ConversationTurn.episode_id.is_(None))
            .order_by(ConversationTurn.id)
            .with_for_update()
        )
        return list(self.session.scalars(query))

    def link_to_episode(self, user_id: int, turn_ids: list[int], episode_id: int) -> None:
        self.session.execute(
            update(ConversationTurn)
            .where(ConversationTurn.user_id == user_id, ConversationTurn.id.in_(turn_ids))
            .values(episode_id=episode_id)
        )

    def waiting_with(self, turn_id: int, limit: int) -> list[int]:
        """This user turn and the older not-yet-extracted user turns of its session, oldest first:
        one batch for the knowledge monitor."""
        turn = self.session.get(ConversationTurn, turn_id)
        if turn is None:
            return []
        query = (
            select(ConversationTurn.id)
            .where(ConversationTurn.user_id == turn.user_id, ConversationTurn.role == "user",
                   ConversationTurn.session_id.is_not_distinct_from(turn.session_id),
                   ConversationTurn.extracted.is_(False), ConversationTurn.id <= turn_id)
            .order_by(ConversationTurn.id.desc())
            .limit(limit)
        )
        return sorted(self.session.scalars(query)) or [turn_id]

    def waiting_in_session(self, user_id: int, session_id: int) -> list[tuple[int, datetime, int]]:
        """The session's user turns the knowledge monitor has not read yet: (id, said at, tokens), oldest first."""
        query = (
            select(ConversationTurn.id, ConversationTurn.created_at, ConversationTurn.token_estimate)
            .where(ConversationTurn.user_id == user_id, ConversationTurn.session_id == session_id,
                   ConversationTurn.role == "user", ConversationTurn.extracted.is_(False))
            .order_by(ConversationTurn.id)
        )
        return [(row.id, row.created_at, row.token_estimate or 0) for row in self.session.execute(query)]

    def waiting_for_extraction(self, turn_ids: list[int]) -> list[ConversationTurn]:
        """Those of the turns that are user turns not yet extracted, whoever's, ordered by user, session
        and id: the knowledge monitor's job carries only turn ids, and each row says whose it is."""
        query = (
            select(ConversationTurn)
            .where(ConversationTurn.id.in_(turn_ids), ConversationTurn.role == "user",
                   ConversationTurn.extracted.is_(False))
            .order_by(ConversationTurn.user_id, ConversationTurn.session_id, ConversationTurn.id)
        )
        return list(self.session.scalars(query))

    def reply_text_in_chat(self, user_id: int, chat_id: int, after_turn_id: int) -> str | None:
        """The text of the bot's reply to the user's message ``after_turn_id`` in the chat."""
        query = (
            select(ConversationTurn.text)
            .where(ConversationTurn.user_id == user_id, ConversationTurn.chat_id == chat_id,
                   ConversationTurn.role == "assistant", ConversationTurn.id > after_turn_id, _answers(after_turn_id))
            .order_by(ConversationTurn.id)
            .limit(1)
        )
        return self.session.scalars(query).first()

    def lock_unextracted(self, user_id: int, turn_ids: list[int]) -> list[int]:
        """Lock those of the turns that are not extracted yet; returns their ids."""
        query = (
            select(ConversationTurn.id)
            .where(ConversationTurn.user_id == user_id, ConversationTurn.id.in_(turn_ids),
                   ConversationTurn.extracted.is_(False))
            .with_for_update()
        )
        return list(self.session.scalars(query))

    def mark_extracted(self, user_id: int, turn_ids: list[int]) -> None:
        self.session.execute(
            update(ConversationTurn)
            .where(ConversationTurn.user_id == user_id, ConversationTurn.id.in_(turn_ids))
            .values(extracted=True)
        )


def _answers(user_turn_id: int) -> ColumnElement[bool]:
    """A bot turn answering the user's turn ``user_turn_id``: it says so, or (stored before the bot turns said
    which message they answer) it is simply the first one after it."""
    return or_(ConversationTurn.reply_to_turn_id == user_turn_id, ConversationTurn.reply_to_turn_id.is_(None))
