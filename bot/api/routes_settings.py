"""The caller's settings: their time zone, which reminders, "today" and every time shown to them use; and
follow-ups (on or off, quiet hours, the open threads)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field

from bot.api.auth import Principal, context, principal
from bot.api.json_body import CheckedJsonRoute
from bot.api.schemas import ErrorOut, FollowupsIn, ZoneIn
from shared.followups.texts import FollowupSettings
from shared.reminders.user_zone import UserZone, ZoneChange
from shared.reminders.zones import zone_label

router = APIRouter(prefix="/api/v1", route_class=CheckedJsonRoute, tags=["settings"],
                   responses={status: {"model": ErrorOut} for status in (401, 403, 404, 422)})
Caller = Annotated[Principal, Depends(principal)]


class SettingsOut(BaseModel):
    timezone: str | None = Field(description="the zone the user set (an IANA name or an offset such as UTC+05:30); "
                                             "null: the bot's default")
    zone: str = Field(description="the zone in use")
    zone_label: str = Field(description="the zone in use with its offset now, e.g. Asia/Shanghai (UTC+08:00)")
    default_timezone: str

    @classmethod
    def of(cls, zone: UserZone) -> SettingsOut:
        return cls(timezone=zone.name if zone.own else None, zone=zone.name,
                   zone_label=zone_label(zone.name, datetime.now(UTC)), default_timezone=zone.default)


class ZoneChangeOut(SettingsOut):
    moved: int = Field(description="pending reminders that kept their clock time (their moment moved)")
    kept: int = Field(description="pending reminders set as an amount of time, which kept their moment")


@router.get("/settings", response_model=SettingsOut)
def settings(request: Request, caller: Caller) -> SettingsOut:
    """The caller's settings."""
    return SettingsOut.of(context(request).panel.zone(caller.user_id))


@router.put("/settings/timezone", response_model=ZoneChangeOut)
def set_timezone(request: Request, caller: Caller, body: ZoneIn) -> ZoneChangeOut:
    """Set the caller's time zone, as ``/timezone`` does; pending reminders keep their clock time. 422
    ``zone_unknown`` or ``zone_several`` (a country with several zones) when it names no one zone."""
    change: ZoneChange = context(request).panel.set_zone(caller.user_id, body.timezone)
    return ZoneChangeOut(**SettingsOut.of(change.after).model_dump(), moved=change.moved, kept=change.kept)


class ThreadOut(BaseModel):
    id: int
    what: str
    happens_at: datetime
    timezone: str
    asked: bool = Field(description="the follow-up was sent and waits for the user's answer")


class FollowupsOut(BaseModel):
    on: bool = Field(description="follow-ups are on (off until the user turns them on)")
    quiet_hours: str = Field(description="local hours with no follow-up, from-until, e.g. 22-9")
    threads: list[ThreadOut]

    @classmethod
    def of(cls, state: FollowupSettings) -> FollowupsOut:
        return cls(on=state.on, quiet_hours=state.quiet_hours,
                   threads=[ThreadOut(id=t.id, what=t.what, happens_at=t.happens_at, timezone=t.timezone,
                                      asked=t.asked) for t in state.threads])


@router.get("/settings/followups", response_model=FollowupsOut)
def followups(request: Request, caller: Caller) -> FollowupsOut:
    """The caller's follow-ups: on or off, quiet hours, and what Mnemo will ask about."""
    return FollowupsOut.of(context(request).panel.followups(caller.user_id))


@router.put("/settings/followups", response_model=FollowupsOut)
def set_followups(request: Request, caller: Caller, body: FollowupsIn) -> FollowupsOut:
    """Turn follow-ups on or off and set the quiet hours, as ``/followups`` does; 422 ``followups_quiet_hours``
    for quiet hours that are not two hours of the day."""
    return FollowupsOut.of(context(request).panel.followups(caller.user_id, on=body.on, quiet_hours=body.quiet_hours))
