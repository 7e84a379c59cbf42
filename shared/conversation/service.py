"""``handle_message``: the hot path of one message (DESIGN.md §3), with exactly one LLM call.

1. prepare (one short transaction): identify user and chat, drop duplicates, open or continue the
   working memory, record the user's turn, recall memories, build the prompt — committed, so the
   turn is never lost even if the LLM fails;
2. the LLM call, outside any transaction (the offline responder answers when there is no LLM or
   it fails);
3. apply (one short transaction): the reply turn, working memory, stated memories, todos, access
   tracking and the background jobs owed, all or nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

from shared.conversation.apply import AppliedTurn, TurnResult, apply_turn_result
from shared.conversation.config import ConversationConfig
from shared.conversation.messages import IncomingMessage, Reply, UsedMemory
from shared.conversation.offline import OfflineResponder
from shared.conversation.prepare import PreparedTurn, prepare_turn
from shared.conversation.prompt import BuiltPrompt
from shared.emotion import UNKNOWN, Emotion
from shared.errors import EmbeddingError
from shared.llm.client import ChatModel, LLMUnavailable
from shared.llm.turn_schema import TurnOutput
from shared.recall.embeddings import Embedder
from shared.recall.retrieval import Recall
from shared.repositories.uow import UnitOfWork

log = logging.getLogger(__name__)


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

    async def handle_message(self, message: IncomingMessage) -> Reply:
        """Reply to one message; duplicates (same platform message id) are answered once."""
        started = time.perf_counter()
        vector, warnings = await self._embed_query(message.text)
        prepared = await asyncio.to_thread(self._prepare, message, vector)
        if prepared.duplicate is not None:
            return prepared.duplicate
        prepared_at = time.perf_counter()
        result = await self._complete(prepared)
        answered_at = time.perf_counter()
        applied = await asyncio.to_thread(self._apply, prepared, result)
        timings = {"prepare": (prepared_at - started) * 1000, "llm": (answered_at - prepared_at) * 1000,
                   "apply": (time.perf_counter() - answered_at) * 1000}
        return replace(self._reply(prepared, result, applied, warnings), timings_ms=timings)

    def _prepare(self, message: IncomingMessage, vector: list[float] | None) -> PreparedTurn:
        with self.uow_factory() as uow:
            prepared = prepare_turn(uow, message, self.config, now=self.clock(), query_vector=vector,
                                    vectors=self.vectors)
            uow.commit()
        return prepared

    def _apply(self, prepared: PreparedTurn, result: TurnResult) -> AppliedTurn:
        with self.uow_factory() as uow:
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


def _used(recall: Recall, prompt: BuiltPrompt) -> tuple[UsedMemory, ...]:
    in_prompt = set(prompt.memory_ids)
    return tuple(UsedMemory(item.memory.id, item.memory.content, item.score.as_dict())
                 for item in recall.memories if item.memory.id in in_prompt)
