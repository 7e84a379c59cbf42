"""What the offline responder may see of a turn (filled in by :mod:`shared.conversation.prepare`), and the
language it answers in. Pure, no database."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from shared.attachments.texts import own_words
from shared.emotion import ResponseStrategy
from shared.reminders.in_note import PendingReminder
from shared.text import Language, language_of

OFFLINE_HINT_KEY = "offline_model_hint"
"""The session context variable that records that the hint on connecting a model was shown."""


@dataclass(frozen=True)
class MemoryNote:
    """One of the speaker's memories as the offline responder sees it."""

    content: str
    type: str
    predicate: str | None
    score: float = 0.0


@dataclass(frozen=True)
class RoundNote:
    """One recalled round as the offline responder sees it: when it was said (aware), the user's line and the
    bot's reply."""

    said_at: datetime
    line: str
    reply: str | None


@dataclass(frozen=True)
class OfflineView:
    """What the offline responder may see of the turn."""

    text: str
    local_now: datetime
    timezone: str
    strategy: ResponseStrategy
    memories: tuple[str, ...]
    user_name: str | None
    recalled: tuple[MemoryNote, ...] = ()
    """The memories recalled for this turn, best first."""
    known: tuple[MemoryNote, ...] = ()
    """The speaker's current memories under the keys this message states or asks about
    (:func:`shared.conversation.offline.lookup_keys`)."""
    bot_lines: tuple[str, ...] = ()
    """The bot's recent replies in this session, oldest first."""
    hint_shown: bool = False
    operator_console: bool = False
    """The person is the operator at ``mnemo chat`` and no model is configured: only then is the hint on
    connecting one (a setting, the README) given. Users of a bot never read operator instructions."""
    paused: bool = False
    """The user paused remembering: statements are acknowledged, not claimed as remembered."""
    bot_name: str = "Mnemo"
    turn_number: int = 0
    rounds: tuple[RoundNote, ...] = ()
    """The rounds (what was said) the prompt shows, best first."""
    memory_count: int = 0
    """How many memories the speaker has in all (filled in when the message asks what is known of them)."""
    newest: tuple[MemoryNote, ...] = ()
    """The speaker's newest memories (filled in when the message asks what is known of them)."""
    reminders: tuple[PendingReminder, ...] = ()
    """The speaker's pending reminders the note shows (all of the first few when the message asks about them)."""
    sent_at: datetime | None = None
    """When the message was sent, on the user's clock: "in 10 minutes" counts from it, however long the answer
    takes (``local_now`` is when it was taken up)."""
    locale: str | None = None
    """The message's locale (Telegram's language of the user, the console's last language): the language of a
    message with no words of either language."""

    @property
    def language(self) -> Language:
        """The language of the turn (:func:`shared.text.language_of`), the replies' and every notice's: of the
        user's own words (a photo's caption, not its ``[photo]`` mark), else of their locale."""
        return language_of(own_words(self.text), self.locale)

