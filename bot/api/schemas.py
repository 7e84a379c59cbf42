"""The API's request and response bodies (they are the OpenAPI document's schemas).

Request bodies are :class:`Strict`: no unknown fields, and no conversion between JSON types (``true``
is not the id 1, ``"0.5"`` is not a confidence); a wrong type is a 422 like any malformed request.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.commands.editing import MAX_BATCH_IDS, UNSET, MemoryDraft
from shared.db.kinds import MEMORY_TYPES
from shared.memory.policy import MAX_LABEL_CHARS, MAX_MEMORY_CHARS
from shared.reminders.zones import MAX_ZONE_CHARS

MemoryType = Literal[MEMORY_TYPES]  # type: ignore[valid-type]
Id = Field(ge=1, le=2**63 - 1)


class Strict(BaseModel):
    """A request body: only its own fields, each of exactly its JSON type (an integer is a number too)."""

    model_config = ConfigDict(extra="forbid", strict=True)


class KeyLabelOut(BaseModel):
    """A memory's key as a person reads it, in each language of the panel ("likes · 吃火锅", "喜欢：吃火锅")."""

    en: str
    zh: str


class MemoryOut(BaseModel):
    id: int
    type: str
    key: str | None
    key_label: KeyLabelOut | None = None
    subject: str | None
    content: str
    value: Any = None
    confidence: float
    access_count: int
    source: str
    created_at: datetime
    updated_at: datetime
    last_accessed: datetime | None


class MemoryPageOut(BaseModel):
    items: list[MemoryOut]
    total: int
    limit: int
    offset: int


class MemoryCreate(Strict):
    content: str = Field(min_length=1, max_length=MAX_MEMORY_CHARS)
    type: MemoryType = "fact"
    key: str | None = Field(None, max_length=MAX_LABEL_CHARS)
    value: Any = None
    confidence: float = Field(1.0, ge=0, le=1)

    def draft(self) -> MemoryDraft:
        return MemoryDraft(content=self.content, type=self.type, key=self.key, value=self.value,
                           confidence=self.confidence)


class MemoryUpdate(Strict):
    """Only the fields sent are changed; ``key: null`` removes the key."""

    content: str | None = Field(None, min_length=1, max_length=MAX_MEMORY_CHARS)
    type: MemoryType | None = None
    key: str | None = Field(None, max_length=MAX_LABEL_CHARS)
    value: Any = None
    confidence: float | None = Field(None, ge=0, le=1)

    def draft(self) -> MemoryDraft:
        sent = self.model_fields_set
        values = {name: getattr(self, name) if name in sent else UNSET
                  for name in ("content", "type", "key", "value", "confidence")}
        for name in ("content", "type", "confidence"):  # these cannot be emptied
            if values[name] is None:
                values[name] = UNSET
        return MemoryDraft(**values)


class BatchDelete(Strict):
    ids: list[Annotated[int, Id]] = Field(min_length=1, max_length=MAX_BATCH_IDS)


class Deleted(BaseModel):
    deleted: int


class BatchDeleted(BaseModel):
    deleted: list[int]
    not_found: list[int]


class ImportOut(BaseModel):
    imported: dict[str, int]
    refused: list[str]
    duplicates: int
    missed: int = 0
    """Pending reminders long past due, imported as missed (cancelled) and never sent."""


class RoundOut(BaseModel):
    """A round of conversation: what the user said (``line``), when, and the bot's reply to it."""

    id: int
    said_at: datetime
    line: str
    reply: str | None
    recalled: bool = Field(description="false for a round said while remembering was paused: never recalled")


class RoundPageOut(BaseModel):
    items: list[RoundOut]
    total: int
    limit: int
    offset: int


class TurnOut(BaseModel):
    role: str
    text: str
    at: datetime


class WorkingMemoryOut(BaseModel):
    session_id: int
    chat_id: int
    current_topic: str | None
    context_variables: dict[str, Any]
    turn_count: int
    last_emotion: dict[str, Any] | None
    next_strategy: dict[str, Any] | None
    recent_turns: list[TurnOut]
    created_at: datetime
    updated_at: datetime
    closed_at: datetime | None


class WorkingMemoryList(BaseModel):
    items: list[WorkingMemoryOut]


class ReminderOut(BaseModel):
    id: int
    content: str
    due_at: datetime = Field(description="when it pings, on the clock of its time zone")
    timezone: str
    status: str
    kind: Literal["reminder", "deadline"] = "reminder"
    deadline: datetime | None = Field(None, description="a deadline's due time (it pings ahead of it)")


class ReminderList(BaseModel):
    items: list[ReminderOut]


class SessionOut(BaseModel):
    user_id: int
    display_name: str | None
    locale: str | None
    csrf_token: str | None
    expires_at: datetime | None
    admin: bool


class Problem(BaseModel):
    where: str
    problem: str


class ErrorOut(BaseModel):
    code: str
    detail: str
    problems: list[Problem] | None = Field(None, description="what is wrong with a malformed request (422)")


class ZoneIn(Strict):
    timezone: str | None = Field(max_length=MAX_ZONE_CHARS, description="an IANA name, a city or country, an "
                                 "offset (UTC+8, -05:30); null or \"default\": the bot's default")


class FollowupsIn(Strict):
    on: bool | None = Field(default=None, description="turn follow-ups on (true) or off (false); null: unchanged")
    quiet_hours: str | None = Field(default=None, max_length=16,
                                    description="local hours with no follow-up, from-until, e.g. 22-9; null: unchanged")
