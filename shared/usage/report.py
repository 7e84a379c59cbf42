"""Usage reports: a user's (``/usage``, the panel's card) and the operators' (``mnemo usage``, the admin API).

Both read only the daily sums, in UTC days: today, the last 7 and the last 30 days for a user, with
the allowance left today when a quota applies; totals, kinds, days and the top users for operators.
Money is shown when prices are set (:class:`~shared.usage.policy.Prices`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING

from shared.db.usage_models import UsageTotals, next_usage_day, usage_day
from shared.usage.policy import Prices, UsagePolicy

if TYPE_CHECKING:
    from shared.repositories.uow import UnitOfWork

USER_WINDOWS = (1, 7, 30)
"""Today, the last 7 days and the last 30 days (today included)."""
MAX_REPORT_DAYS = 366
DEFAULT_TOP_USERS = 10


@dataclass(frozen=True)
class UsageWindow:
    """Usage over ``days`` UTC days up to today, and its price when prices are set."""

    days: int
    totals: UsageTotals
    cost: float | None = None

    @property
    def cached_share(self) -> float | None:
        """The part of the prompt tokens the server served from its cache (None without prompt tokens)."""
        prompt = self.totals.prompt_tokens
        return self.totals.cached_tokens / prompt if prompt else None


@dataclass(frozen=True)
class Allowance:
    """Today's quota of one user."""

    limit: int
    used: int
    remaining: int
    resets_at: datetime


@dataclass(frozen=True)
class UserUsage:
    windows: tuple[UsageWindow, ...]
    allowance: Allowance | None
    """None when no daily quota applies to the user (none is set, or an operator lifted it)."""
    lifted: bool
    currency: str | None
    """Set when prices are, so costs are shown."""
    followups: tuple[int, int] = (0, 0)
    """Follow-ups sent to the user and answered by them over the last 30 days."""


@dataclass(frozen=True)
class UserLine:
    user_id: int
    name: str | None


@dataclass(frozen=True)
class OperatorUsage:
    days: int
    since: date
    user: UserLine | None
    """The one user reported on, or None for everyone."""
    totals: UsageWindow
    by_kind: tuple[tuple[str, UsageWindow], ...]
    by_day: tuple[tuple[date, UsageWindow], ...]
    top_users: tuple[tuple[UserLine, UsageWindow], ...]
    currency: str | None


def user_usage(uow: UnitOfWork, user_id: int, now: datetime, policy: UsagePolicy) -> UserUsage:
    """The user's usage today, over 7 and over 30 days, and what is left of today's quota."""
    today = usage_day(now)
    rows = uow.usage.by_day(today - timedelta(days=max(USER_WINDOWS) - 1), user_id=user_id)
    windows = tuple(_window(days, sum((totals for day, totals in rows if day > today - timedelta(days=days)),
                                      UsageTotals()), policy.prices) for days in USER_WINDOWS)
    user = uow.users.get(user_id)
    lifted = user is not None and user.quota_lifted_at is not None
    used = windows[0].totals.tokens
    remaining = policy.quota.remaining(used, lifted=lifted)
    per_user = policy.quota.per_user
    allowance = (None if remaining is None or per_user is None
                 else Allowance(per_user, used, remaining, next_usage_day(now)))
    followups = uow.threads.counts_since(user_id, now - timedelta(days=max(USER_WINDOWS)))
    return UserUsage(windows, allowance, lifted, policy.prices.currency if policy.prices.known else None, followups)


def operator_usage(uow: UnitOfWork, now: datetime, policy: UsagePolicy, *, days: int = 30,
                   user_id: int | None = None, top: int = DEFAULT_TOP_USERS) -> OperatorUsage:
    """Everyone's (or one user's) usage over the last ``days`` UTC days: totals, by kind, by day, top users."""
    days = min(max(days, 1), MAX_REPORT_DAYS)
    since = usage_day(now) - timedelta(days=days - 1)
    prices = policy.prices
    by_day = tuple((day, _window(1, totals, prices)) for day, totals in uow.usage.by_day(since, user_id=user_id))
    by_kind = tuple((kind, _window(days, totals, prices))
                    for kind, totals in uow.usage.by_kind(since, user_id=user_id))
    total = _window(days, sum((window.totals for _, window in by_kind), UsageTotals()), prices)
    ranked = [] if user_id is not None else uow.usage.top_users(since, top)
    top_users = tuple((_user_line(uow, ranked_id), _window(days, totals, prices)) for ranked_id, totals in ranked)
    user = _user_line(uow, user_id) if user_id is not None else None
    return OperatorUsage(days, since, user, total, by_kind, by_day, top_users,
                         prices.currency if prices.known else None)


def find_user(uow: UnitOfWork, reference: str) -> int | None:
    """The user an operator names: an id, or ``platform:platform_user_id``; None when there is none."""
    reference = reference.strip()
    if reference.isdigit():
        return int(reference) if int(reference) < 2**63 and uow.users.get(int(reference)) is not None else None
    platform, _, platform_user_id = reference.partition(":")
    identity = uow.users.identity(platform.lower(), platform_user_id) if platform_user_id else None
    return identity.user_id if identity is not None else None


def _window(days: int, totals: UsageTotals, prices: Prices) -> UsageWindow:
    cost = prices.cost(totals.prompt_tokens, totals.cached_tokens, totals.completion_tokens) if prices.known else None
    return UsageWindow(days, totals, cost)


def _user_line(uow: UnitOfWork, user_id: int) -> UserLine:
    identities = uow.users.identities_of(user_id)
    return UserLine(user_id, identities[0].display_name if identities else None)
