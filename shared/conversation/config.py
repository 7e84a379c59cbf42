"""The settings the hot path reads, fixed at start-up (one place, so prepare, apply and the service
share them without importing each other)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from shared.conversation.extraction_timing import ExtractionTiming
from shared.conversation.pressure import PressureConfig
from shared.reminders.deadlines import DEFAULT_HEADS_UP
from shared.settings import Settings
from shared.usage.policy import QuotaPolicy


@dataclass(frozen=True)
class ConversationConfig:
    """The settings the hot path reads, fixed at start-up."""

    bot_name: str
    personality: str
    emotion_enabled: bool
    retrieval_limit: int
    memory_budget_tokens: int
    history_turns: int
    idle: timedelta
    default_timezone: str
    database_patience: timedelta = timedelta(minutes=10)
    """How long a message is kept and tried again while the database cannot be reached."""
    quota: QuotaPolicy = field(default_factory=QuotaPolicy)
    """Daily token allowances; past one, the offline responder answers and background work waits."""
    pressure: PressureConfig = field(default_factory=PressureConfig)
    """How many turns of this process wait for the model at once, and for how long."""
    deadline_heads_up: timedelta = DEFAULT_HEADS_UP
    """How long before a deadline its reminder pings (``DEADLINE_HEADS_UP_MINUTES``)."""
    extraction: ExtractionTiming = field(default_factory=ExtractionTiming)
    """When the knowledge monitor reads a sitting's waiting turns (``EXTRACTION_BATCH_TURNS``,
    ``EXTRACTION_MAX_DELAY_MINUTES``)."""
    stream_replies: bool = True
    """Front-ends hear the model's reply while it streams and show it as it grows (``STREAM_REPLIES=auto``)."""

    @classmethod
    def from_settings(cls, settings: Settings) -> ConversationConfig:
        return cls(bot_name=settings.bot_name, personality=settings.bot_personality,
                   emotion_enabled=settings.use_memory_emotion_system,
                   retrieval_limit=settings.memory_retrieval_limit,
                   memory_budget_tokens=settings.memory_context_tokens, history_turns=settings.history_turns,
                   idle=timedelta(minutes=settings.session_idle_minutes), default_timezone=settings.default_timezone,
                   database_patience=timedelta(seconds=settings.database_patience_seconds),
                   quota=QuotaPolicy.from_settings(settings),
                   pressure=PressureConfig(slots=settings.turn_llm_concurrency, queue_limit=settings.turn_queue_limit,
                                           busy_after=settings.turn_busy_notice_seconds,
                                           give_up_after=settings.turn_queue_seconds),
                   deadline_heads_up=timedelta(minutes=settings.deadline_heads_up_minutes),
                   extraction=ExtractionTiming(
                       batch_turns=settings.extraction_batch_turns,
                       max_delay=timedelta(minutes=settings.extraction_max_delay_minutes)),
                   stream_replies=settings.stream_replies == "auto")
