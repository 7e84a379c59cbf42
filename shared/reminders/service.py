"""Reminder delivery (DESIGN.md §4): claim the todos that fell due, ping each user, mark them sent.

Beat's scan calls :func:`claim_due_reminders`; a worker task calls :func:`deliver_reminder` for each
:class:`ReminderClaim`. The platform side is a :class:`ReminderSender` (``shared/delivery/platform_api.py``),
so nothing here imports the bots.

Guarantees, and their limits:

- A claim is atomic and leased. ``FOR UPDATE SKIP LOCKED`` gives each due todo to one claimer, which
  bumps ``todos.attempts``; that number is the claim's token. If a claim is not marked sent when its
  lease runs out (the worker died), the todo can be claimed again.
- Before it sends, a delivery checks in a short transaction, holding the row lock, that the todo is
  still pending, still has this attempt number and that the lease has not run out. If any check
  fails, the delivery does nothing (``skipped``), so a duplicate or stale task (a redelivered Celery
  message, a retry that came after another worker took over) sends nothing. The same transaction
  extends the lease to cover the send (at least ``SEND_WINDOW``), so nobody can claim the todo while
  its message is in flight.
- The HTTP call runs outside any transaction. Afterwards the todo is marked sent only if it is still
  pending with the same attempt number.
- If the worker crashes before the send, the lease runs out, and the todo is claimed again and sent once.
- If it crashes after the platform accepted the message but before the todo was marked sent, Discord
  drops the resend because it carries the same ``nonce`` (the key ``mnemo-todo-<id>`` is the same for
  every attempt; Discord remembers a nonce for a few minutes). Telegram has no idempotency key, so the
  user can get that reminder twice. The window is one HTTP round-trip.

When a send fails:

- ``RetryLater`` (429, 5xx, network): ``last_error`` is recorded and the lease is extended past the
  wait the platform asked for. The outcome carries ``retry_after``, and the caller retries the same
  claim after that. If it never does, the lease runs out and the next scan claims the todo again.
- ``DeliveryRefused`` (the bot was blocked or removed, the chat is gone): retrying cannot help, and a
  ``pending`` todo must mean "will be sent". The schema has no ``failed`` status, so the todo becomes
  ``cancelled`` with ``last_error = "refused: <why>"``, which tells it apart from one the user cancelled.
- ``ChatMoved`` (a Telegram group became a supergroup, with a new chat id): the chat is recorded
  under its new id (:func:`shared.reminders.chat_moves.record_chat_move`) and the same claim is retried at
  once, now to the new id.
- ``SenderMisconfigured`` (the platform rejected our token), or no sender for the platform: the fault
  is ours, not the recipient's. The todo stays ``pending`` with ``last_error`` set, and the next scan
  after the lease claims it again, so the reminder goes out once the configuration is fixed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

from shared.db.kinds import TodoKind, TodoStatus
from shared.db.memory_models import Todo
from shared.errors import MnemoError
from shared.reminders.chat_moves import record_chat_move
from shared.reminders.timeparse import zone_of
from shared.repositories.reminders import CLAIM_LEASE
from shared.repositories.uow import UnitOfWork
from shared.text import is_chinese, language_of

log = logging.getLogger(__name__)

SEND_WINDOW = timedelta(seconds=20)
"""A delivery holds its claim for at least this long: twice a sender's HTTP timeout (10 s)."""

UowFactory = Callable[[], UnitOfWork]


@dataclass(frozen=True)
class ReminderTarget:
    """Where a reminder goes: a chat on a platform, and the user to address there."""

    platform: str
    platform_chat_id: str
    platform_user_id: str | None
    chat_kind: str  # "private" or "group"


class RetryLater(MnemoError):
    """The platform could not take the message now (429, 5xx, network); try again after ``seconds``."""

    def __init__(self, seconds: float, reason: str = "") -> None:
        self.seconds = max(0.0, float(seconds))
        self.reason = reason or f"retry in {self.seconds:g} s"
        super().__init__(self.reason)


