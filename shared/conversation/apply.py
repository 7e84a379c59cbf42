"""Step 3 of a turn: record the reply, update working memory, store what the user stated, key the round (the
line, the reply and what was stored from it), todos, jobs."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from shared.conversation.attached import round_line
from shared.conversation.extraction_timing import ExtractionTiming, WaitingTurn
from shared.conversation.notice_texts import Notice
from shared.conversation.turn_reminders import store_turn_reminders
from shared.conversation.turn_threads import store_turn_threads
from shared.conversation.warning_texts import TurnWarning, WarningCode
from shared.db.models import ConversationTurn
from shared.emotion import Emotion, strategy_for
from shared.errors import NotFound
from shared.llm.turn_schema import MAX_CONTEXT_VARIABLES, TurnOutput
from shared.memory.writes import store_stated_memories
from shared.recall.round_keys import key_round
from shared.repositories.uow import UnitOfWork
from shared.text import estimate_tokens

if TYPE_CHECKING:
    from shared.conversation.config import ConversationConfig
    from shared.conversation.prepare import PreparedTurn
    from shared.conversation.prompt import BuiltPrompt

log = logging.getLogger(__name__)

MESSAGES_PER_SUMMARY = 30
"""A session is summarised into an episode part each time it passes this many messages (both sides)."""


@dataclass(frozen=True)
class TurnResult:
    """What the LLM (or the offline responder) made of the turn."""

    output: TurnOutput
    emotion: Emotion
    offline: bool
    warnings: tuple[TurnWarning, ...] = ()
    trusted: bool = True
    """False when the answer was not valid JSON: its text is the reply, nothing is stored from it."""
    notices: tuple[Notice, ...] = ()
    """What the user must be told (today's allowance is spent, the bot is swamped), worded by each front-end."""
    busy: bool = False
    """Answered offline because no model slot came free in time (back-pressure)."""
    limited: bool = False
    """Answered offline because the user is over ``MESSAGE_RATE_PER_USER``."""
    prompt: BuiltPrompt | None = None
    """The prompt the model answered, when it was built again to fit a context window smaller than thought."""
    image_seen: bool = False
    """The message's photo went to the model and the model said what it shows."""


@dataclass(frozen=True)
class AppliedTurn:
    memory_ids: tuple[int, ...]
    todo_ids: tuple[int, ...]
    warnings: tuple[TurnWarning, ...]
    job_ids: tuple[int, ...] = ()
    answered_elsewhere: bool = False
    """Another process recorded a reply to this message first: this one is not sent."""
    notices: tuple[Notice, ...] = ()
    """What the user is told of the turn's reminders and time zone (:mod:`shared.conversation.turn_reminders`)
    and, once, that follow-ups can be turned on (:mod:`shared.conversation.turn_threads`)."""
    followups_answered: int = 0
    """Follow-ups this message answered (for the metrics, counted after commit)."""


def apply_turn_result(uow: UnitOfWork, prepared: PreparedTurn, result: TurnResult, config: ConversationConfig, *,
                      now: datetime, embeddings_wanted: bool) -> AppliedTurn:
    """Everything that follows from the reply, in the caller's transaction."""
    output = result.output
    line = _round_line(uow, prepared, result)
    uow.turns.add(ConversationTurn(user_id=prepared.user_id, chat_id=prepared.chat_id,
                                   session_id=prepared.session_id, role="assistant", text=output.response,
                                   reply_to_turn_id=prepared.user_turn_id,
                                   token_estimate=estimate_tokens(output.response), created_at=now))
    turn_count = _update_working_memory(uow, prepared, result, config, now)
    uow.memories.touch(prepared.user_id, prepared.prompt.memory_ids, now)
    memory_ids: tuple[int, ...] = ()
    facts: tuple[str, ...] = ()
    warnings: tuple[TurnWarning, ...] = ()
    if result.trusted and output.memory_update:
        if prepared.paused:
            warnings += (TurnWarning(WarningCode.REMEMBERING_PAUSED),)
        else:
            memory_ids, facts = _store_memories(uow, prepared, output, now, line)
    key_round(uow, prepared.user_id, prepared.user_turn_id, line, output.response, facts,
              kept=not prepared.paused, shown_memory_ids=prepared.prompt.memory_ids)
    trusted = result.output if result.trusted else None
    reminders = store_turn_reminders(uow, prepared, trusted.todos if trusted else (),
                                     trusted.timezone if trusted else None,
                                     now=now, default_timezone=config.default_timezone,
                                     heads_up=config.deadline_heads_up)
    threads = store_turn_threads(uow, prepared, trusted.threads if trusted else (), memory_ids, now=now)
    job_ids = _owe_background_work(uow, prepared, memory_ids, turn_count, embeddings_wanted, config.extraction, now)
    if prepared.quota.over:  # owed from the next day, when the user's allowance is back; not sent now
        job_ids = ()
    return AppliedTurn(memory_ids=memory_ids, todo_ids=reminders.todo_ids, warnings=warnings + reminders.warnings,
                       job_ids=job_ids, notices=reminders.notices + threads.notices,
                       followups_answered=threads.answered)


def _update_working_memory(uow: UnitOfWork, prepared: PreparedTurn, result: TurnResult,
                           config: ConversationConfig, now: datetime) -> int:
    session = uow.sessions.get(prepared.user_id, prepared.session_id)
    if session is None:  # gone only when the user's data was deleted while the model answered
        raise NotFound(f"conversation session {prepared.session_id}")
    if result.output.topic:
        session.current_topic = result.output.topic
    if result.output.context_variables:
        merged = {**(session.context_variables or {}), **result.output.context_variables}
        session.context_variables = dict(list(merged.items())[-MAX_CONTEXT_VARIABLES:])
    session.last_emotion = result.emotion.to_json()
    session.next_strategy = strategy_for(result.emotion, enabled=config.emotion_enabled).to_json()
    session.updated_at = now
    return session.turn_count


def _round_line(uow: UnitOfWork, prepared: PreparedTurn, result: TurnResult) -> str:
    """The user's line as the round keeps it: a photo the model saw, with what it shows (the turn is updated)."""
    line = round_line(prepared.text, result.output.image_description, image_seen=result.image_seen)
    if line != prepared.text:
        turn = uow.turns.get(prepared.user_id, prepared.user_turn_id)
        if turn is not None:
            turn.text, turn.token_estimate = line, estimate_tokens(line)
    return line


def _store_memories(uow: UnitOfWork, prepared: PreparedTurn, output: TurnOutput,
                    now: datetime, line: str) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """What the user stated in this message (the memories' ids and words); the write path refuses questions
    and the bot's own words."""
    bot_lines = prepared.offline_view.bot_lines if prepared.offline_view is not None else ()
    writes = store_stated_memories(uow, prepared.user_id, output.memory_update, now=now,
                                   source_turn_id=prepared.user_turn_id, session_id=prepared.session_id,
                                   source_text=line, bot_lines=bot_lines)
    return tuple(write.memory.id for write in writes), tuple(write.memory.content for write in writes)


def _owe_background_work(uow: UnitOfWork, prepared: PreparedTurn, memory_ids: tuple[int, ...], turn_count: int,
                         embeddings_wanted: bool, extraction: ExtractionTiming, now: datetime) -> tuple[int, ...]:
    """Jobs for the workers, in this transaction (the outbox relay sends them after commit). The knowledge monitor
    is owed a call only when the sitting's waiting turns are due (:mod:`shared.conversation.extraction_timing`);
    otherwise they wait for more turns, or for the sitting's close."""
    user_id = prepared.user_id
    if prepared.paused:  # nothing is learnt from this turn, now or later
        uow.turns.mark_extracted(user_id, [prepared.user_turn_id])
        return ()
    owed: list[tuple[str, dict[str, Any], str]] = []
    owed_up_to = uow.outbox.extraction_owed_up_to(user_id)  # those turns a job owed already will read
    waiting = [WaitingTurn(said_at, tokens) for turn_id, said_at, tokens
               in uow.turns.waiting_in_session(user_id, prepared.session_id) if turn_id > owed_up_to]
    if extraction.due(waiting, now):
        owed.append(("extract_turn", {"turn_id": prepared.user_turn_id,
                                      "recalled_memory_ids": list(prepared.prompt.memory_ids)},
                     f"extract:{prepared.user_turn_id}"))
    if embeddings_wanted:
        owed += [("embed_memory", {"memory_id": memory_id, "user_id": user_id}, f"embed:{memory_id}")
                 for memory_id in memory_ids]
        owed.append(("embed_round", {"turn_id": prepared.user_turn_id, "user_id": user_id},
                     f"embed-round:{prepared.user_turn_id}"))
    messages = 2 * turn_count
    if messages % MESSAGES_PER_SUMMARY == 0:
        part = messages // MESSAGES_PER_SUMMARY
        owed.append(("summarise_session", {"session_id": prepared.session_id, "part": part},
                     f"summarise:{prepared.session_id}:{part}"))
    available_at = prepared.quota.resets_at if prepared.quota.over else None
    ids = (uow.outbox.add(task, payload, dedup_key=key, user_id=user_id, available_at=available_at)
           for task, payload, key in owed)
    return tuple(job_id for job_id in ids if job_id is not None)
