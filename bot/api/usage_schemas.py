"""The usage endpoints' response bodies: a user's windows and allowance, and the operators' report."""

from __future__ import annotations

from datetime import date, datetime

from pydantic import BaseModel


class UsageWindowOut(BaseModel):
    """Usage over ``days`` UTC days up to today; ``cost`` when prices are set (in the report's currency)."""

    days: int
    messages: int
    requests: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    tokens: int
    cached_share: float | None
    estimated_requests: int
    cost: float | None

    @classmethod
    def of(cls, window) -> UsageWindowOut:
        totals = window.totals
        return cls(days=window.days, messages=totals.messages, requests=totals.calls,
                   prompt_tokens=totals.prompt_tokens, completion_tokens=totals.completion_tokens,
                   cached_tokens=totals.cached_tokens, tokens=totals.tokens, cached_share=window.cached_share,
                   estimated_requests=totals.estimated_calls, cost=window.cost)


class AllowanceOut(BaseModel):
    limit: int
    used: int
    remaining: int
    resets_at: datetime


class UsageOut(BaseModel):
    """The caller's usage: today, 7 and 30 days; the allowance left today (null: no daily limit applies)."""

    windows: list[UsageWindowOut]
    allowance: AllowanceOut | None
    lifted: bool
    currency: str | None

    @classmethod
    def of(cls, usage) -> UsageOut:
        allowance = usage.allowance
        return cls(windows=[UsageWindowOut.of(window) for window in usage.windows], lifted=usage.lifted,
                   allowance=None if allowance is None else AllowanceOut(
                       limit=allowance.limit, used=allowance.used, remaining=allowance.remaining,
                       resets_at=allowance.resets_at), currency=usage.currency)


class KindUsageOut(UsageWindowOut):
    kind: str


class DayUsageOut(UsageWindowOut):
    day: date


class UserUsageOut(UsageWindowOut):
    user_id: int
    name: str | None


class OperatorUsageOut(BaseModel):
    """Everyone's usage (or one user's) over ``days`` UTC days from ``since``."""

    days: int
    since: date
    user_id: int | None
    totals: UsageWindowOut
    by_kind: list[KindUsageOut]
    by_day: list[DayUsageOut]
    top_users: list[UserUsageOut]
    currency: str | None

    @classmethod
    def of(cls, report) -> OperatorUsageOut:
        return cls(
            days=report.days, since=report.since, user_id=report.user.user_id if report.user else None,
            totals=UsageWindowOut.of(report.totals), currency=report.currency,
            by_kind=[KindUsageOut(kind=kind, **_fields(window)) for kind, window in report.by_kind],
            by_day=[DayUsageOut(day=day, **_fields(window)) for day, window in report.by_day],
            top_users=[UserUsageOut(user_id=line.user_id, name=line.name, **_fields(window))
                       for line, window in report.top_users])


def _fields(window) -> dict:
    return UsageWindowOut.of(window).model_dump()
