"""``handle_message``: the hot path of one message (DESIGN.md §3), with exactly one LLM call.

1. prepare (one short transaction): identify user and chat, drop duplicates, open or continue the
   working memory, record the user's turn, recall memories, build the prompt — committed, so the
   turn is never lost even if the LLM fails;
2. the LLM call, outside any transaction (the offline responder answers when there is no LLM or
   it fails);
3. apply (one short transaction): the reply turn, working memory, stated memories, todos, access
   tracking and the background jobs owed, all or nothing.

While the database is away, steps 1 and 3 are tried again for ``DATABASE_PATIENCE_SECONDS`` (the
front-end is told once, to let the user know). A message recorded but never answered, because a bot
stopped or lost its database in between, is answered when the bot starts again
(:meth:`ConversationService.unanswered_replies`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from datetime import UTC, datetime

from shared.conversation.apply import AppliedTurn, TurnResult, apply_turn_result
from shared.conversation.config import ConversationConfig
from shared.conversation.messages import IncomingMessage, Reply, UsedMemory
from shared.conversation.offline import OfflineResponder
from shared.conversation.patience import OnDelay, patiently
from shared.conversation.prepare import PreparedTurn, prepare_turn
from shared.conversation.prompt import BuiltPrompt
from shared.emotion import UNKNOWN, Emotion
from shared.errors import DatabaseUnavailable, EmbeddingError
from shared.llm.client import ChatModel, LLMUnavailable
from shared.llm.turn_schema import TurnOutput
from shared.recall.embeddings import Embedder
from shared.recall.retrieval import Recall
from shared.repositories.uow import UnitOfWork

log = logging.getLogger(__name__)

MAX_UNANSWERED = 100
"""How many unanswered messages one start answers (the oldest first)."""
UNSAVED_REPLY = "The database went away before this reply could be saved; it will not be remembered."


class ConversationService:
    """Answers messages. One instance per process, shared by every chat."""

    def __init__(self, uow_factory: Callable[[], UnitOfWork], config: ConversationConfig, *,
                 chat_model: ChatModel | None, embedder: Embedder | None = None, vectors=None,
                 offline: OfflineResponder | None = None, clock: Callable[[], datetime] | None = None,
                 dispatch: Callable[[tuple[int, ...]], None] | None = None) -> None:
        self.uow_factory = uow_factory
        self.config = config
        self.chat_model = chat_model
        self.embedder = embedder
        self.vectors = vectors
        self.offline = offline or OfflineResponder()
        self.clock = clock or (lambda: datetime.now(UTC))
        self.dispatch = dispatch
        """Hands the jobs a turn owes to the broker after commit (None: they wait for the outbox sweep)."""

    async def handle_message(self, message: IncomingMessage, *, resume: bool = False,
                             on_delay: OnDelay | None = None) -> Reply:
        """Reply to one message; duplicates (same platform message id) are answered once, except that
        with ``resume`` one recorded before and never answered is answered now. ``on_delay`` is awaited
        once if the message has to wait for the database; past the patience it raises
        :class:`DatabaseUnavailable` (nothing was recorded, or the turn is answered on the next start)."""
        started = time.perf_counter()
        on_delay = _once(on_delay)
        vector, warnings = await self._embed_query(message.text)
        prepared = await patiently(lambda retrying: self._prepare(message, vector, resume or retrying),
                                   self.config.database_patience, on_delay, what="a message")
        if prepared.duplicate is not None:
            return prepared.duplicate
        prepared_at = time.perf_counter()
        result = await self._complete(prepared)
        answered_at = time.perf_counter()
        try:
            applied = await patiently(lambda retrying: self._apply(prepared, result, retrying),
                                      self.config.database_patience, on_delay, what="a reply")
        except DatabaseUnavailable:  # the user still gets the answer; the turn stays owed a reply
            applied = AppliedTurn(memory_ids=(), todo_ids=(), warnings=(UNSAVED_REPLY,))
        timings = {"prepare": (prepared_at - started) * 1000, "llm": (answered_at - prepared_at) * 1000,
                   "apply": (time.perf_counter() - answered_at) * 1000}
        return replace(self._reply(prepared, result, applied, warnings), timings_ms=timings)

    async def unanswered_replies(self, platform: str, *,
                                 platform_user_id: str | None = None) -> AsyncIterator[tuple[IncomingMessage, Reply]]:
        """Answer, oldest first, the messages on ``platform`` (of one user, when given) that were recorded
        but never answered while their conversation is still open: a bot calls this when it starts."""
        found = await patiently(lambda _retrying: self._unanswered(platform, platform_user_id),
                                self.config.database_patience, what="unanswered messages")
        if found:
            log.info("answering %d message(s) on %s that were recorded but not answered", len(found), platform)
        for message in found:
            reply = await self.handle_message(message, resume=True)
            if not reply.duplicate:
                yield message, reply

    def _unanswered(self, platform: str, platform_user_id: str | None) -> list[IncomingMessage]:
        with self.uow_factory() as uow:
            rows = uow.turns.unanswered(platform, self.clock() - self.config.idle, MAX_UNANSWERED,
                                        platform_user_id=platform_user_id)
        return [IncomingMessage(platform=platform, chat_id=row.chat.platform_chat_id,
                                user_id=row.identity.platform_user_id, text=row.turn.text, sent_at=row.turn.created_at,
                                is_private=row.chat.kind == "private", display_name=row.identity.display_name,
                                message_id=row.turn.platform_message_id, locale=row.identity.locale,
                                chat_title=row.chat.title) for row in rows]

    def _prepare(self, message: IncomingMessage, vector: list[float] | None, resume: bool) -> PreparedTurn:
        with self.uow_factory() as uow:
            prepared = prepare_turn(uow, message, self.config, now=self.clock(), query_vector=vector,
                                    vectors=self.vectors, resume=resume)
            uow.commit()
        return prepared

    def _apply(self, prepared: PreparedTurn, result: TurnResult, retrying: bool) -> AppliedTurn:
        with self.uow_factory() as uow:
            if retrying and uow.turns.reply_in_session(prepared.user_id, prepared.session_id,
                                                       prepared.user_turn_id) is not None:
                return AppliedTurn(memory_ids=(), todo_ids=(), warnings=())  # the lost commit had landed
            applied = apply_turn_result(uow, prepared, result, self.config, now=self.clock(),
                                        embeddings_wanted=self.embedder is not None)
            uow.commit()
        if self.dispatch is not None and applied.job_ids:
            try:
                self.dispatch(applied.job_ids)
            except Exception:  # the jobs stay owed in the outbox; the sweep sends them later
                log.exception("dispatching background jobs failed")
        return applied

    async def _complete(self, prepared: PreparedTurn) -> TurnResult:
        """The one LLM call; offline when there is no LLM, it fails, or its answer holds nothing to show."""
        if self.chat_model is None:
            return self._offline(prepared, warning=None)
        try:
            completion = await self.chat_model.acomplete_turn(prepared.prompt.messages)
        except LLMUnavailable as exc:
            log.warning("LLM unavailable, answering offline: %s", exc)
            return self._offline(prepared, warning="The language model is unavailable; this is an offline reply.")
        if completion.output is not None:
            return TurnResult(output=completion.output, emotion=Emotion.from_json(completion.output.emotion),
                              offline=False)
        if not completion.reply:
            return self._offline(prepared, warning="The language model gave no usable answer; this is an "
                                                   "offline reply.")
        reply = TurnOutput(response=completion.reply, emotion=None, memory_update=(), todos=(), topic=None,
                           context_variables={})
        return TurnResult(output=reply, emotion=UNKNOWN, offline=False, trusted=False,
                          warnings=(f"The model's answer was {completion.problem}: its reply was kept, "
                                    "nothing was remembered from it (the worker still reads the message).",))

    def _offline(self, prepared: PreparedTurn, warning: str | None) -> TurnResult:
        output = self.offline.respond(prepared.offline_view)
        warnings = ("offline mode",) + ((warning,) if warning else ())
        return TurnResult(output=output, emotion=Emotion.from_json(output.emotion), offline=True, warnings=warnings)

    async def _embed_query(self, text: str) -> tuple[list[float] | None, tuple[str, ...]]:
        if self.embedder is None:
            return None, ()
        try:
            vectors = await asyncio.to_thread(self.embedder.embed, [text])
        except EmbeddingError as exc:  # retrieval falls back to lexical; the turn goes on
            log.warning("query embedding failed, lexical retrieval only: %s", exc, exc_info=True)
            return None, ("Vector search was unavailable for this message.",)
        return vectors[0], ()

    @staticmethod
    def _reply(prepared: PreparedTurn, result: TurnResult, applied: AppliedTurn, warnings: tuple[str, ...]) -> Reply:
        return Reply(
            text=result.output.response,
            emotion=result.emotion,
            strategy=prepared.strategy,
            warnings=warnings + prepared.warnings + result.warnings + applied.warnings,
            offline=result.offline,
            memories_used=_used(prepared.recall, prepared.prompt),
            stored_memory_ids=applied.memory_ids,
            todo_ids=applied.todo_ids,
        )


def _once(on_delay: OnDelay | None) -> OnDelay | None:
    """``on_delay`` that runs only the first time (a message waits for the database at most once in words)."""
    if on_delay is None:
        return None
    told = False

    async def tell() -> None:
        nonlocal told
        if not told:
            told = True
            await on_delay()

    return tell


def _used(recall: Recall, prompt: BuiltPrompt) -> tuple[UsedMemory, ...]:
    in_prompt = set(prompt.memory_ids)
    return tuple(UsedMemory(item.memory.id, item.memory.content, item.score.as_dict())
                 for item in recall.memories if item.memory.id in in_prompt)
