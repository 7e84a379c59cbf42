"""Step 1 of a turn: who is speaking, is it a duplicate, working memory, the user's turn, recall, prompt.

A question that names what it asks for ("我住哪", "what's my dog's name") also looks the answer up by
its memory key, and that memory leads the recall: its words need not match the question's at all.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, tzinfo
from typing import TYPE_CHECKING

from shared.attachments.kinds import Attachment
from shared.attachments.texts import has_photo, prompt_text
from shared.conversation.messages import OPERATOR_CONSOLE, IncomingMessage, Reply
from shared.conversation.offline import OFFLINE_HINT_KEY, MemoryNote, OfflineView, lookup_keys
from shared.conversation.offline_replies import MODEL_HINT_MARKER
from shared.conversation.offline_view import RoundNote
from shared.conversation.packing import MemoryLine, RoundLine, candidate_count
from shared.conversation.prompt import BuiltPrompt, PastTurn, PromptInputs, build_turn_prompt, history_window
from shared.conversation.warning_texts import TurnWarning, WarningCode
from shared.db.memory_models import Memory
from shared.db.models import ConversationSession, ConversationTurn
from shared.emotion import PLAIN_STRATEGY, UNKNOWN, ResponseStrategy
from shared.recall.retrieval import Recall, ScoredMemory, recall_for_turn
from shared.reminders.in_note import MAX_IN_NOTE, PendingReminder, due_limit, reminder_line, reminders_for_note
from shared.reminders.timeparse import zone_of, zone_or_default
from shared.repositories.uow import UnitOfWork
from shared.search.scoring import combine, recency_score
from shared.speech.recall_questions import recall_ask
from shared.text import Language, clean_text, estimate_tokens
from shared.usage.quota import WITHIN, QuotaState, quota_state

if TYPE_CHECKING:
    from shared.conversation.config import ConversationConfig
    from shared.repositories.vectors import VectorIndex

MAX_MESSAGE_CHARS = 8000
"""Longer messages are cut before they reach the prompt (the user is told)."""
MAX_LOOKED_UP_KEYS = 8
MAX_PREFIX_MATCHES = 50
"""How many of the user's memories of one type an open question ("我喜欢什么") looks through."""
RECENT_BOT_LINES = 3
NEWEST_KNOWN = 5
"""How many of the user's newest memories "what do you know about me?" may draw on."""


@dataclass(frozen=True)
class PreparedTurn:
    """Everything step 1 decided, handed to the LLM call and to step 3."""

    user_id: int
    chat_id: int
    session_id: int
    user_turn_id: int
    timezone: str
    is_private: bool
    text: str
    strategy: ResponseStrategy
    recall: Recall
    prompt: BuiltPrompt
    offline_view: OfflineView
    paused: bool
    warnings: tuple[TurnWarning, ...]
    recall_seconds: float = 0.0
    """Time spent finding what to remember (retrieval and the looked-up keys), for the metrics."""
    quota: QuotaState = WITHIN
    """Over today's allowance: the offline responder answers and the turn's background work waits."""
    sent_at: datetime | None = None
    """When the message was sent (never after it was taken up): "in 10 minutes" counts from it."""
    own_zone: bool = False
    """The user set their time zone (else ``timezone`` is the operator's default)."""
    prompt_inputs: PromptInputs | None = None
    """What the prompt was built from: it is built again when the model's window turns out smaller."""
    attachments: tuple[Attachment, ...] = ()
    """What came with the message: the photo for the model, the files read into the prompt."""
    locale: str | None = None
    """The user's platform locale (the language of a notice on a message with no words of its own)."""

    @property
    def language(self) -> Language:
        """The language of the turn: of its reply, notices and warnings."""
        return self.offline_view.language


