"""``handle_message``: the hot path of one message (DESIGN.md §3), with exactly one LLM call.

1. prepare (one short transaction): identify user and chat, drop duplicates, open or continue the
   working memory, record the user's turn, recall memories, build the prompt — committed, so the
   turn is never lost even if the LLM fails;
2. the LLM call, outside any transaction (the offline responder answers when there is no LLM or
   it fails);
2a. with a daily quota, the call's most is held on the user's allowance first (one short transaction,
   :func:`shared.usage.quota.reserve`), so concurrent messages cannot overspend it;
3. apply (one short transaction): the reply turn, working memory, stated memories, todos, access
   tracking, the background jobs owed and what the model requests of this turn cost (``llm_usage``),
   all or nothing; the quota hold is given back in it.

A user (or group chat) past today's token allowance is answered by the offline responder with a
notice (words each front-end chooses); the turn is kept, and its background jobs are owed from the next UTC day.

At most ``TURN_LLM_CONCURRENCY`` turns of a process are in the LLM call at once; the next ones queue,
a bounded number for a bounded time, and their users hear "busy, one moment" (``on_busy``) or, past
that, get the offline responder's answer (:mod:`shared.conversation.pressure`).

While the database is away, steps 1 and 3 are tried again for ``DATABASE_PATIENCE_SECONDS`` (the
front-end is told once, to let the user know). A message recorded but never answered, because a bot
stopped or lost its database in between, is answered when the bot starts again
(:meth:`ConversationService.unanswered_replies`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from shared import log_context
from shared.attachments.vision import IMAGE_TOKENS
from shared.conversation.apply import AppliedTurn, TurnResult, apply_turn_result
from shared.conversation.attached import attachment_notices, hear, image_for_model
from shared.conversation.config import ConversationConfig
from shared.conversation.messages import IncomingMessage, Reply, UsedMemory, UsedRound
from shared.conversation.notice_texts import Notice, NoticeCode
from shared.conversation.offline import OfflineResponder
from shared.conversation.offline_compose import known_count_notice
from shared.conversation.patience import OnDelay, patiently
from shared.conversation.prepare import PreparedTurn, prepare_turn
from shared.conversation.pressure import OnBusy, TurnGate
from shared.conversation.prompt import BuiltPrompt, build_turn_prompt
from shared.conversation.warning_texts import OFFLINE_WARNING, TurnWarning, WarningCode
from shared.emotion import UNKNOWN, Emotion
from shared.errors import DatabaseUnavailable, EmbeddingError
from shared.limits import SharedLimit
from shared.llm.client import ContextOverflow, OnText, TurnCompletion
from shared.llm.metering import CallUsage, metered
from shared.llm.retries import LLMUnavailable
from shared.llm.transcription import Transcriber
from shared.llm.turn_schema import TurnOutput
from shared.metrics import record
from shared.recall.embeddings import Embedder
from shared.recall.retrieval import Recall
from shared.repositories.uow import UnitOfWork
from shared.speech.non_answers import non_answer
from shared.usage.quota import QuotaHold, QuotaState, call_ceiling, reserve, settle

if TYPE_CHECKING:
    from shared.repositories.vectors import VectorIndex

log = logging.getLogger(__name__)

MAX_UNANSWERED = 100
"""How many unanswered messages one start answers (the oldest first)."""


class TurnModel(Protocol):
    """What the service asks of its model: a :class:`~shared.llm.client.ChatModel`, or a stand-in wrapping one
    (the replay benchmark's, which answers with a recorded reply)."""

    max_output_tokens: int

    async def aprompt_budget(self) -> int: ...

    async def acomplete_turn(self, messages: list[dict[str, Any]], image: str | None = None, *,
                             on_text: OnText | None = None) -> TurnCompletion: ...


class ConversationService:
    """Answers messages. One instance per process, shared by every chat."""

    def __init__(self, uow_factory: Callable[[], UnitOfWork], config: ConversationConfig, *,
                 chat_model: TurnModel | None, embedder: Embedder | None = None, vectors: VectorIndex | None = None,
                 offline: OfflineResponder | None = None, clock: Callable[[], datetime] | None = None,
                 dispatch: Callable[[tuple[int, ...]], object] | None = None,
                 message_limit: SharedLimit | None = None, transcriber: Transcriber | None = None,
                 fetch_limit: SharedLimit | None = None) -> None:
        self.uow_factory = uow_factory
        self.config = config
        self.chat_model = chat_model
        self.embedder = embedder
        self.vectors = vectors
        self.offline = offline or OfflineResponder()
        self.clock = clock or (lambda: datetime.now(UTC))
        self.dispatch = dispatch
        """Hands the jobs a turn owes to the broker after commit (None: they wait for the outbox sweep)."""
        self.gate = TurnGate(config.pressure)
        self.message_limit = message_limit
        """Messages one user may have answered by the model (``MESSAGE_RATE_PER_USER``), shared by replicas."""
        self.transcriber = transcriber
        """Hears voice notes (``TRANSCRIPTION_BASE_URL``); None: front-ends do not fetch them, the user is told."""
        self.fetch_limit = fetch_limit
        """Messages whose attachments one platform user may have fetched (the rate of ``MESSAGE_RATE_PER_USER``)."""

    async def may_fetch(self, platform: str, platform_user_id: str) -> bool:
        """Whether a front-end may download this sender's attachments now: counted per platform user, before the
        turn (and its user) exist, so one user's flood of files costs no downloads beyond their message rate."""
        if self.fetch_limit is None:
            return True
        wait = await asyncio.to_thread(self.fetch_limit.hit, platform, platform_user_id)
        if wait is not None:
            log.info("over MESSAGE_RATE_PER_USER for attachments: not fetched")
        return wait is None

    async def handle_message(self, message: IncomingMessage, *, resume: bool = False,
                             on_delay: OnDelay | None = None, on_busy: OnBusy | None = None,
                             on_text: OnText | None = None) -> Reply:
        """Reply to one message; duplicates (same platform message id) are answered once, except that
        with ``resume`` one recorded before and never answered is answered now. ``on_delay`` is awaited
        once if the message has to wait for the database; past the patience it raises
        :class:`DatabaseUnavailable` (nothing was recorded, or the turn is answered on the next start).
        ``on_busy`` is awaited once if the turn waits ``TURN_BUSY_NOTICE_SECONDS`` for a model slot.
        ``on_text`` hears the model's reply while it streams (unless ``STREAM_REPLIES=off``): the words that may be
        shown so far; the returned reply is what to show in the end, the offline answer when the model's turned
        out unreadable.
        Every log line meanwhile, and every job the turn owes, carries a new turn id, the platform and the
        user's hash (:mod:`shared.log_context`)."""
        with log_context.turn_context(message.platform, message.user_id):
            try:
                live = on_text if self.config.stream_replies else None
                reply = await self._answer(message, resume, on_delay, on_busy, live)
            except Exception:
                record.message_handled(message.platform, "failed")
                raise
            _log_answer(reply)
            _count(reply, message.platform, offline_mode=self.chat_model is None)
            return reply

    async def _answer(self, message: IncomingMessage, resume: bool, on_delay: OnDelay | None,
                      on_busy: OnBusy | None, on_text: OnText | None) -> Reply:
        started = time.perf_counter()
        on_delay = _once(on_delay)
        with metered("turn") as hearing:
            message = await hear(message, self.transcriber)
        with metered("turn_embedding") as searching:
            vector, warnings = await self._embed_query(message.text)
        budget = await self.chat_model.aprompt_budget() if self.chat_model is not None else None
        prepared = await patiently(lambda retrying: self._prepare(message, vector, resume or retrying, budget),
                                   self.config.database_patience, on_delay, what="a message")
        if isinstance(prepared, Reply):  # handled before: the reply given then
            return prepared
        prepared, hold = await self._reserve(prepared, on_delay)
        prepared_at = time.perf_counter()
        with metered("turn") as answering:
            result = await self._complete(prepared, on_busy, on_text)
        if result.prompt is not None:  # built again to fit a window smaller than thought
            prepared = replace(prepared, prompt=result.prompt)
        answered_at = time.perf_counter()
        spent = (*hearing.calls, *searching.calls, *answering.calls)
        try:
            applied = await patiently(lambda retrying: self._apply(prepared, result, spent, hold, retrying),
                                      self.config.database_patience, on_delay, what="a reply")
        except DatabaseUnavailable:  # the user still gets the answer; the turn stays owed a reply
            applied = AppliedTurn(memory_ids=(), todo_ids=(), warnings=(TurnWarning(WarningCode.REPLY_NOT_SAVED),))
        if applied.answered_elsewhere:  # a replica that just started answered it too, and first
            return Reply(text="", emotion=UNKNOWN, strategy=prepared.strategy, duplicate=True)
        timings = {"prepare": (prepared_at - started) * 1000, "llm": (answered_at - prepared_at) * 1000,
                   "apply": (time.perf_counter() - answered_at) * 1000, "recall": prepared.recall_seconds * 1000}
        reply = self._reply(prepared, result, applied, warnings)
        told = attachment_notices(prepared.attachments, image_seen=result.image_seen)
        return replace(reply, timings_ms=timings, notices=reply.notices + told)

    async def unanswered_replies(self, platform: str, *, platform_user_id: str | None = None,
                                 skip: Callable[[IncomingMessage], Awaitable[bool]] | None = None,
                                 recorded_by: datetime | None = None) -> AsyncIterator[tuple[IncomingMessage, Reply]]:
        """Answer, oldest first, the messages on ``platform`` (of one user, when given) that were recorded
        but never answered while their conversation is still open: a bot calls this when it starts, giving the
        moment it started as ``recorded_by``: a message recorded later is in the hands of a live process (this
        one, or another replica or shard), and answering it too would ask the model twice and count it twice
        against the user's message rate. A message ``skip`` says no to (its sender was blocked since) is left
        unanswered."""
        found = await patiently(lambda _retrying: self._unanswered(platform, platform_user_id, recorded_by),
                                self.config.database_patience, what="unanswered messages")
        if found:
            log.info("answering %d message(s) on %s that were recorded but not answered", len(found), platform)
        for message in found:
            if skip is not None and await skip(message):
                continue
            reply = await self.handle_message(message, resume=True)
            if not reply.duplicate:
                yield message, reply

    def _unanswered(self, platform: str, platform_user_id: str | None,
                    recorded_by: datetime | None = None) -> list[IncomingMessage]:
        with self.uow_factory() as uow:
            rows = uow.turns.unanswered(platform, self.clock() - self.config.idle, MAX_UNANSWERED,
                                        platform_user_id=platform_user_id)
        if recorded_by is not None:
            rows = [row for row in rows if row.turn.created_at <= recorded_by]
        return [IncomingMessage(platform=platform, chat_id=row.chat.platform_chat_id,
                                user_id=row.identity.platform_user_id, text=row.turn.text, sent_at=row.turn.created_at,
                                is_private=row.chat.kind == "private", display_name=row.identity.display_name,
                                message_id=row.turn.platform_message_id, locale=row.identity.locale,
                                chat_title=row.chat.title) for row in rows]

    def _prepare(self, message: IncomingMessage, vector: list[float] | None, resume: bool,
                 budget: int | None) -> PreparedTurn | Reply:
        with self.uow_factory() as uow:
            prepared = prepare_turn(uow, message, self.config, now=self.clock(), query_vector=vector,
                                    vectors=self.vectors, resume=resume, prompt_budget=budget)
            uow.commit()
        return prepared

    async def _reserve(self, prepared: PreparedTurn, on_delay: OnDelay | None) -> tuple[PreparedTurn, QuotaHold | None]:
        """Before the model is asked: check the allowance again and hold the call's most on it, so concurrent
        messages (on any replica) cannot all pass the check before any is charged."""
        if self.chat_model is None or prepared.quota.over or not self.config.quota.enabled:
            return prepared, None
        ceiling = call_ceiling(prepared.prompt.messages, self.chat_model.max_output_tokens)
        if image_for_model(prepared.attachments) is not None:
            ceiling += IMAGE_TOKENS

        def step(_retrying: bool) -> tuple[QuotaState, QuotaHold | None]:
            with self.uow_factory() as uow:
                state, hold = reserve(uow, self.config.quota, prepared.user_id, self.clock(), ceiling,
                                      chat_id=prepared.chat_id, group=not prepared.is_private)
                uow.commit()
            return state, hold

        state, hold = await patiently(step, self.config.database_patience, on_delay, what="a quota check")
        return (replace(prepared, quota=state) if state.over else prepared), hold

    def _apply(self, prepared: PreparedTurn, result: TurnResult, spent: tuple[CallUsage, ...],
               hold: QuotaHold | None, retrying: bool) -> AppliedTurn:
        with self.uow_factory() as uow:
            if not uow.turns.hold_for_reply(prepared.user_id, prepared.user_turn_id):
                log.info("the conversation was forgotten while its reply was written: the reply is sent, not kept")
                _charge(uow, prepared, spent, hold, self.clock(), messages=0)
                return AppliedTurn(memory_ids=(), todo_ids=(), warnings=())
            if uow.turns.reply_in_session(prepared.user_id, prepared.session_id,
                                          prepared.user_turn_id) is not None:  # our lost commit, or another's
                if not retrying:  # another's: this call was still paid for
                    _charge(uow, prepared, spent, hold, self.clock(), messages=0)
                return AppliedTurn(memory_ids=(), todo_ids=(), warnings=(), answered_elsewhere=not retrying)
            now = self.clock()
            applied = apply_turn_result(uow, prepared, result, self.config, now=now,
                                        embeddings_wanted=self.embedder is not None)
            settle(uow, hold)
            uow.usage.record(prepared.user_id, prepared.chat_id, spent, now, messages=1)  # last: its row lock
            uow.commit()
        record.followups_answered(applied.followups_answered)
        if self.dispatch is not None and applied.job_ids:
            try:
                self.dispatch(applied.job_ids)
            except Exception:  # the jobs stay owed in the outbox; the sweep sends them later
                log.exception("dispatching background jobs failed")
        return applied

    async def _complete(self, prepared: PreparedTurn, on_busy: OnBusy | None, on_text: OnText | None) -> TurnResult:
        """The one LLM call; offline when there is no LLM, the user is over quota, no model slot came free
        in time, the call fails, or its answer holds nothing to show."""
        model = self.chat_model
        if model is None:
            return self._offline(prepared, warning=None)
        if prepared.quota.over:  # the operator reads it here and in ``mnemo usage``; the user, a notice
            log.info("over today's token allowance (LLM_DAILY_TOKENS_PER_%s): answered offline",
                     "CHAT" if prepared.quota.group else "USER")
            return replace(self._offline(prepared, warning=None), notices=(quota_notice(prepared.quota),))
        if self.message_limit is not None:
            wait = await asyncio.to_thread(self.message_limit.hit, str(prepared.user_id))
            if wait is not None:  # one user's flood takes no model slot from anyone else
                log.info("over MESSAGE_RATE_PER_USER: answered offline")
                return replace(self._offline(prepared, warning=WarningCode.FLOODED, limited=True),
                               notices=(Notice.of(NoticeCode.FLOODED, seconds=int(wait)),))
        async with self.gate.slot(on_busy) as admitted:
            if admitted:
                return await self._ask_model(model, prepared, on_text)
        log.warning("every model slot stayed taken (TURN_LLM_CONCURRENCY, TURN_QUEUE_SECONDS): answered offline")
        return replace(self._offline(prepared, warning=WarningCode.BUSY, busy=True),
                       notices=(Notice(NoticeCode.BUSY),))

    async def _ask_model(self, model: TurnModel, prepared: PreparedTurn, on_text: OnText | None, *,
                         refit: bool = True) -> TurnResult:
        try:
            image = image_for_model(prepared.attachments)
            completion = await (model.acomplete_turn(prepared.prompt.messages, image=image, on_text=on_text) if image
                                else model.acomplete_turn(prepared.prompt.messages, on_text=on_text))
        except ContextOverflow as exc:
            refitted = await self._refit(model, prepared) if refit else None
            if refitted is None:
                log.warning("the prompt does not fit the model's context window, answering offline: %s", exc)
                return self._offline(prepared, warning=WarningCode.CONTEXT_OVERFLOW)
            log.info("%s: asking again with the conversation fitted to it", exc)
            return replace(await self._ask_model(model, refitted, on_text, refit=False), prompt=refitted.prompt)
        except LLMUnavailable as exc:
            log.warning("LLM unavailable, answering offline: %s", exc)
            return self._offline(prepared, warning=WarningCode.MODEL_UNAVAILABLE)
        result = self._read(prepared, completion)
        seen = completion.image_seen and not result.offline and bool(result.output.image_description)
        return replace(result, image_seen=seen)  # an image taken but not described was not seen (Ollama drops it)

    def _read(self, prepared: PreparedTurn, completion: TurnCompletion) -> TurnResult:
        """What the model's answer gives: the turn, or the offline reply when it holds nothing usable."""
        if not completion.reply:
            return self._offline(prepared, warning=WarningCode.MODEL_SILENT)
        if (reason := non_answer(completion.reply, prepared.text, prepared.prompt.instructions)) is not None:
            log.info("the model's reply was %s, not language for the message: answered offline", reason)
            return self._offline(prepared, warning=TurnWarning.of(WarningCode.MODEL_NON_ANSWER,
                                                                         reason=reason))
        if completion.output is not None:
            return TurnResult(output=completion.output, emotion=Emotion.from_json(completion.output.emotion),
                              offline=False)
        reply = TurnOutput(response=completion.reply, emotion=None, memory_update=(), todos=(), topic=None,
                           context_variables={})
        untrusted = TurnWarning.of(WarningCode.MODEL_ANSWER_UNTRUSTED, problem=completion.problem or "")
        return TurnResult(output=reply, emotion=UNKNOWN, offline=False, trusted=False, warnings=(untrusted,))

    async def _refit(self, model: TurnModel, prepared: PreparedTurn) -> PreparedTurn | None:
        """``prepared`` with its prompt built again for the window the model just named, when that is smaller than
        the one it was built for (None: it is not, and asking again cannot help)."""
        inputs = prepared.prompt_inputs
        budget = await model.aprompt_budget()
        if inputs is None or (inputs.prompt_budget_tokens is not None and budget >= inputs.prompt_budget_tokens):
            return None
        inputs = replace(inputs, prompt_budget_tokens=budget)
        return replace(prepared, prompt=build_turn_prompt(inputs), prompt_inputs=inputs)

    def _offline(self, prepared: PreparedTurn, warning: WarningCode | TurnWarning | None, *, busy: bool = False,
                 limited: bool = False) -> TurnResult:
        view = prepared.offline_view
        if self.chat_model is not None:  # a model is configured: nothing for the operator to connect
            view = replace(view, operator_console=False)
        output = self.offline.respond(view)
        if isinstance(warning, WarningCode):
            warning = TurnWarning(warning)
        warnings = (OFFLINE_WARNING,) + ((warning,) if warning else ())
        return TurnResult(output=output, emotion=Emotion.from_json(output.emotion), offline=True, warnings=warnings,
                          busy=busy, limited=limited)

    async def _embed_query(self, text: str) -> tuple[list[float] | None, tuple[TurnWarning, ...]]:
        if self.embedder is None:
            return None, ()
        try:
            vectors = await asyncio.to_thread(self.embedder.embed, [text])
        except EmbeddingError as exc:  # retrieval falls back to lexical; the turn goes on
            log.warning("query embedding failed, lexical retrieval only: %s", exc, exc_info=True)
            return None, (TurnWarning(WarningCode.VECTOR_SEARCH_DOWN),)
        return vectors[0], ()

    @staticmethod
    def _reply(prepared: PreparedTurn, result: TurnResult, applied: AppliedTurn,
               warnings: tuple[TurnWarning, ...]) -> Reply:
        shown = len(prepared.prompt.memory_ids)
        known = None if result.offline else known_count_notice(prepared.offline_view, shown)
        notices = result.notices + applied.notices + tuple(n for n in (_cut_notice(prepared, result), known) if n)
        return Reply(
            text=result.output.response,
            emotion=result.emotion,
            strategy=prepared.strategy,
            warnings=warnings + prepared.warnings + result.warnings + applied.warnings,
            offline=result.offline,
            busy=result.busy,
            limited=result.limited,
            memories_used=_used(prepared.recall, prepared.prompt),
            rounds_used=_rounds_used(prepared.recall, prepared.prompt),
            stored_memory_ids=applied.memory_ids,
            todo_ids=applied.todo_ids,
            language=prepared.language,
            notices=notices,
        )


def _cut_notice(prepared: PreparedTurn, result: TurnResult) -> Notice | None:
    """The user is told when the model read only the start of their message (it alone did not fit)."""
    read = prepared.prompt.message_read_chars if prepared.prompt is not None else None
    if read is None or result.offline:
        return None
    return Notice.of(NoticeCode.MESSAGE_CUT, count=read)


def quota_notice(state: QuotaState) -> Notice:
    """Said with the offline reply of a message over quota: nothing is lost, the model is back when the allowance
    resets (a UTC time)."""
    resets = f"{state.resets_at.astimezone(UTC):%H:%M}" if state.resets_at else "00:00"
    return Notice.of(NoticeCode.GROUP_QUOTA_SPENT if state.group else NoticeCode.QUOTA_SPENT, resets=resets)


def _charge(uow: UnitOfWork, prepared: PreparedTurn, spent: tuple[CallUsage, ...], hold: QuotaHold | None,
            now: datetime, *, messages: int) -> None:
    """What a turn whose reply is not kept spent, and its quota hold given back, on their own."""
    settle(uow, hold)
    uow.usage.record(prepared.user_id, prepared.chat_id, spent, now, messages=messages)
    uow.commit()


def _log_answer(reply: Reply) -> None:
    """One INFO line a message: how it was answered and where the time went, never what was said."""
    if reply.duplicate:
        log.info("a message seen before: answered with the reply given then")
        return
    timings = reply.timings_ms
    log.info("message answered (%s): prepare %.0f ms, llm %.0f ms, apply %.0f ms; %d memories used, %d stored",
             "offline" if reply.offline else "model", timings.get("prepare", 0.0), timings.get("llm", 0.0),
             timings.get("apply", 0.0), len(reply.memories_used), len(reply.stored_memory_ids))


def _count(reply: Reply, platform: str, *, offline_mode: bool) -> None:
    """The message in the metrics: how it was answered, and the hot path split into recall, LLM and the rest."""
    if reply.duplicate:
        record.message_handled(platform, "duplicate")
        return
    seconds = {stage: ms / 1000 for stage, ms in reply.timings_ms.items()}
    stages = {"recall": seconds.get("recall", 0.0), "llm": seconds.get("llm", 0.0),
              "other": seconds.get("prepare", 0.0) - seconds.get("recall", 0.0) + seconds.get("apply", 0.0)}
    outcome = "model"
    if reply.offline:
        outcome = ("busy" if reply.busy else "limited" if reply.limited else "offline" if offline_mode
                   else "fallback")
    record.message_handled(platform, outcome, sum(stages.values()), stages)


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


def _rounds_used(recall: Recall, prompt: BuiltPrompt) -> tuple[UsedRound, ...]:
    in_prompt = set(prompt.round_ids)
    return tuple(UsedRound(item.round.turn_id, item.round.said_at, item.round.line, item.round.reply,
                           item.score.as_dict()) for item in recall.rounds if item.round.turn_id in in_prompt)


def _used(recall: Recall, prompt: BuiltPrompt) -> tuple[UsedMemory, ...]:
    in_prompt = set(prompt.memory_ids)
    return tuple(UsedMemory(item.memory.id, item.memory.content, item.score.as_dict())
                 for item in recall.memories if item.memory.id in in_prompt)
