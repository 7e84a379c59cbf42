"""Follow-up delivery: the scan claims the threads whose time has passed, a worker task sends each follow-up
exactly as a reminder goes (:mod:`shared.reminders.service`: a leased claim whose ``attempts`` is its token, the
same platform senders, the same outcomes), and the follow-up becomes a turn of the conversation.

- The scan (:func:`claim_due_followups`) leases open threads of users who turned follow-ups on and are not
  paused, in private chats or groups that turned them on; one per user a scan. A thread whose moment has not
  come (:mod:`shared.followups.timing`) is held until the first moment worth asking again, not sent; one a week
  past is closed (``expired``).
- The delivery (:func:`deliver_followup`) checks everything again holding the user's row: the claim is still
  this one, consent, not paused, not blocked, within today's allowance, and the timing rules; then it sets the
  thread's ``asked_at`` before sending, so a follow-up on its way counts as today's for every other thread of
  the user. So two workers, or two threads of one user, never send two follow-ups a day. It holds the claim
  over the model call and the send.
- The words (:mod:`shared.followups.compose`) come from one model call, counted as usage kind ``followup``;
  the message is recorded as the bot's turn in the chat's working memory, so the user's answer continues it,
  and that answer marks the thread answered (:mod:`shared.conversation.turn_threads`).
- Failures as a reminder's: ``RetryLater`` holds the claim and retries; a refusal closes the thread
  (``refused: …``); our own misconfiguration keeps it for a later claim. A crash after the platform took the
  message and before the thread is marked asked can repeat it once (Discord drops the repeat by its nonce).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from shared.db.models import Chat, ConversationTurn
from shared.db.thread_models import OpenThread
from shared.followups.compose import FollowupFacts, compose_followup, memory_lines
from shared.followups.timing import (
    DEFAULT_AFTER,
    DEFAULT_QUIET_HOURS,
    STALE,
    Moment,
    Verdict,
    follow_up_verdict,
    group_takes_followups,
    quiet_hours,
)
from shared.llm.client import ChatModel
from shared.llm.metering import CallUsage
from shared.reminders.chat_moves import record_chat_move
from shared.reminders.service import (
    SEND_WINDOW,
    ChatMoved,
    DeliveryOutcome,
    DeliveryRefused,
    ReminderSender,
    ReminderTarget,
    RetryLater,
    SenderMisconfigured,
)
from shared.reminders.timeparse import zone_of
from shared.repositories.reminders import CLAIM_LEASE
from shared.repositories.uow import UnitOfWork
from shared.settings import Settings
from shared.text import estimate_tokens
from shared.usage.policy import QuotaPolicy
from shared.usage.quota import quota_state

log = logging.getLogger(__name__)

UowFactory = Callable[[], UnitOfWork]
Blocked = Callable[[Iterable[tuple[str, str]]], bool]
"""Whether an access block refuses any of a user's (platform, platform user id) accounts."""
COMPOSE_WINDOW = timedelta(seconds=90)
"""A delivery holds its claim this long beyond the send window: the model writes the follow-up meanwhile."""


@dataclass(frozen=True)
class FollowupRules:
    """The operator's settings the rules read: how long after a thread's time, default quiet hours, the lease."""

    after: timedelta = DEFAULT_AFTER
    quiet_hours: str = DEFAULT_QUIET_HOURS
    lease: timedelta = CLAIM_LEASE
    bot_name: str = "Mnemo"
    personality: str = ""

    @classmethod
    def from_settings(cls, settings: Settings) -> FollowupRules:
        return cls(after=timedelta(minutes=settings.followup_after_minutes), quiet_hours=settings.followup_quiet_hours,
                   lease=timedelta(seconds=settings.reminder_lease_seconds), bot_name=settings.bot_name,
                   personality=settings.bot_personality)


@dataclass(frozen=True)
class FollowupClaim:
    thread_id: int
    attempt: int


@dataclass(frozen=True)
class _Delivery:
    user_id: int
    chat_id: int
    target: ReminderTarget
    facts: FollowupFacts
    reply_to: int | None


def idempotency_key(thread_id: int) -> str:
    return f"mnemo-followup-{thread_id}"


def claim_due_followups(uow_factory: UowFactory, now: datetime, rules: FollowupRules,
                        limit: int = 100) -> list[FollowupClaim]:
    """Lease the follow-ups that may go now, one per user; the others are held until their moment."""
    claims: list[FollowupClaim] = []
    with uow_factory() as uow:
        users: set[int] = set()
        for thread in uow.threads.claim_due(now, rules.after, rules.lease, limit):
            verdict = _verdict(uow, thread, now, rules)
            if verdict.reason == STALE:
                uow.threads.close(thread.user_id, thread.id, "expired", now)
            elif verdict.go and thread.user_id not in users:
                users.add(thread.user_id)
                claims.append(FollowupClaim(thread.id, thread.attempts))
            else:  # its moment has not come: not looked at again before it could
                uow.threads.hold_claim(thread.user_id, thread.id, thread.attempts,
                                       verdict.not_before or now + rules.lease)
        uow.commit()
    return claims


