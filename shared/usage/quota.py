"""Whether a user (and the group chat they write in) may still spend tokens today; putting off the
background work of one who may not, to the next UTC day, rather than dropping it.

A turn's model call is paid for before it is made: :func:`reserve` checks the allowance and counts the
call's largest cost (its prompt and every output token it may ask for) in one transaction that holds the
user's row (and the group chat's), so concurrent messages, on any number of replicas, see each other's
calls; :func:`settle` gives the hold back in the transaction that records what the call really cost. A
user therefore goes past the allowance by at most one call's worth, however many messages arrive at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from shared.db.usage_models import next_usage_day, usage_day
from shared.text import estimate_tokens
from shared.usage.policy import QuotaPolicy

if TYPE_CHECKING:
    from shared.repositories.uow import UnitOfWork


@dataclass(frozen=True)
class QuotaState:
    """Today's verdict for one message or job: ``over`` when the user's (or, with ``group``, the chat's)
    allowance is spent, until ``resets_at``."""

    over: bool = False
    group: bool = False
    limit: int | None = None
    resets_at: datetime | None = None


WITHIN = QuotaState()


@dataclass(frozen=True)
class QuotaHold:
    """Tokens counted on a user's (and chat's) day for a call not yet recorded."""

    user_id: int
    chat_id: int | None
    day: date
    tokens: int


def quota_state(uow: UnitOfWork, policy: QuotaPolicy, user_id: int, now: datetime, *,
                chat_id: int | None = None, group: bool = False) -> QuotaState:
    """Whether the user may spend tokens now (a user whose quota an operator lifted always may); in a group
    chat, the chat's allowance counts too. No query at all when no quota is set."""
    if not policy.enabled:
        return WITHIN
    user = uow.users.get(user_id)
    if user is not None and user.quota_lifted_at is not None:
        return WITHIN
    day, resets_at = usage_day(now), next_usage_day(now)
    if policy.per_user is not None and policy.user_over(uow.usage.tokens_on(user_id, day), lifted=False):
        return QuotaState(True, False, policy.per_user, resets_at)
    if group and chat_id is not None and policy.chat_over(uow.usage.chat_tokens_on(chat_id, day)):
        return QuotaState(True, True, policy.per_chat, resets_at)
    return WITHIN


def reserve(uow: UnitOfWork, policy: QuotaPolicy, user_id: int, now: datetime, tokens: int, *,
            chat_id: int | None = None, group: bool = False) -> tuple[QuotaState, QuotaHold | None]:
    """Check the allowance and, within it, hold ``tokens`` (a call's most) on today's sums, the user's row
    (and a group chat's) held meanwhile. No hold when no quota applies; the caller commits."""
    if not policy.enabled:
        return WITHIN, None
    uow.usage.lock_spenders(user_id, chat_id if group and policy.per_chat is not None else None)
    state = quota_state(uow, policy, user_id, now, chat_id=chat_id, group=group)
    if state.over:
        return state, None
    user = uow.users.get(user_id)
    if user is not None and user.quota_lifted_at is not None:
        return state, None
    hold = QuotaHold(user_id, chat_id, usage_day(now), max(tokens, 1))
    uow.usage.hold(hold.user_id, hold.chat_id, hold.day, hold.tokens)
    return state, hold


def call_ceiling(messages: Sequence[Mapping[str, Any]], max_output_tokens: int) -> int:
    """The most one call may cost: its prompt (estimated from the text) and every output token it asks for."""
    return sum(estimate_tokens(str(message.get("content") or "")) for message in messages) + max_output_tokens


def settle(uow: UnitOfWork, hold: QuotaHold | None) -> None:
    """Give back what :func:`reserve` held (in the transaction that records what was spent)."""
    if hold is not None:
        uow.usage.release(hold.user_id, hold.chat_id, hold.day, hold.tokens)


def may_spend(uow_factory: Callable[[], UnitOfWork], policy: QuotaPolicy | None, user_id: int, now: datetime) -> bool:
    """True when the user's own allowance is not spent today (background work of one user)."""
    if policy is None or policy.per_user is None:
        return True
    with uow_factory() as uow:
        return not quota_state(uow, policy, user_id, now).over


def put_off_if_over(uow_factory: Callable[[], UnitOfWork], policy: QuotaPolicy | None, job_id: int | None,
                    now: datetime) -> bool:
    """For a worker about to do an outbox job: True when the job's user has spent today's allowance; the
    job is then owed again from the next UTC day (the outbox sweep sends it then) and nothing is lost."""
    if policy is None or policy.per_user is None or job_id is None:
        return False
    with uow_factory() as uow:
        user_id = uow.outbox.user_of(job_id)
        if user_id is None or not quota_state(uow, policy, user_id, now).over:
            return False
        uow.outbox.put_off(job_id, next_usage_day(now))
        uow.commit()
    return True