def prepare_turn(uow: UnitOfWork, message: IncomingMessage, config: ConversationConfig, *, now: datetime,
                 query_vector: Sequence[float] | None, vectors: VectorIndex | None, resume: bool = False,
                 prompt_budget: int | None = None) -> PreparedTurn | Reply:
    """Step 1; a message handled before gets the reply given then (a :class:`Reply` marked ``duplicate``)
    and nothing is prepared. With ``resume``, a message recorded before but never answered (the process stopped, or
    the database went away, in between) is answered now instead of being treated as a duplicate. The prompt is
    fitted to ``prompt_budget`` estimated tokens when it is given (the model's context window)."""
    identity = uow.users.identify(message.platform, message.user_id, display_name=message.display_name,
                                  locale=message.locale)
    chat = uow.chats.get_or_create(message.platform, message.chat_id,
                                   "private" if message.is_private else "group", message.chat_title)
    user_id = identity.user_id
    seen = None
    if message.message_id is not None:
        seen = uow.turns.by_platform_message(chat.id, "user", message.message_id)
        if seen is not None and not (resume and _never_answered(uow, seen)):
            return _duplicate(uow, seen)
    user = uow.users.get(user_id)
    paused = user is not None and user.paused_at is not None
    timezone = zone_or_default(user.timezone if user is not None else None, config.default_timezone)
    zone = zone_of(timezone)
    session = _working_memory(uow, user_id, chat.id, now, config, continuing=seen)
    history = _history(uow, user_id, session.id, config.history_turns, seen, zone)
    text, warnings = _clean_message(message.text)
    if seen is not None:
        turn_id = seen.id
    else:
        recorded = _record_user_turn(uow, message, user_id, chat.id, session.id, text, paused=paused)
        if recorded is None:  # the same message was recorded by another process a moment ago
            return _duplicate(uow, uow.turns.by_platform_message(chat.id, "user", str(message.message_id)))
        turn_id = recorded
        session.turn_count += 1
    session.updated_at = now
    strategy = ResponseStrategy.from_json(session.next_strategy) if config.emotion_enabled else PLAIN_STRATEGY
    candidates = candidate_count(config.retrieval_limit)
    local_now = now.astimezone(zone)
    sent_at = _sent_at(message, now)
    recall_started = time.perf_counter()
    recall = recall_for_turn(uow, user_id, text, now=now, limit=candidates, local_now=local_now,
                             last_active=uow.turns.last_said_before(user_id, turn_id), topic=session.current_topic,
                             query_vector=query_vector, vectors=vectors,
                             context=[turn.text for turn in history if turn.role == "user"])
    known = _known_memories(uow, user_id, text)
    recall = _asked_first(recall, known, text, now, candidates)
    recall_seconds = time.perf_counter() - recall_started
    pending = uow.todos.soonest_pending(user_id, MAX_IN_NOTE, due_before=due_limit(text, now))
    reminders = reminders_for_note(text, [PendingReminder(content, due) for content, due in pending], now)
    inputs = PromptInputs(
        bot_name=config.bot_name, personality=config.personality,
        strategy=strategy if config.emotion_enabled else None, user_name=identity.display_name,
        user_message=prompt_text(text, message.attachments), local_now=local_now, timezone=timezone,
        is_group=not message.is_private, with_image=has_photo(message.attachments),
        profile=_profile_text(recall), memories=[_line(item, recall, zone) for item in recall.memories],
        episodes=[episode.summary for episode in recall.episodes], history=history,
        memory_budget_tokens=config.memory_budget_tokens, topic=session.current_topic,
        memory_base_count=config.retrieval_limit, episodes_matched=recall.episodes_matched,
        rounds=_round_lines(recall, zone, skip={turn_id, *(turn.turn_id for turn in history)}),
        episode_ids=[episode.id for episode in recall.episodes],
        reminders=[reminder_line(reminder, timezone) for reminder in reminders], prompt_budget_tokens=prompt_budget)
    prompt = build_turn_prompt(inputs)
    if prompt.dropped_memories:
        warnings += (TurnWarning.of(WarningCode.MEMORIES_LEFT_OUT, count=prompt.dropped_memories),)
    quota = quota_state(uow, config.quota, user_id, now, chat_id=chat.id, group=not message.is_private)
    count, newest = _what_is_known(uow, user_id, text)
    offline_view = replace(_offline_view(text, local_now, timezone, strategy, identity.display_name, recall, prompt,
                                         known, history, session, config.bot_name), paused=paused,
                           operator_console=message.platform == OPERATOR_CONSOLE,
                           memory_count=count, newest=tuple(_note(memory) for memory in newest),
                           reminders=tuple(reminders), sent_at=sent_at.astimezone(local_now.tzinfo),
                           locale=message.locale)
    return PreparedTurn(user_id=user_id, chat_id=chat.id, session_id=session.id, user_turn_id=turn_id,
                        timezone=timezone, is_private=message.is_private, text=text, strategy=strategy,
                        recall=recall, prompt=prompt, offline_view=offline_view, paused=paused, warnings=warnings,
                        recall_seconds=recall_seconds, quota=quota, sent_at=sent_at,
                        own_zone=user is not None and user.timezone == timezone, prompt_inputs=inputs,
                        attachments=message.attachments, locale=message.locale)


def _history(uow: UnitOfWork, user_id: int, session_id: int, limit: int, seen: ConversationTurn | None,
             zone: tzinfo) -> list[PastTurn]:
    """The conversation so far, windowed by :func:`history_window`, each user's turn with the memories its
    prompt showed that are still the user's active memories (a forgotten one is gone from the prompt too)."""
    turns, earlier = uow.turns.recent_counted(user_id, session_id, limit,
                                              before_turn_id=seen.id if seen is not None else None)
    shown = history_window(earlier, limit)
    turns = turns[-shown:] if shown else []
    wanted = list(dict.fromkeys(memory_id for turn in turns for memory_id in turn.memory_ids or ()))
    active = ({memory.id: _shown(memory, zone) for memory in uow.memories.active_among(user_id, wanted)} if wanted
              else {})
    return [PastTurn(turn.role, turn.text, tuple(active[i] for i in turn.memory_ids or () if i in active),
                     turn_id=turn.id, said_at=turn.created_at) for turn in turns]