def deliver_followup(uow_factory: UowFactory, senders: Mapping[str, ReminderSender], thread_id: int, attempt: int,
                     now: datetime, *, rules: FollowupRules, chat_model: ChatModel | None = None,
                     quota: QuotaPolicy | None = None, blocked: Blocked | None = None) -> DeliveryOutcome:
    """Compose and send one claimed follow-up unless it is no longer ours or no longer welcome; record it."""
    with uow_factory() as uow:
        delivery = _take_over(uow, thread_id, attempt, now, rules, quota, blocked)
        uow.commit()
    if isinstance(delivery, DeliveryOutcome):
        return delivery
    platform, user_id = delivery.target.platform, delivery.user_id
    sender = senders.get(platform)
    if sender is None:
        return _held(uow_factory, delivery, thread_id, attempt, now, f"no sender configured for {platform}")
    text, spent, _by_model = compose_followup(chat_model, delivery.facts, now)
    try:
        sender.send(delivery.target, text, idempotency_key=idempotency_key(thread_id))
    except SenderMisconfigured as exc:
        return _held(uow_factory, delivery, thread_id, attempt, now, exc.reason, spent)
    except DeliveryRefused as exc:
        with uow_factory() as uow:
            uow.threads.close_refused(user_id, thread_id, attempt, exc.reason, now)
            uow.usage.record(user_id, delivery.chat_id, spent, now)
            uow.commit()
        return DeliveryOutcome("refused", exc.reason, platform=platform)
    except ChatMoved as exc:
        record_chat_move(uow_factory, platform, delivery.target.platform_chat_id, exc.new_platform_chat_id)
        _spent_alone(uow_factory, delivery, spent, now)
        return DeliveryOutcome("retry", exc.reason, retry_after=0.0, platform=platform)
    except RetryLater as exc:
        with uow_factory() as uow:
            uow.threads.hold_claim(user_id, thread_id, attempt, now + timedelta(seconds=exc.seconds) + SEND_WINDOW)
            uow.usage.record(user_id, delivery.chat_id, spent, now)
            uow.commit()
        return DeliveryOutcome("retry", exc.reason, retry_after=exc.seconds, platform=platform)
    _record_sent(uow_factory, delivery, thread_id, attempt, text, spent, now)
    return DeliveryOutcome("sent", platform=platform)


def _take_over(uow: UnitOfWork, thread_id: int, attempt: int, now: datetime, rules: FollowupRules,
               quota: QuotaPolicy | None, blocked: Blocked | None) -> _Delivery | DeliveryOutcome:
    """Check the claim is ours and the follow-up still welcome, holding the user's row; what to send, or why not."""
    thread = uow.threads.lock_for_delivery(thread_id)
    if thread is None:
        return DeliveryOutcome("skipped", "the thread no longer exists")
    if thread.status != "open" or thread.attempts != attempt:
        return DeliveryOutcome("skipped", f"the thread is {thread.status}, claim {thread.attempts}")
    if thread.claimed_until is None or thread.claimed_until <= now:
        return DeliveryOutcome("skipped", "the claim's lease ran out")
    uow.threads.hold_user(thread.user_id)
    user = uow.users.get(thread.user_id)
    chat = uow.chats.get(thread.chat_id) if thread.chat_id is not None else None
    if user is None or chat is None:
        uow.threads.close(thread.user_id, thread.id, "refused: the chat or user is gone", now)
        return DeliveryOutcome("refused", "the chat or user is gone")
    if user.followups_on_at is None or user.paused_at is not None:
        return _not_now(uow, thread, now, rules, "follow-ups are off or the user paused")
    identities = uow.users.identities_of(user.id)
    if blocked is not None and blocked((i.platform, i.platform_user_id) for i in identities):
        uow.threads.close(thread.user_id, thread.id, "blocked", now)
        return DeliveryOutcome("skipped", "the user is blocked")
    if quota is not None and quota_state(uow, quota, user.id, now).over:
        return _not_now(uow, thread, now, rules, "over today's allowance")
    verdict = _verdict(uow, thread, now, rules, chat=chat, user_quiet=user.quiet_hours)
    if not verdict.go:
        return _not_now(uow, thread, now, rules, verdict.reason, verdict.not_before)
    thread.claimed_until = max(thread.claimed_until, now + COMPOSE_WINDOW + SEND_WINDOW)
    thread.asked_at = now  # today's follow-up for this user, from now on: another thread's waits for tomorrow
    identity = next((i for i in identities if i.platform == chat.platform), None)
    target = ReminderTarget(chat.platform, chat.platform_chat_id, identity.platform_user_id if identity else None,
                            chat.kind)
    return _Delivery(user.id, chat.id, target, _facts(uow, thread, rules), thread.source_turn_id)


