"""The seed's memory API: long-term memories, working memory and reminders of the caller."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, Query, Request, UploadFile
from fastapi.responses import Response as PlainResponse

from bot.api.auth import Principal, adding_principal, context, principal
from bot.api.json_body import CheckedJsonRoute
from bot.api.schemas import (
    BatchDelete,
    BatchDeleted,
    Deleted,
    ErrorOut,
    ImportOut,
    MemoryCreate,
    MemoryOut,
    MemoryPageOut,
    MemoryType,
    MemoryUpdate,
    ReminderList,
    ReminderOut,
    TurnOut,
    WorkingMemoryList,
    WorkingMemoryOut,
)
from shared.accounts.user_data import MAX_IMPORT_BYTES
from shared.commands.editing import WorkingMemory
from shared.errors import NotFound

ERRORS: dict[int | str, dict[str, Any]] = {status: {"model": ErrorOut} for status in (401, 403, 404, 422)}
Caller = Annotated[Principal, Depends(principal)]
Adder = Annotated[Principal, Depends(adding_principal)]
"""The caller of what adds or costs: a blocked user's panel session is refused."""
MAX_OFFSET = 10**9

router = APIRouter(prefix="/api/v1", responses=ERRORS, route_class=CheckedJsonRoute)


@router.get("/memory/long-term", response_model=MemoryPageOut, tags=["memories"])
def list_memories(request: Request, caller: Caller, limit: Annotated[int, Query(ge=1, le=100)] = 20,
                  offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
                  type: Annotated[MemoryType | None, Query(description="only this type")] = None,
                  q: Annotated[str | None, Query(max_length=200, description="words the content contains")] = None,
                  ) -> MemoryPageOut:
    """A page of the caller's active memories, newest first, with the total that match."""
    listing = context(request).panel.list_memories(caller.user_id, type_=type, search=q, limit=limit, offset=offset)
    return MemoryPageOut(items=[MemoryOut(**asdict(item)) for item in listing.items], total=listing.total,
                         limit=listing.limit, offset=listing.offset)


@router.get("/memory/forgotten", response_model=MemoryPageOut, tags=["memories"])
def list_forgotten(request: Request, caller: Caller, limit: Annotated[int, Query(ge=1, le=100)] = 20,
                   offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0) -> MemoryPageOut:
    """The caller's recycle bin: memories the rules set aside after 90 days unused, purged 30 days later."""
    listing = context(request).panel.list_forgotten(caller.user_id, limit=limit, offset=offset)
    return MemoryPageOut(items=[MemoryOut(**asdict(item)) for item in listing.items], total=listing.total,
                         limit=listing.limit, offset=listing.offset)


@router.post("/memory/forgotten/{memory_id}/restore", response_model=MemoryOut, tags=["memories"])
def restore_memory(request: Request, caller: Caller, memory_id: int) -> MemoryOut:
    """Bring a memory back from the recycle bin, with its history; 404 when it is not in the caller's bin."""
    return MemoryOut(**asdict(context(request).panel.restore_memory(caller.user_id, memory_id)))


@router.post("/memory/long-term", response_model=MemoryOut, status_code=201, tags=["memories"])
def create_memory(request: Request, caller: Adder, body: MemoryCreate) -> MemoryOut:
    """Add a memory by hand (``source`` user_stated)."""
    return MemoryOut(**asdict(context(request).panel.create_memory(caller.user_id, body.draft())))


@router.get("/memory/long-term/export", tags=["memories"],
            responses={200: {"content": {"application/json": {}}, "description": "the export file"}})
def export_memories(request: Request, caller: Caller) -> PlainResponse:
    """Everything Mnemo keeps about the caller, as the `/export` JSON file."""
    export = context(request).panel.export_data(caller.user_id)
    return PlainResponse(export.data, media_type="application/json",
                         headers={"Content-Disposition": f'attachment; filename="{export.filename}"'})


