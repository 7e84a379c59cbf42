"""What the language model costs: the caller's usage (the panel's card) and the operators' report."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request

from bot.api.auth import Principal, context, operator, principal
from bot.api.json_body import CheckedJsonRoute
from bot.api.schemas import ErrorOut
from bot.api.usage_schemas import OperatorUsageOut, UsageOut
from shared.usage.report import DEFAULT_TOP_USERS, MAX_REPORT_DAYS

MAX_TOP_USERS = 100

router = APIRouter(prefix="/api/v1", route_class=CheckedJsonRoute)


@router.get("/usage", response_model=UsageOut, tags=["usage"],
            responses={status: {"model": ErrorOut} for status in (401, 404)})
def my_usage(request: Request, caller: Annotated[Principal, Depends(principal)]) -> UsageOut:
    """The caller's usage today, over 7 and 30 UTC days (messages, tokens, the share cached, cost when prices
    are set), and what is left of today's allowance."""
    return UsageOut.of(context(request).panel.usage(caller.user_id))


@router.get("/admin/usage", response_model=OperatorUsageOut, tags=["operators"],
            responses={status: {"model": ErrorOut} for status in (401, 404, 422)})
def operators_usage(request: Request, _operator: Annotated[None, Depends(operator)],
                    days: Annotated[int, Query(ge=1, le=MAX_REPORT_DAYS)] = 30,
                    user: Annotated[int | None, Query(ge=1, le=2**63 - 1, description="only this user")] = None,
                    top: Annotated[int, Query(ge=1, le=MAX_TOP_USERS)] = DEFAULT_TOP_USERS) -> OperatorUsageOut:
    """Operators (the admin token): totals, by kind, by day and the top users over the last ``days`` UTC days."""
    return OperatorUsageOut.of(context(request).panel.operator_usage(days=days, user_id=user, top=top))