def _offline_view(text: str, local_now: datetime, timezone: str, strategy: ResponseStrategy, user_name: str | None,
                  recall: Recall, prompt: BuiltPrompt, known: list[Memory], history: list[PastTurn],
                  session: ConversationSession, bot_name: str) -> OfflineView:
    recalled = [item for item in recall.memories if item.memory.id in prompt.memory_ids]
    bot_lines = tuple(turn.text for turn in history if turn.role == "assistant")[-RECENT_BOT_LINES:]
    hint_shown = bool((session.context_variables or {}).get(OFFLINE_HINT_KEY)) or any(
        MODEL_HINT_MARKER in turn.text for turn in history if turn.role == "assistant")
    return OfflineView(
        text=text, local_now=local_now, timezone=timezone, strategy=strategy,
        memories=tuple(item.memory.content for item in recalled), user_name=user_name,
        recalled=tuple(_note(item.memory, item.score.total) for item in recalled),
        known=tuple(_note(memory) for memory in known), bot_lines=bot_lines, hint_shown=hint_shown,
        bot_name=bot_name, turn_number=session.turn_count,
        rounds=tuple(RoundNote(item.round.said_at, item.round.line, item.round.reply) for item in recall.rounds
                     if item.round.turn_id in prompt.round_ids) + _window_rounds(history))


def _window_rounds(history: list[PastTurn]) -> tuple[RoundNote, ...]:
    """The rounds of the conversation window, newest first: the offline responder reads no history of its own,
    so what was said a moment ago is as answerable as what was said last week."""
    rounds: list[RoundNote] = []
    for turn, after in zip(history, [*history[1:], None][:len(history)], strict=True):
        if turn.role == "user" and turn.said_at is not None:
            reply = after.text if after is not None and after.role == "assistant" else None
            rounds.append(RoundNote(turn.said_at, turn.text, reply))
    return tuple(reversed(rounds))


def _what_is_known(uow: UnitOfWork, user_id: int, text: str) -> tuple[int, list[Memory]]:
    """When the message asks what is known of the user: how many memories they have and the newest few (else
    nothing is read)."""
    ask = recall_ask(text)
    if ask is None or not ask.about_user:
        return 0, []
    newest, count = uow.memories.page(user_id, limit=NEWEST_KNOWN)
    return count, newest


def _known_memories(uow: UnitOfWork, user_id: int, text: str) -> list[Memory]:
    """The user's active memories under the keys the message states or asks about (see
    :func:`shared.conversation.offline.lookup_keys`), and those an open question's prefixes select."""
    keys, prefixes = lookup_keys(text)
    found: dict[int, Memory] = {}
    for memory_type, predicate in keys[:MAX_LOOKED_UP_KEYS]:
        for memory in uow.memories.active_by_key(user_id, memory_type, "user", predicate):
            found[memory.id] = memory
    for memory_type in dict.fromkeys(kind for kind, _ in prefixes):
        parts = [part for kind, part in prefixes if kind == memory_type]
        rows, _total = uow.memories.page(user_id, type_=memory_type, limit=MAX_PREFIX_MATCHES)
        for memory in rows:
            predicate = memory.predicate or ""
            if any(predicate.endswith(part) if part.startswith("_") else predicate.startswith(part) for part in parts):
                found[memory.id] = memory
    return list(found.values())


def _asked_first(recall: Recall, known: list[Memory], text: str, now: datetime, limit: int) -> Recall:
    """The recall with the memories that answer the question's exact keys first ("我住哪" → lives_in)."""
    ask = recall_ask(text)
    asked = [memory for key in (ask.keys if ask else ()) for memory in known if (memory.type, memory.predicate) == key]
    if not asked:
        return recall
    asked_ids = {memory.id for memory in asked}
    leading = tuple(ScoredMemory(memory, combine(
        relevance=1.0, keyword=1.0, memory_type=memory.type, confidence=memory.confidence, on_topic=False,
        recency=recency_score(memory.last_accessed or memory.updated_at or memory.created_at, now), frequency=1.0))
        for memory in dict.fromkeys(asked))
    rest = tuple(item for item in recall.memories if item.memory.id not in asked_ids)
    notes = recall.notes + tuple(f"memory {memory.id} answers the question's key {memory.predicate}"
                                 for memory in asked)
    return replace(recall, memories=(leading + rest)[:limit], notes=notes, decisive_ids=frozenset(asked_ids))