@router.post("/memory/long-term/import", response_model=ImportOut, tags=["memories"])
def import_memories(request: Request, caller: Adder,
                    file: Annotated[UploadFile, File(description="an export file")]) -> ImportOut:
    """Load an export file: what was imported, what was refused and why."""
    data = file.file.read(MAX_IMPORT_BYTES + 1)
    report = context(request).panel.import_data(caller.user_id, data)
    return ImportOut(imported=report.imported, refused=list(report.refused), duplicates=report.duplicates,
                     missed=report.missed)


@router.post("/memory/long-term/batch-delete", response_model=BatchDeleted, tags=["memories"])
def batch_delete(request: Request, caller: Caller, body: BatchDelete) -> BatchDeleted:
    """Forget several memories; ids that are not the caller's memories come back in ``not_found``."""
    deleted, missing = context(request).panel.forget(caller.user_id, body.ids)
    return BatchDeleted(deleted=deleted, not_found=missing)


@router.get("/memory/long-term/{memory_id}", response_model=MemoryOut, tags=["memories"])
def get_memory(request: Request, caller: Caller, memory_id: int) -> MemoryOut:
    return MemoryOut(**asdict(context(request).panel.get_memory(caller.user_id, memory_id)))


@router.put("/memory/long-term/{memory_id}", response_model=MemoryOut, tags=["memories"])
def update_memory(request: Request, caller: Adder, memory_id: int, body: MemoryUpdate) -> MemoryOut:
    """Change the fields sent (content, key, value, type, confidence)."""
    return MemoryOut(**asdict(context(request).panel.update_memory(caller.user_id, memory_id, body.draft())))


@router.delete("/memory/long-term/{memory_id}", response_model=Deleted, tags=["memories"])
def delete_memory(request: Request, caller: Caller, memory_id: int) -> Deleted:
    """Forget one memory and its earlier versions."""
    deleted, _ = context(request).panel.forget(caller.user_id, [memory_id])
    if not deleted:
        raise NotFound("memory_not_found")
    return Deleted(deleted=1)


@router.delete("/memory/long-term", response_model=Deleted, tags=["memories"])
def delete_all(request: Request, caller: Caller) -> Deleted:
    """Forget every long-term memory of the caller; working memory stays until the session ends."""
    return Deleted(deleted=context(request).panel.forget_all(caller.user_id))


@router.get("/memory/working", response_model=WorkingMemoryList, tags=["working memory"])
def working_memories(request: Request, caller: Caller) -> WorkingMemoryList:
    """The caller's open conversation sessions."""
    return WorkingMemoryList(items=[_working(w) for w in context(request).panel.working_memories(caller.user_id)])


@router.get("/memory/working/{session_id}", response_model=WorkingMemoryOut, tags=["working memory"])
def working_memory(request: Request, caller: Caller, session_id: int) -> WorkingMemoryOut:
    """The working memory of one of the caller's sessions; 404 when there is none."""
    return _working(context(request).panel.working_memory(caller.user_id, session_id))


@router.get("/reminders", response_model=ReminderList, tags=["reminders"])
def reminders(request: Request, caller: Caller) -> ReminderList:
    """The caller's pending reminders."""
    return ReminderList(items=[ReminderOut(**asdict(r)) for r in context(request).panel.reminders(caller.user_id)])


@router.post("/reminders/{reminder_id}/cancel", response_model=ReminderOut, tags=["reminders"])
def cancel_reminder(request: Request, caller: Caller, reminder_id: int) -> ReminderOut:
    return ReminderOut(**asdict(context(request).panel.cancel_reminder(caller.user_id, reminder_id)))


def _working(memory: WorkingMemory) -> WorkingMemoryOut:
    fields = asdict(memory)
    fields["recent_turns"] = [TurnOut(role=role, text=text, at=at) for role, text, at in memory.recent_turns]
    return WorkingMemoryOut(**fields)
