"""Whether a user (and the group chat they write in) may still spend tokens today; putting off the
background work of one who may not, to the next UTC day, rather than dropping it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from shared.db.usage_models import next_usage_day, usage_day
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
