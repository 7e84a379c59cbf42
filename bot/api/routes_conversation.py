"""The caller's rounds of conversation: what they said and what the bot answered, listed, searched and deleted."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request

from bot.api.auth import Principal, context, principal
from bot.api.json_body import CheckedJsonRoute
from bot.api.schemas import Deleted, ErrorOut, RoundOut, RoundPageOut

ERRORS: dict[int | str, dict[str, Any]] = {status: {"model": ErrorOut} for status in (401, 403, 404, 422)}
Caller = Annotated[Principal, Depends(principal)]
MAX_OFFSET = 10**9

router = APIRouter(prefix="/api/v1", responses=ERRORS, route_class=CheckedJsonRoute)


@router.get("/conversation/rounds", response_model=RoundPageOut, tags=["conversation"])
def list_rounds(request: Request, caller: Caller, limit: Annotated[int, Query(ge=1, le=100)] = 20,
                offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
                q: Annotated[str | None, Query(max_length=200, description="words the line or the reply contains")]
                = None) -> RoundPageOut:
    """A page of the caller's rounds (their line and the bot's reply), newest first, with the total that match."""
    listing = context(request).panel.list_rounds(caller.user_id, search=q, limit=limit, offset=offset)
    return RoundPageOut(items=[RoundOut(id=r.turn_id, said_at=r.said_at, line=r.line, reply=r.reply,
                                        recalled=r.recalled) for r in listing.items],
                        total=listing.total, limit=listing.limit, offset=listing.offset)


@router.delete("/conversation/rounds/{round_id}", response_model=Deleted, tags=["conversation"])
def delete_round(request: Request, caller: Caller, round_id: int) -> Deleted:
    """Forget one round, both sides; memories drawn from it stay. 404 when it is not the caller's."""
    context(request).panel.forget_round(caller.user_id, round_id)
    return Deleted(deleted=1)