def _note(memory: Memory, score: float = 0.0) -> MemoryNote:
    return MemoryNote(content=memory.content, type=memory.type, predicate=memory.predicate, score=score)


def _working_memory(uow: UnitOfWork, user_id: int, chat_id: int, now: datetime, config: ConversationConfig,
                    continuing: ConversationTurn | None = None) -> ConversationSession:
    """The open session, unless it has been idle too long: then it is closed and a new one opened.
    A message answered late (``continuing``) is answered in its own session while that is open."""
    current = uow.sessions.open_for(user_id, chat_id, lock=True)
    if current is not None and (now - current.updated_at <= config.idle
                                or (continuing is not None and continuing.session_id == current.id)):
        return current
    if current is not None:
        uow.sessions.close(current.id, now)
        uow.outbox.add("close_session", {"session_id": current.id}, dedup_key=f"close:{current.id}",
                       user_id=user_id)
        uow.forget_loaded(current)
    return uow.sessions.start(user_id, chat_id, now)


def _record_user_turn(uow: UnitOfWork, message: IncomingMessage, user_id: int, chat_id: int, session_id: int,
                      text: str, *, paused: bool) -> int | None:
    """The new turn's id; None when another process recorded the same platform message a moment ago. A line
    said while remembering is paused is marked so from the start: never keyed, deleted when its sitting closes."""
    return uow.turns.add_unless_seen(ConversationTurn(
        user_id=user_id, chat_id=chat_id, session_id=session_id, role="user",
        platform_message_id=message.message_id, text=text, token_estimate=estimate_tokens(text),
        created_at=message.sent_at, paused=paused))


def _never_answered(uow: UnitOfWork, seen: ConversationTurn) -> bool:
    return uow.turns.reply_in_session(seen.user_id, seen.session_id, seen.id) is None


def _duplicate(uow: UnitOfWork, seen: ConversationTurn | None) -> Reply:
    """A message handled before: the reply given then (empty while it is still being answered)."""
    if seen is None:
        raise RuntimeError("a duplicate message vanished while it was being checked")
    answer = uow.turns.reply_in_session(seen.user_id, seen.session_id, seen.id)
    return Reply(text=answer.text if answer else "", emotion=UNKNOWN, strategy=PLAIN_STRATEGY, duplicate=True)


def _sent_at(message: IncomingMessage, now: datetime) -> datetime:
    """When the message was sent, by the platform's clock (a naive time is UTC), never later than ``now``."""
    sent = message.sent_at if isinstance(message.sent_at, datetime) else now
    sent = sent if sent.tzinfo is not None else sent.replace(tzinfo=UTC)
    return min(sent, now)


def _clean_message(text: str) -> tuple[str, tuple[TurnWarning, ...]]:
    cleaned = clean_text(text, MAX_MESSAGE_CHARS)
    if len(text) > MAX_MESSAGE_CHARS:
        return cleaned, (TurnWarning.of(WarningCode.MESSAGE_SHORTENED, count=MAX_MESSAGE_CHARS),)
    return cleaned, ()




def _profile_text(recall: Recall) -> str | None:
    profile = recall.profile
    if profile is None:
        return None
    focus = "; ".join(f"{key}: {value}" for key, value in (profile.scratchpad or {}).items() if value)
    return " ".join(part for part in (profile.core_summary, focus) if part) or None


def _shown(memory: Memory, zone: tzinfo) -> MemoryLine:
    """A memory a past turn's note showed, as it is written there (its day on the user's clock)."""
    return MemoryLine(id=memory.id, type=memory.type, content=memory.content,
                      noted_on=memory.created_at.astimezone(zone))


def _line(item: ScoredMemory, recall: Recall, zone: tzinfo) -> MemoryLine:
    memory = item.memory
    decisive = memory.id in recall.decisive_ids
    return MemoryLine(id=memory.id, type=memory.type, content=memory.content,
                      noted_on=memory.created_at.astimezone(zone),
                      relevance=item.score.relevance, decisive=decisive, source_turn_id=memory.source_turn_id,
                      rank=float("inf") if decisive else item.score.total)


def _round_lines(recall: Recall, zone: tzinfo, skip: set[int | None]) -> list[RoundLine]:
    """The recalled rounds as the prompt shows them (their day on the user's clock), but those the conversation
    window shows already."""
    return [RoundLine(id=item.round.turn_id, said_on=item.round.said_at.astimezone(zone), line=item.round.line,
                      reply=item.round.reply, relevance=item.score.relevance, rank=item.score.total,
                      terms=recall.query_terms)
            for item in recall.rounds if item.round.turn_id not in skip]

