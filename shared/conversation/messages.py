"""The platform-neutral shapes of a message in and a reply out."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from shared.attachments.kinds import Attachment
from shared.conversation.notice_texts import Notice
from shared.conversation.warning_texts import TurnWarning
from shared.emotion import Emotion, ResponseStrategy
from shared.text import Language

OPERATOR_CONSOLE = "console"
"""The one front-end whose user is the operator (``mnemo chat``): only there may a reply name a setting."""


@dataclass(frozen=True)
class IncomingMessage:
    """One message a user sent, as every front-end describes it."""

    platform: str
    chat_id: str
    user_id: str
    text: str
    sent_at: datetime
    is_private: bool = True
    display_name: str | None = None
    message_id: str | None = None
    locale: str | None = None
    chat_title: str | None = None
    attachments: tuple[Attachment, ...] = ()
    """What came with the message (``text`` is then its round line: :func:`shared.attachments.texts.turn_line`)."""


@dataclass(frozen=True)
class UsedMemory:
    """A memory that went into the prompt, with why it was chosen."""

    id: int
    content: str
    score: dict[str, float | None]


@dataclass(frozen=True)
class UsedRound:
    """A round (what was said) that went into the prompt, with when it was said and why it was chosen."""

    turn_id: int
    said_at: datetime
    line: str
    reply: str | None
    score: dict[str, float | None]


@dataclass(frozen=True)
class Reply:
    """What to send back (``text`` empty for a duplicate still in flight) and what was learnt."""

    text: str
    emotion: Emotion
    strategy: ResponseStrategy
    warnings: tuple[TurnWarning, ...] = ()
    duplicate: bool = False
    offline: bool = False
    busy: bool = False
    """Offline because every model slot stayed taken (the bot is swamped), not because the model failed."""
    limited: bool = False
    """Offline because the user sent more than ``MESSAGE_RATE_PER_USER`` allows."""
    memories_used: tuple[UsedMemory, ...] = field(default=())
    rounds_used: tuple[UsedRound, ...] = field(default=())
    stored_memory_ids: tuple[int, ...] = ()
    todo_ids: tuple[int, ...] = ()
    timings_ms: dict[str, float] = field(default_factory=dict)
    """Where the time went: prepare, llm, apply (the hot path's own work is prepare + apply), and recall (part of
    prepare)."""
    language: Language = Language.EN
    """The language of the message (:func:`shared.text.language_of`): of the notices and the warnings as each
    front-end words them."""
    notices: tuple[Notice, ...] = ()
    """To show with the reply (:func:`shared.conversation.notice_texts.notices_text`, in ``language``): today's
    allowance is spent (the reply is offline), the reminder the rules set, how many memories there are when asked
    what is remembered."""
