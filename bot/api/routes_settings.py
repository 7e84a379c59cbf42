"""The caller's settings: their time zone, which reminders, "today" and every time shown to them use."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field

from bot.api.auth import Principal, context, principal
from bot.api.json_body import CheckedJsonRoute
from bot.api.schemas import ErrorOut, ZoneIn
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