class DeliveryRefused(MnemoError):
    """The platform will not deliver to this chat (bot blocked or removed, unknown chat)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class ChatMoved(MnemoError):
    """The platform moved the chat to a new id (a Telegram group upgraded to a supergroup)."""

    def __init__(self, new_platform_chat_id: str, reason: str) -> None:
        self.new_platform_chat_id, self.reason = new_platform_chat_id, reason
        super().__init__(reason)


class SenderMisconfigured(DeliveryRefused):
    """The platform rejected our credentials or endpoint: our fault, not the recipient's."""


class ReminderSender(Protocol):
    """One platform's outgoing API. Returns once the platform accepted the message."""

    def send(self, target: ReminderTarget, text: str, *, idempotency_key: str) -> None: ...


@dataclass(frozen=True)
class ReminderClaim:
    """A leased due todo; ``attempt`` (``todos.attempts`` after the claim) is the claim's token."""

    todo_id: int
    attempt: int


@dataclass(frozen=True)
class DeliveryOutcome:
    """``kind`` is sent, skipped, retry (see ``retry_after``) or refused; ``reason`` says why. A reminder that
    was sent names its ``platform`` and how many seconds after its time it went (``lateness_seconds``)."""

    kind: str
    reason: str = ""
    retry_after: float | None = None
    platform: str | None = field(default=None, compare=False)  # for the metrics, not part of what happened
    lateness_seconds: float | None = field(default=None, compare=False)


@dataclass(frozen=True)
class _Delivery:
    user_id: int
    target: ReminderTarget
    text: str
    remind_at: datetime


def idempotency_key(todo_id: int) -> str:
    """The same for every attempt at one reminder, so a platform that deduplicates drops a resend."""
    return f"mnemo-todo-{todo_id}"


def reminder_text(content: str, due_at: datetime, timezone: str, locale: str | None, *,
                  remind_at: datetime | None = None, deadline: bool = False) -> str:
    """What the user reads: the reminder and its due time (HH:MM, with the day when a deadline's is another) in
    the todo's time zone; a deadline's heads-up says it is due then."""
    zone = zone_of(timezone)
    due = due_at.astimezone(zone)
    local = f"{due:%H:%M}"
    if deadline and remind_at is not None and remind_at.astimezone(zone).date() != due.date():
        local = f"{due:%m-%d %H:%M}"
    if is_chinese(locale) or language_of(content).chinese:  # the user's language, else the reminder's
        return f"⏰ 提醒：{content}（{local} 截止）" if deadline else f"⏰ 提醒：{content}（{local}）"
    return f"⏰ Heads-up: {content} (due {local})" if deadline else f"⏰ Reminder: {content} ({local})"


def todo_text(todo: Todo, locale: str | None) -> str:
    """:func:`reminder_text` of a stored reminder."""
    return reminder_text(todo.content, todo.due_at, todo.timezone, locale, remind_at=todo.remind_at,
                         deadline=todo.kind == TodoKind.DEADLINE)


def claim_due_reminders(uow_factory: UowFactory, now: datetime, *, limit: int = 100,
                        lease: timedelta = CLAIM_LEASE) -> list[ReminderClaim]:
    """Lease up to ``limit`` due reminders; concurrent callers never get the same one."""
    with uow_factory() as uow:
        claims = [ReminderClaim(todo.id, todo.attempts) for todo in uow.todos.claim_due(now, limit, lease)]
        uow.commit()
    return claims