def _verdict(uow: UnitOfWork, thread: OpenThread, now: datetime, rules: FollowupRules, *,
             chat: Chat | None = None, user_quiet: str | None = None) -> Verdict:
    chat = chat or (uow.chats.get(thread.chat_id) if thread.chat_id is not None else None)
    if user_quiet is None:
        user = uow.users.get(thread.user_id)
        user_quiet = user.quiet_hours if user is not None else None
    last_asked = uow.threads.last_asked_at(thread.user_id, other_than=thread.id)
    group = chat is not None and chat.kind == "group"
    return follow_up_verdict(Moment(
        now=now, happens_at=thread.happens_at, zone=zone_of(thread.timezone),
        quiet=quiet_hours(user_quiet, rules.quiet_hours), after=rules.after, day_only=thread.day_only,
        last_asked_at=last_asked, last_written_at=uow.threads.last_written_at(thread.user_id), group=group,
        group_enabled=chat is not None and group_takes_followups(chat.settings)))


def _not_now(uow: UnitOfWork, thread: OpenThread, now: datetime, rules: FollowupRules, reason: str,
             not_before: datetime | None = None) -> DeliveryOutcome:
    """Not sent now: the claim is held until the moment worth asking again (a lease from now by default)."""
    thread.claimed_until = not_before or now + rules.lease
    return DeliveryOutcome("skipped", reason)


def _facts(uow: UnitOfWork, thread: OpenThread, rules: FollowupRules) -> FollowupFacts:
    """The thread, and what Mnemo remembers that bears on it: its own memory first, then the user's newest."""
    contents: list[str] = []
    if thread.memory_id is not None and (memory := uow.memories.get(thread.user_id, thread.memory_id)) is not None:
        contents.append(memory.content)
    newest, _total = uow.memories.page(thread.user_id, limit=5)
    contents += [memory.content for memory in newest]
    return FollowupFacts(thread.what, thread.happens_at, thread.timezone, thread.language == "zh",
                         memory_lines(contents), rules.bot_name, rules.personality)


def _record_sent(uow_factory: UowFactory, delivery: _Delivery, thread_id: int, attempt: int, text: str,
                 spent: tuple[CallUsage, ...], now: datetime) -> None:
    """The thread is asked, the follow-up is the bot's turn in the chat's working memory, its cost is counted."""
    with uow_factory() as uow:
        session = uow.sessions.start(delivery.user_id, delivery.chat_id, now)
        # reply_to names the message that noted the thread: this turn answers no newer message of the user
        turn = uow.turns.add(ConversationTurn(user_id=delivery.user_id, chat_id=delivery.chat_id, session_id=session.id,
                                              role="assistant", text=text, reply_to_turn_id=delivery.reply_to or 0,
                                              token_estimate=estimate_tokens(text), created_at=now))
        session.updated_at = now
        if not uow.threads.mark_asked(delivery.user_id, thread_id, attempt, now, turn.id):
            log.warning("follow-up %s was sent but the thread changed meanwhile; not recorded as asked", thread_id)
            uow.rollback()
            uow.usage.record(delivery.user_id, delivery.chat_id, spent, now)
        else:
            uow.usage.record(delivery.user_id, delivery.chat_id, spent, now)
        uow.commit()


def _held(uow_factory: UowFactory, delivery: _Delivery, thread_id: int, attempt: int, now: datetime, reason: str,
          spent: tuple[CallUsage, ...] = ()) -> DeliveryOutcome:
    """Our side cannot send: the thread stays open (its lease runs out and it is claimed again)."""
    log.error("follow-up %s not sent, kept for a later claim: %s", thread_id, reason)
    _spent_alone(uow_factory, delivery, spent, now)
    return DeliveryOutcome("refused", reason)


def _spent_alone(uow_factory: UowFactory, delivery: _Delivery, spent: tuple[CallUsage, ...], now: datetime) -> None:
    if spent:
        with uow_factory() as uow:
            uow.usage.record(delivery.user_id, delivery.chat_id, spent, now)
            uow.commit()


def console_followups_sent_since(uow_factory: UowFactory, user_id: int, since: datetime,
                                 until: datetime) -> list[tuple[datetime, str]]:
    """This user's console follow-ups sent in (``since``, ``until``], when each went and its words: what the
    console shows between prompts."""
    with uow_factory() as uow:
        return uow.threads.asked_on_platform(user_id, "console", since, until)
