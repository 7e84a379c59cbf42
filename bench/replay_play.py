"""The write path of ``mnemo bench replay``: a conversation's turns played as live messages.

Each user turn is a message to the product's ``ConversationService`` (step 1 records it and recalls, step 3
stores the reply, what the user stated and the jobs owed), sent at the turn's time by the replay clock.
The one thing changed is the reply's text: the recorded assistant turns that follow the user's line in the
same sitting, joined, stand in for a generated reply. The seams are the service's own: the offline
responder it is given (:class:`ScriptedOffline`: the rules decide what is stored, the recorded text is the
reply) or the configured model (:class:`ScriptedModel`: the model's memory update, the recorded text). A
user turn with no recorded reply keeps the product's own. An assistant turn no user turn of its sitting
precedes (a LoCoMo session the bot opens) is stored as a bot turn of its own in the open session.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from bench.memory_judges import Said
from bench.replay_format import ReplayConversation, ReplayTurn
from shared.conversation.offline import OfflineResponder

if TYPE_CHECKING:
    from shared.conversation.service import ConversationService
    from shared.llm.client import ChatModel, OnText, TurnCompletion
    from shared.repositories.uow import UnitOfWork

PLATFORM = "console"


class ReplayClock:
    """The time every part of the replay reads (service, commands, worker tasks)."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Script:
    """The recorded reply for the message being played (None: the product's own reply is kept)."""

    reply: str | None = None


class ScriptedOffline(OfflineResponder):
    """The offline responder's rules for what to remember, with the recorded reply as the answer."""

    def __init__(self, script: Script) -> None:
        self.script = script

    def respond(self, view):
        output = super().respond(view)
        return output if self.script.reply is None else replace(output, response=self.script.reply)


class ScriptedModel:
    """The configured model's answer (its memory update and todos), with the recorded reply as its response."""

    def __init__(self, model: ChatModel, script: Script) -> None:
        self.model, self.script = model, script

    async def acomplete_turn(self, messages: list[dict[str, Any]], image: str | None = None, *,
                             on_text: OnText | None = None) -> TurnCompletion:
        """The model's turn; its words are not streamed (``on_text`` is not told): the recorded reply replaces them."""
        completion = await self.model.acomplete_turn(messages, image=image)
        text = self.script.reply
        if text is None:
            return completion
        output = replace(completion.output, response=text) if completion.output is not None else None
        return replace(completion, output=output, reply=text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)


@dataclass(frozen=True)
class Step:
    """One thing that happens in the conversation: a user's line with its recorded reply, or a bot line alone."""

    turn: ReplayTurn
    replies: tuple[ReplayTurn, ...] = ()

    @property
    def at(self) -> datetime:
        return self.turn.at


def steps(turns: tuple[ReplayTurn, ...], idle: timedelta) -> list[Step]:
    """The turns as steps: assistant turns that follow a user turn within ``idle`` of the turn before join its
    reply; any other assistant turn is a bot line of its own."""
    found: list[Step] = []
    for turn in turns:
        last = found[-1] if found else None
        previous = (last.replies or (last.turn,))[-1] if last else None
        if (turn.role == "assistant" and last is not None and previous is not None and last.turn.role == "user"
                and turn.at - previous.at <= idle):
            found[-1] = Step(last.turn, (*last.replies, turn))
        else:
            found.append(Step(turn))
    return found


@dataclass
class Player:
    """Plays one conversation's steps for one fresh user, and keeps which database turns are which replay turns."""

    service: ConversationService
    """Wired with the :class:`Script`'s responder or model and the replay clock."""
    new_uow: Callable[[], UnitOfWork]
    script: Script
    clock: ReplayClock
    conversation: ReplayConversation
    platform_user_id: str
    user_id: int = 0
    chat_id: int = 0
    turn_ids: dict[int, tuple[str, ...]] = field(default_factory=dict)
    """Database turn id → the replay turn ids it holds (a bot reply may join several)."""
    replies: dict[int, list[int]] = field(default_factory=dict)
    """A user turn's database id → its bot reply turns' ids."""
    said: dict[int, Said] = field(default_factory=dict)
    """A user turn's database id → what was said (for the junk judges)."""

    def open_account(self) -> None:
        """The fresh user with their name, language and time zone, and their private chat."""
        user = self.conversation.user
        with self.new_uow() as uow:
            identity = uow.users.identify(PLATFORM, self.platform_user_id, display_name=user.name,
                                          locale=user.language, timezone=user.timezone)
            self.user_id = identity.user_id
            self.chat_id = uow.chats.get_or_create(PLATFORM, self.platform_user_id, "private").id
            uow.commit()

    async def play(self, step: Step, number: int) -> None:
        self.clock.now = step.at
        if step.turn.role == "assistant":
            self._bot_line(step.turn)
            return
        self.script.reply = "\n".join(turn.text for turn in step.replies) or None
        reply = await self.service.handle_message(self.message(step.turn.text, str(number)))
        self.script.reply = None
        with self.new_uow() as uow:
            turn = uow.turns.by_platform_message(self.chat_id, "user", str(number))
            if turn is None:
                raise RuntimeError(f"the played message {number} was not stored")
            answer = uow.turns.reply_in_session(self.user_id, turn.session_id, turn.id)
        self.turn_ids[turn.id] = (step.turn.id,)
        self.replies[turn.id] = [answer.id] if answer is not None else []
        if answer is not None and step.replies:
            self.turn_ids[answer.id] = tuple(t.id for t in step.replies)
        self.said[turn.id] = Said(self.platform_user_id, turn.text, reply.text,
                                  tuple(used.content for used in reply.memories_used))

    def message(self, text: str, message_id: str | None):
        from shared.conversation.messages import IncomingMessage

        return IncomingMessage(platform=PLATFORM, chat_id=self.platform_user_id, user_id=self.platform_user_id,
                               text=text, sent_at=self.clock.now, display_name=self.conversation.user.name,
                               message_id=message_id, locale=self.conversation.user.language)

    def _bot_line(self, turn: ReplayTurn) -> None:
        """A line of the bot's that answers no message: stored in the open (or a new) session, as apply stores one."""
        from shared.db.models import ConversationTurn
        from shared.text import estimate_tokens

        with self.new_uow() as uow:
            session = uow.sessions.start(self.user_id, self.chat_id, self.clock.now)
            row = uow.turns.add(ConversationTurn(user_id=self.user_id, chat_id=self.chat_id, session_id=session.id,
                                                 role="assistant", text=turn.text, created_at=self.clock.now,
                                                 token_estimate=estimate_tokens(turn.text)))
            session.updated_at = self.clock.now
            self.turn_ids[row.id] = (turn.id,)
            uow.commit()