def deliver_reminder(uow_factory: UowFactory, senders: Mapping[str, ReminderSender], todo_id: int,
                     attempt: int, now: datetime) -> DeliveryOutcome:
    """Send one claimed reminder unless the claim is no longer ours; record what happened."""
    with uow_factory() as uow:
        delivery = _take_over(uow, todo_id, attempt, now)
        uow.commit()
    if isinstance(delivery, DeliveryOutcome):
        return delivery
    user_id, platform = delivery.user_id, delivery.target.platform
    sender = senders.get(platform)
    if sender is None:
        return _hold(uow_factory, user_id, todo_id, attempt, now, f"no sender configured for {platform}")
    try:
        sender.send(delivery.target, delivery.text, idempotency_key=idempotency_key(todo_id))
    except SenderMisconfigured as exc:
        return _hold(uow_factory, user_id, todo_id, attempt, now, exc.reason)
    except DeliveryRefused as exc:
        with uow_factory() as uow:
            uow.todos.cancel_refused(user_id, todo_id, attempt, exc.reason, now)
            uow.commit()
        log.warning("reminder %s refused and cancelled: %s", todo_id, exc.reason)
        return DeliveryOutcome("refused", exc.reason, platform=platform)
    except ChatMoved as exc:
        record_chat_move(uow_factory, platform, delivery.target.platform_chat_id, exc.new_platform_chat_id)
        _note_failure(uow_factory, user_id, todo_id, attempt, exc.reason, now)
        return DeliveryOutcome("retry", exc.reason, retry_after=0.0, platform=platform)
    except RetryLater as exc:
        hold_until = now + timedelta(seconds=exc.seconds) + SEND_WINDOW
        _note_failure(uow_factory, user_id, todo_id, attempt, exc.reason, now, hold_until=hold_until)
        return DeliveryOutcome("retry", exc.reason, retry_after=exc.seconds, platform=platform)
    with uow_factory() as uow:
        marked = uow.todos.mark_sent(user_id, todo_id, attempt, now)
        uow.commit()
    if not marked:
        log.warning("reminder %s was sent but changed meanwhile; not marked sent by attempt %s", todo_id, attempt)
    return DeliveryOutcome("sent", platform=platform, lateness_seconds=(now - delivery.remind_at).total_seconds())


def console_reminders_sent_since(uow_factory: UowFactory, user_id: int, since: datetime,
                                 until: datetime | None = None) -> list[tuple[datetime, str]]:
    """This user's console reminders sent in (``since``, ``until``], when each went and its words: what the console
    shows between prompts."""
    with uow_factory() as uow:
        todos = uow.todos.sent_on_platform(user_id, "console", since, until or datetime.max.replace(tzinfo=UTC))
        identity = uow.users.identity_on(user_id, "console")
    locale = identity.locale if identity else None
    return [(t.sent_at, todo_text(t, locale)) for t in todos if t.sent_at is not None]


def _take_over(uow: UnitOfWork, todo_id: int, attempt: int, now: datetime) -> _Delivery | DeliveryOutcome:
    """Check the claim is still ours and hold it over the send; what to send, or why not."""
    todo = uow.todos.lock_for_delivery(todo_id)
    if todo is None:
        return DeliveryOutcome("skipped", "the reminder no longer exists")
    if todo.status != TodoStatus.PENDING:
        return DeliveryOutcome("skipped", f"the reminder is already {todo.status}")
    if todo.attempts != attempt:
        return DeliveryOutcome("skipped", f"claim {attempt} was superseded by claim {todo.attempts}")
    if todo.claimed_until is None or todo.claimed_until <= now:
        return DeliveryOutcome("skipped", "the claim's lease ran out")
    chat = uow.chats.get(todo.chat_id) if todo.chat_id is not None else None
    if chat is None:
        reason = "the chat of this reminder no longer exists"
        todo.status, todo.claimed_until, todo.updated_at = TodoStatus.CANCELLED, None, now
        todo.last_error = f"refused: {reason}"
        return DeliveryOutcome("refused", reason)
    todo.claimed_until = max(todo.claimed_until, now + SEND_WINDOW)
    identity = uow.users.identity_on(todo.user_id, chat.platform)
    target = ReminderTarget(chat.platform, chat.platform_chat_id,
                            identity.platform_user_id if identity else None, chat.kind)
    text = todo_text(todo, identity.locale if identity else None)
    return _Delivery(todo.user_id, target, text, todo.remind_at)


def _hold(uow_factory: UowFactory, user_id: int, todo_id: int, attempt: int, now: datetime,
          reason: str) -> DeliveryOutcome:
    """Our side cannot send: keep the todo pending (its lease runs out and it is claimed again)."""
    _note_failure(uow_factory, user_id, todo_id, attempt, reason, now)
    log.error("reminder %s not sent, kept for a later claim: %s", todo_id, reason)
    return DeliveryOutcome("refused", reason)


def _note_failure(uow_factory: UowFactory, user_id: int, todo_id: int, attempt: int, error: str, now: datetime, *,
                  hold_until: datetime | None = None) -> None:
    """Record why the send failed, if the todo is still pending under this claim."""
    with uow_factory() as uow:
        uow.todos.note_failure(user_id, todo_id, attempt, error, now, hold_until=hold_until)
        uow.commit()
