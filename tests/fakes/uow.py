"""An in-memory unit of work, so services are unit-tested without PostgreSQL (cosmicpython's FakeUnitOfWork).

Rows are the real ORM entities (``Todo``, ``Memory``, ``User``, …), never attached to a session.
:class:`FakeDatabase` holds the committed rows; each :class:`FakeUnitOfWork` works on its own copy of
them, and ``commit()`` writes back only the rows it inserted, changed or deleted, so an unfinished
block leaves nothing behind and one that commits does not undo another's commit. Like PostgreSQL:
ids come from per-table sequences that a rollback does not rewind; an insert fills the columns'
server defaults (read from the models, so a new default is picked up or refused loudly); a delete
follows the foreign keys' ``ON DELETE`` rules. Unlike it: no locks (one thread), no unique or
foreign-key checks on insert, ids known at once (no flush needed), ``search_tokens`` not computed.

Only the repository methods the unit tests' services call are here, with the real names, parameters
and user scoping; ``tests/integration/test_fake_uow_parity.py`` holds them to the real ones.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, date, datetime, timedelta
from functools import cache
from typing import Any

from sqlalchemy import inspect as orm_inspect
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm.instrumentation import manager_of_class
from sqlalchemy.sql.elements import TextClause
from sqlalchemy.sql.functions import now as sql_now

from shared import log_context
from shared.db.memory_models import Memory, MemoryEvent, OutboxJob, Todo
from shared.db.models import Base, Chat, ConversationSession, ConversationTurn, Identity, User
from shared.db.thread_models import OpenThread
from shared.db.token_models import OneTimeToken
from shared.db.usage_models import (
    MESSAGE_KIND,
    NO_CHAT,
    SUMMED,
    UsageCall,
    UsageDay,
    UsageTotals,
    sums_by_kind,
    usage_day,
)
from shared.db.web_session_models import WebSession
from shared.repositories.accounts import LEARNT_FROM_THE_USER
from shared.repositories.conversation import UnansweredTurn
from shared.repositories.reminders import CLAIM_LEASE, CLAIMS_PER_USER, MAX_ERROR_CHARS
from shared.repositories.round_records import RoundRecord
from shared.search.tsquery import MAX_LIKE_CHARS
from shared.text import clean_text

Table = dict[Any, Base]
_MODELS = {mapper.local_table: mapper.class_ for mapper in Base.registry.mappers}


def _key(row: Base) -> Any:
    """The row's primary key: its value, or a tuple of them for a key of several columns."""
    values = tuple(getattr(row, column.key) for column in orm_inspect(type(row)).primary_key)
    return values[0] if len(values) == 1 else values


@cache
def _columns(model: type[Base]) -> tuple[str, ...]:
    return tuple(attr.key for attr in orm_inspect(model).column_attrs)


def _values(row: Base) -> dict[str, Any]:
    """The row's column values (read from ``__dict__``: a deferred column is never loaded)."""
    state = row.__dict__
    return {name: state.get(name) for name in _columns(type(row))}


def _copy(row: Base) -> Base:
    """A detached copy, as a fresh load would give it: JSON values go through JSON (as to JSONB and back)."""
    clone = manager_of_class(type(row)).new_instance()
    clone.__dict__.update({name: json.loads(json.dumps(value)) if isinstance(value, dict | list) else value
                           for name, value in _values(row).items()})
    return clone


def _server_default(column: Any, now: datetime) -> Any:
    """What PostgreSQL puts in ``column`` when an insert leaves it out."""
    arg = column.server_default.arg
    if isinstance(arg, sql_now):
        return now
    sql = arg.text if isinstance(arg, TextClause) else str(arg)
    if sql.startswith("'") and sql.endswith("'"):
        literal = sql[1:-1].replace("''", "'")
        return json.loads(literal) if isinstance(column.type, JSONB) else literal
    if sql in ("true", "false"):
        return sql == "true"
    try:
        return float(sql) if "." in sql else int(sql)
    except ValueError:
        raise NotImplementedError(f"teach the fake the server default {sql!r} of {column}") from None


@cache
def _references(model: type[Base]) -> list[tuple[type[Base], str, str | None]]:
    """(model, attribute, ON DELETE rule) of every column that points at ``model``'s rows."""
    return [(_MODELS[fk.parent.table], fk.parent.key, fk.ondelete)
            for table in _MODELS for column in table.columns for fk in column.foreign_keys
            if fk.column.table is model.__table__]


class FakeDatabase:
    """The committed rows, by model and primary key; ``unit_of_work`` is a ``uow_factory``."""

    def __init__(self, clock: Callable[[], datetime] | None = None) -> None:
        self.clock = clock or (lambda: datetime.now(UTC))
        """What ``now()`` says when a server default needs it."""
        self.tables: dict[type[Base], Table] = {}
        self._sequences: dict[type[Base], itertools.count] = {}

    def unit_of_work(self) -> FakeUnitOfWork:
        return FakeUnitOfWork(self)

    def rows(self, model: type[Base]) -> list[Base]:
        """Copies of the committed rows of ``model`` in key order (for a test's assertions)."""
        table = self.tables.get(model, {})
        return [_copy(table[key]) for key in sorted(table)]

    def dump(self) -> dict[str, list[dict[str, Any]]]:
        """Every committed row's values by table: equal dumps mean nothing was changed."""
        return {model.__tablename__: [_values(rows[key]) for key in sorted(rows)]
                for model, rows in self.tables.items() if rows}

    def next_id(self, model: type[Base]) -> int:
        return next(self._sequences.setdefault(model, itertools.count(1)))

    def write(self, seen: dict[type[Base], dict[Any, dict]], working: dict[type[Base], Table]) -> None:
        """Apply what a unit of work inserted, changed and deleted since it saw ``seen``."""
        for model, rows in working.items():
            committed, before = self.tables.setdefault(model, {}), seen.get(model, {})
            for key, row in rows.items():
                if before.get(key) != _values(row):
                    committed[key] = _copy(row)
            for key in before.keys() - rows.keys():
                committed.pop(key, None)


class FakeUnitOfWork:
    """``with FakeUnitOfWork(database) as uow: …; uow.commit()``; nothing is kept without ``commit()``."""

    def __init__(self, database: FakeDatabase) -> None:
        self.database = database

    def __enter__(self) -> FakeUnitOfWork:
        self._rows = _Transaction(self.database)
        self.users = FakeUserRepository(self._rows)
        self.chats = FakeChatRepository(self._rows)
        self.sessions = FakeSessionRepository(self._rows)
        self.turns = FakeTurnRepository(self._rows)
        self.round_records = FakeRoundRecordRepository(self._rows)
        self.memories = FakeMemoryRepository(self._rows)
        self.events = FakeMemoryEventRepository(self._rows)
        self.todos = FakeTodoRepository(self._rows)
        self.threads = FakeThreadRepository(self._rows)
        self.outbox = FakeOutboxRepository(self._rows)
        self.tokens = FakeOneTimeTokenRepository(self._rows)
        self.web_sessions = FakeWebSessionRepository(self._rows)
        self.accounts = FakeAccountDataRepository(self._rows)
        self.usage = FakeUsageRepository(self._rows)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._rows.rollback()

    def commit(self) -> None:
        self._rows.commit()

    def rollback(self) -> None:
        self._rows.rollback()

    def flush(self) -> None:
        """Ids and defaults are given on insert already."""

    def forget_loaded(self, *rows: object) -> None:
        """Rows here are the stored objects, so they never go stale."""

    def ping(self) -> None:
        """The fake is always there."""


class _Transaction:
    """One unit of work's copy of the tables, and the row operations its repositories share.

    A table is copied when first used, so a unit of work sees another's commit only in tables it had
    not read yet (PostgreSQL's READ COMMITTED would see it at its next statement)."""

    def __init__(self, database: FakeDatabase) -> None:
        self.database = database
        self.rollback()

    def commit(self) -> None:
        self.database.write(self._seen, self._working)
        self._seen = {model: {key: _values(row) for key, row in rows.items()} for model, rows in self._working.items()}

    def rollback(self) -> None:
        self._working: dict[type[Base], Table] = {}
        self._seen: dict[type[Base], dict[Any, dict]] = {}

    def table(self, model: type[Base]) -> Table:
        """This unit of work's rows of ``model``, by key."""
        if model not in self._working:
            committed = self.database.tables.get(model, {})
            self._working[model] = {key: _copy(row) for key, row in committed.items()}
            self._seen[model] = {key: _values(row) for key, row in committed.items()}
        return self._working[model]

    def insert(self, row: Base) -> Base:
        """Store ``row`` as an INSERT would: a key from the sequence and the server defaults filled."""
        now = self.database.clock()
        mapper = orm_inspect(type(row))
        for attr in mapper.column_attrs:
            column = attr.columns[0]
            if getattr(row, attr.key) is not None or column.computed is not None:
                continue
            if column.primary_key and column.autoincrement in (True, "auto") and len(mapper.primary_key) == 1:
                setattr(row, attr.key, self.database.next_id(type(row)))
            elif column.server_default is not None:
                setattr(row, attr.key, _server_default(column, now))
        self.table(type(row))[_key(row)] = row
        return row

    def delete(self, model: type[Base], keys: Iterable[Any]) -> list[Any]:
        """Delete rows as DELETE would, following ``ON DELETE`` of the columns that point at them."""
        table = self.table(model)
        gone = sorted(key for key in set(keys) if table.pop(key, None) is not None)
        if gone:
            for referring, name, rule in _references(model):
                hit = [row for row in self.table(referring).values() if getattr(row, name) in gone]
                if hit and rule == "CASCADE":
                    self.delete(referring, [_key(row) for row in hit])
                elif hit and rule == "SET NULL":
                    for row in hit:
                        setattr(row, name, None)
                elif hit:
                    raise ValueError(f"{model.__tablename__} {gone} still referred to by {referring.__tablename__}")
        return gone

    def select(self, model: type[Base], *, order: Callable[[Any], Any] | None = None, **equal: object) -> list:
        """Rows of ``model`` whose columns equal ``equal``, in ``order`` (default: by key)."""
        rows = [row for row in self.table(model).values() if all(getattr(row, k) == v for k, v in equal.items())]
        return sorted(rows, key=order or _key)


class _Repository:
    def __init__(self, rows: _Transaction) -> None:
        self._rows = rows


class FakeUserRepository(_Repository):
    def identify(self, platform: str, platform_user_id: str, *, display_name: str | None = None,
                 locale: str | None = None, timezone: str | None = None) -> Identity:
        identity = self.identity(platform, platform_user_id)
        if identity is None:
            user = self._rows.insert(User())
            identity = self._rows.insert(Identity(user_id=user.id, platform=platform,
                                                 platform_user_id=str(platform_user_id)))
        if display_name is not None:
            identity.display_name = clean_text(display_name, 200)
        if locale is not None:
            identity.locale = locale[:16]
        if timezone is not None:
            self.set_timezone(identity.user_id, timezone)
        return identity

    def identity(self, platform: str, platform_user_id: str) -> Identity | None:
        found = self._rows.select(Identity, platform=platform, platform_user_id=str(platform_user_id))
        return found[0] if found else None

    def get(self, user_id: int) -> User | None:
        return self._rows.table(User).get(user_id)

    def identity_on(self, user_id: int, platform: str) -> Identity | None:
        found = self._rows.select(Identity, user_id=user_id, platform=platform)
        return found[0] if found else None

    def set_paused(self, user_id: int, paused_at: datetime | None) -> None:
        user = self.get(user_id)
        if user is not None:
            user.paused_at = paused_at

    def set_timezone(self, user_id: int, timezone: str | None) -> None:
        user = self.get(user_id)
        if user is not None:
            user.timezone = timezone[:64] if timezone else None

    def mark_zone_told(self, user_id: int, now: datetime) -> bool:
        user = self.get(user_id)
        if user is None or user.zone_told_at is not None:
            return False
        user.zone_told_at = now
        return True

    def set_quota_lifted(self, user_id: int, lifted_at: datetime | None) -> bool:
        user = self.get(user_id)
        if user is not None:
            user.quota_lifted_at = lifted_at
        return user is not None


class FakeChatRepository(_Repository):
    def get_or_create(self, platform: str, platform_chat_id: str, kind: str, title: str | None = None) -> Chat:
        found = self._rows.select(Chat, platform=platform, platform_chat_id=str(platform_chat_id))
        chat = found[0] if found else self._rows.insert(
            Chat(platform=platform, platform_chat_id=str(platform_chat_id), kind=kind))
        if title is not None:
            chat.title = clean_text(title, 200)
        return chat

    def get(self, chat_id: int) -> Chat | None:
        return self._rows.table(Chat).get(chat_id)

    def lock_by_platform_ids(self, platform: str, platform_chat_ids: list[str]) -> dict[str, Chat]:
        return {chat.platform_chat_id: chat for chat in self._rows.select(Chat, platform=platform)
                if chat.platform_chat_id in platform_chat_ids}


class FakeSessionRepository(_Repository):
    def start(self, user_id: int, chat_id: int, now: datetime) -> ConversationSession:
        found = [row for row in self._rows.select(ConversationSession, user_id=user_id, chat_id=chat_id)
                 if row.closed_at is None]
        return found[0] if found else self._rows.insert(
            ConversationSession(user_id=user_id, chat_id=chat_id, created_at=now, updated_at=now, turn_count=0))

    def close(self, session_id: int, now: datetime) -> bool:
        session = self._rows.table(ConversationSession).get(session_id)
        if session is None or session.closed_at is not None:
            return False
        session.closed_at = now
        return True


class FakeTurnRepository(_Repository):
    def add(self, turn: ConversationTurn) -> ConversationTurn:
        turn.text = clean_text(turn.text)
        return self._rows.insert(turn)

    def unanswered(self, platform: str, since: datetime, limit: int, *,
                   platform_user_id: str | None = None) -> list[UnansweredTurn]:
        last: dict[int, ConversationTurn] = {}
        for turn in self._rows.select(ConversationTurn):
            if turn.session_id is not None:
                last[turn.session_id] = turn
        found = []
        for session_id, turn in sorted(last.items(), key=lambda item: item[1].id):
            session, chat = self._rows.table(ConversationSession)[session_id], self._rows.table(Chat)[turn.chat_id]
            speakers = self._rows.select(Identity, user_id=turn.user_id, platform=chat.platform)
            if (session.closed_at is None and session.updated_at >= since and chat.platform == platform
                    and turn.role == "user" and turn.platform_message_id is not None and speakers
                    and platform_user_id in (None, speakers[0].platform_user_id)):
                found.append(UnansweredTurn(turn, chat, speakers[0]))
        return found[:limit]


class FakeRoundRecordRepository(_Repository):
    def page(self, user_id: int, *, search: str | None = None, limit: int = 20,
             offset: int = 0) -> tuple[list[RoundRecord], int]:
        """Newest first; ``search`` as ILIKE '%search%' over the line or the reply."""
        needle = clean_text(search)[:MAX_LIKE_CHARS].lower() if search else None
        found = []
        for line in self._rows.select(ConversationTurn, user_id=user_id, role="user"):
            reply = self._reply(line)
            text = reply.text if reply is not None else None
            if needle is None or needle in line.text.lower() or (text is not None and needle in text.lower()):
                found.append(RoundRecord(line.id, line.created_at, line.text, text, not line.paused))
        found.sort(key=lambda r: r.turn_id, reverse=True)
        return found[offset:offset + limit], len(found)

    def forget(self, user_id: int, turn_ids: Sequence[int]) -> list[int]:
        lines = [t for t in self._rows.select(ConversationTurn, user_id=user_id, role="user") if t.id in turn_ids]
        replies = [r.id for line in lines for r in self._rows.select(ConversationTurn, user_id=user_id,
                                                                     reply_to_turn_id=line.id)]
        self._rows.delete(ConversationTurn, [line.id for line in lines] + replies)
        return sorted(line.id for line in lines)

    def _reply(self, line: ConversationTurn) -> ConversationTurn | None:
        replies = self._rows.select(ConversationTurn, user_id=line.user_id, role="assistant",
                                    reply_to_turn_id=line.id)
        return replies[0] if replies else None


def _active(memory: Memory) -> bool:
    return memory.deleted_at is None and memory.superseded_by is None


class FakeMemoryRepository(_Repository):
    def add(self, memory: Memory) -> Memory:
        memory.content = clean_text(memory.content)
        return self._rows.insert(memory)

    def get(self, user_id: int, memory_id: int, *, include_inactive: bool = False,
            lock: bool = False) -> Memory | None:
        memory = self._rows.table(Memory).get(memory_id)
        ok = memory is not None and memory.user_id == user_id and (include_inactive or _active(memory))
        return memory if ok else None

    def page(self, user_id: int, *, type_: str | None = None, search: str | None = None,
             limit: int = 10, offset: int = 0) -> tuple[list[Memory], int]:
        """Newest first; ``search`` as ILIKE '%search%' (case-insensitive substring of the content)."""
        needle = clean_text(search)[:MAX_LIKE_CHARS].lower() if search else None
        rows = [m for m in self._active(user_id) if (type_ is None or m.type == type_)
                and (needle is None or needle in m.content.lower())]
        rows.sort(key=lambda m: m.id, reverse=True)
        return rows[offset:offset + limit], len(rows)

    def purge(self, user_id: int, memory_ids: Sequence[int] | None = None) -> list[int]:
        mine = self._rows.select(Memory, user_id=user_id)
        return self._rows.delete(Memory, [m.id for m in mine if memory_ids is None or m.id in memory_ids])

    def count_active(self, user_id: int) -> int:
        return len(self._active(user_id))

    def active_with_content(self, user_id: int, type_: str, content: str) -> Memory | None:
        found = [m for m in self._active(user_id) if m.type == type_ and m.content == content]
        return found[0] if found else None

    def with_earlier_versions(self, user_id: int, memory_ids: Sequence[int]) -> list[int]:
        mine = self._rows.select(Memory, user_id=user_id)
        chain = {m.id for m in mine if m.id in memory_ids}
        while grown := {m.id for m in mine if m.superseded_by in chain} - chain:
            chain |= grown
        return sorted(chain)

    def _active(self, user_id: int) -> list[Memory]:
        return [m for m in self._rows.select(Memory, user_id=user_id) if _active(m)]


class FakeMemoryEventRepository(_Repository):
    def record(self, user_id: int, memory_id: int | None, action: str, actor: str, *,
               before: dict[str, Any] | None = None, after: dict[str, Any] | None = None,
               reason: str | None = None) -> MemoryEvent:
        return self._rows.insert(MemoryEvent(user_id=user_id, memory_id=memory_id, action=action, actor=actor,
                                            before=before, after=after, reason=reason))

    def tombstone(self, user_id: int, memory_ids: Sequence[int] | None, reason: str) -> None:
        for event in self._rows.select(MemoryEvent, user_id=user_id):
            if memory_ids is None or event.memory_id in memory_ids:
                event.before, event.after, event.reason = None, None, reason

    def record_forgotten(self, user_id: int, memory_ids: Sequence[int], actor: str, reason: str) -> None:
        for memory_id in memory_ids:
            self.record(user_id, memory_id, "forget", actor, reason=reason)


class FakeTodoRepository(_Repository):
    def add(self, todo: Todo) -> Todo:
        todo.content = clean_text(todo.content, 2000)
        return self._rows.insert(todo)

    def get(self, user_id: int, todo_id: int) -> Todo | None:
        todo = self._rows.table(Todo).get(todo_id)
        return todo if todo is not None and todo.user_id == user_id else None

    def for_user(self, user_id: int, statuses: tuple[str, ...] = ("pending",)) -> list[Todo]:
        return [t for t in self._rows.select(Todo, user_id=user_id, order=lambda t: (t.remind_at, t.id))
                if t.status in statuses]

    def hold_pending_count(self, user_id: int) -> None:
        """One fake unit of work runs at a time: nothing to hold."""

    def count_pending(self, user_id: int) -> int:
        return len(self._rows.select(Todo, user_id=user_id, status="pending"))

    def claim_due(self, now: datetime, limit: int = 100, lease: timedelta = CLAIM_LEASE,
                  per_user: int = CLAIMS_PER_USER) -> list[Todo]:
        due, taken = [], Counter()
        for todo in self._rows.select(Todo, status="pending", order=lambda t: (t.remind_at, t.id)):
            if todo.remind_at <= now and (todo.claimed_until is None or todo.claimed_until < now):
                taken[todo.user_id] += 1
                if taken[todo.user_id] <= per_user:
                    due.append(todo)
        due = due[:limit]
        for todo in due:
            todo.claimed_until, todo.attempts = now + lease, todo.attempts + 1
        return due

    def lock_for_delivery(self, todo_id: int) -> Todo | None:
        return self._rows.table(Todo).get(todo_id)

    def sent_on_platform(self, user_id: int, platform: str, since: datetime, until: datetime) -> list[Todo]:
        chats = {chat.id for chat in self._rows.select(Chat, platform=platform)}
        return [t for t in self._rows.select(Todo, user_id=user_id, status="sent", order=lambda t: (t.sent_at, t.id))
                if since < t.sent_at <= until and t.chat_id in chats]

    def mark_sent(self, user_id: int, todo_id: int, attempt: int, now: datetime) -> bool:
        return self._update_claimed(user_id, todo_id, attempt, status="sent", sent_at=now, claimed_until=None,
                                    updated_at=now)

    def cancel_refused(self, user_id: int, todo_id: int, attempt: int, reason: str, now: datetime) -> bool:
        return self._update_claimed(user_id, todo_id, attempt, status="cancelled", claimed_until=None,
                                    last_error=f"refused: {reason}"[:MAX_ERROR_CHARS], updated_at=now)

    def note_failure(self, user_id: int, todo_id: int, attempt: int, error: str, now: datetime, *,
                     hold_until: datetime | None = None) -> bool:
        values: dict[str, object] = {"last_error": error[:MAX_ERROR_CHARS], "updated_at": now}
        todo = self.get(user_id, todo_id)
        if hold_until is not None and todo is not None:  # GREATEST ignores NULL
            values["claimed_until"] = max(hold_until, todo.claimed_until or hold_until)
        return self._update_claimed(user_id, todo_id, attempt, **values)

    def delete_for_user(self, user_id: int) -> int:
        return len(self._rows.delete(Todo, [t.id for t in self._rows.select(Todo, user_id=user_id)]))

    def move_pending_to_chat(self, from_chat_id: int, to_chat_id: int) -> None:
        for todo in self._rows.select(Todo, chat_id=from_chat_id, status="pending"):
            todo.chat_id = to_chat_id

    def _update_claimed(self, user_id: int, todo_id: int, attempt: int, **values: object) -> bool:
        todo = self.get(user_id, todo_id)
        if todo is None or todo.status != "pending" or todo.attempts != attempt:
            return False
        for name, value in values.items():
            setattr(todo, name, value)
        return True


class FakeThreadRepository(_Repository):
    """The hot path's and the commands' part of the threads repository (the scan's claim needs PostgreSQL)."""

    def add(self, thread: OpenThread) -> OpenThread:
        thread.what = clean_text(thread.what, 300).strip()
        return self._rows.insert(thread)

    def open_of(self, user_id: int) -> list[OpenThread]:
        return self._rows.select(OpenThread, user_id=user_id, status="open", order=lambda t: (t.happens_at, t.id))

    def listed(self, user_id: int, limit: int) -> list[OpenThread]:
        rows = [t for t in self._rows.select(OpenThread, user_id=user_id) if t.status in ("open", "asked")]
        return sorted(rows, key=lambda t: (t.status != "open", t.happens_at, t.id))[:limit]

    def close(self, user_id: int, thread_id: int, reason: str, now: datetime) -> bool:
        thread = self._rows.table(OpenThread).get(thread_id)
        if thread is None or thread.user_id != user_id or thread.status != "open":
            return False
        thread.status, thread.closed_reason, thread.claimed_until, thread.updated_at = "closed", reason, None, now
        return True

    def answer_in_chat(self, user_id: int, chat_id: int, turn_id: int, now: datetime) -> int:
        asked = [t for t in self._rows.select(OpenThread, user_id=user_id, chat_id=chat_id, status="asked")
                 if (t.followup_turn_id is not None and t.followup_turn_id < turn_id)
                 or (t.followup_turn_id is None and t.asked_at is not None and t.asked_at <= now)]
        for thread in asked:
            thread.status, thread.answered_at, thread.updated_at = "answered", now, now
        return len(asked)

    def counts_since(self, user_id: int, since: datetime) -> tuple[int, int]:
        rows = self._rows.select(OpenThread, user_id=user_id)
        return (sum(1 for t in rows if t.asked_at is not None and t.asked_at >= since
                    and t.status in ("asked", "answered")),
                sum(1 for t in rows if t.answered_at is not None and t.answered_at >= since))


class FakeOutboxRepository(_Repository):
    def add(self, task: str, payload: dict[str, Any], *, dedup_key: str | None = None,
            user_id: int | None = None, available_at: datetime | None = None) -> int | None:
        if dedup_key is not None and self._rows.select(OutboxJob, dedup_key=dedup_key):
            return None
        job = OutboxJob(task=task, payload=payload, dedup_key=dedup_key, user_id=user_id,
                        available_at=available_at, log_context=log_context.carried() or None)
        return self._rows.insert(job).id

    def user_of(self, job_id: int) -> int | None:
        job = self._rows.table(OutboxJob).get(job_id)
        return job.user_id if job is not None else None

    def put_off(self, job_id: int, until: datetime) -> None:
        job = self._rows.table(OutboxJob).get(job_id)
        if job is not None and job.status != "done":
            job.status, job.available_at = "pending", until

    def extraction_owed_up_to(self, user_id: int) -> int:
        return max((job.payload["turn_id"] for job in self._rows.select(OutboxJob, user_id=user_id, task="extract_turn")
                    if job.status in (None, "pending", "sent")), default=0)

    def claim(self, job_id: int, now: datetime, until: datetime) -> bool:
        job = self._rows.table(OutboxJob).get(job_id)
        if job is None or job.status == "done" or (job.running_until is not None and job.running_until > now):
            return False
        job.running_until = until
        return True

    def renew_claim(self, job_id: int, until: datetime) -> None:
        job = self._rows.table(OutboxJob).get(job_id)
        if job is not None and job.status != "done":
            job.running_until = until

    def release_claim(self, job_id: int) -> None:
        job = self._rows.table(OutboxJob).get(job_id)
        if job is not None:
            job.running_until = None


class FakeOneTimeTokenRepository(_Repository):
    def issue(self, token: str, user_id: int, purpose: str, payload: dict[str, Any], *, now: datetime,
              expires_at: datetime) -> bool:
        if token in self._rows.table(OneTimeToken):
            return False
        self._rows.insert(OneTimeToken(token=token, user_id=user_id, purpose=purpose, payload=payload,
                                      created_at=now, expires_at=expires_at))
        return True

    def use(self, token: str, purpose: str, now: datetime, *, user_id: int | None = None) -> OneTimeToken | None:
        found = self._rows.table(OneTimeToken).get(token)
        usable = (found is not None and found.purpose == purpose and found.used_at is None and found.expires_at > now
                  and (user_id is None or found.user_id == user_id))
        if not usable:
            return None
        found.used_at = now
        return found

    def withdraw(self, user_id: int, purpose: str, now: datetime) -> None:
        for token in self._rows.select(OneTimeToken, user_id=user_id, purpose=purpose):
            if token.used_at is None:
                token.used_at = now
        self.drop_expired(user_id, now)

    def drop_expired(self, user_id: int, now: datetime) -> None:
        self._rows.delete(OneTimeToken, [t.token for t in self._rows.select(OneTimeToken, user_id=user_id)
                                        if t.expires_at <= now])


class FakeWebSessionRepository(_Repository):
    def end_for_user(self, user_id: int) -> None:
        self._rows.delete(WebSession, [s.secret_hash for s in self._rows.select(WebSession, user_id=user_id)])


class FakeAccountDataRepository(_Repository):
    def delete_learnt(self, user_id: int) -> None:
        for model in LEARNT_FROM_THE_USER:
            self._rows.delete(model, [_key(row) for row in self._rows.select(model, user_id=user_id)])


class FakeUsageRepository(_Repository):
    def record(self, user_id: int, chat_id: int | None, calls: Sequence[Any], now: datetime, *,
               messages: int = 0) -> None:
        day, chat_key = usage_day(now), chat_id or NO_CHAT
        for call in calls:
            self._rows.insert(UsageCall(user_id=user_id, chat_id=chat_id, kind=call.kind, model=call.model,
                                        prompt_tokens=call.prompt_tokens, completion_tokens=call.completion_tokens,
                                        cached_tokens=call.cached_tokens, estimated=call.estimated,
                                        latency_ms=call.latency_ms, created_at=now))
        table = self._rows.table(UsageDay)
        for kind, added in sums_by_kind(calls, messages).items():
            row = table.get((user_id, day, kind, chat_key))
            if row is None:
                row = self._rows.insert(UsageDay(user_id=user_id, day=day, kind=kind, chat_id=chat_key))
            for name in SUMMED:
                setattr(row, name, getattr(row, name) + getattr(added, name))

    def lock_spenders(self, user_id: int, chat_id: int | None) -> None:
        """One fake unit of work runs at a time: nothing to hold."""

    def hold(self, user_id: int, chat_id: int | None, day: date, tokens: int) -> None:
        table, key = self._rows.table(UsageDay), (user_id, day, MESSAGE_KIND, chat_id or NO_CHAT)
        row = table.get(key)
        if row is None:
            row = self._rows.insert(UsageDay(user_id=user_id, day=day, kind=MESSAGE_KIND, chat_id=chat_id or NO_CHAT))
        row.prompt_tokens += tokens

    def release(self, user_id: int, chat_id: int | None, day: date, tokens: int) -> None:
        row = self._rows.table(UsageDay).get((user_id, day, MESSAGE_KIND, chat_id or NO_CHAT))
        if row is not None:
            row.prompt_tokens = max(row.prompt_tokens - tokens, 0)

    def tokens_on(self, user_id: int, day: date) -> int:
        return sum(row.prompt_tokens + row.completion_tokens for row in self._days(user_id=user_id, day=day))

    def chat_tokens_on(self, chat_id: int, day: date) -> int:
        return sum(row.prompt_tokens + row.completion_tokens for row in self._days(chat_id=chat_id, day=day))

    def by_day(self, since: date, *, user_id: int | None = None) -> list[tuple[date, UsageTotals]]:
        return sorted(self._summed(lambda row: row.day, since, user_id).items())

    def by_kind(self, since: date, *, user_id: int | None = None) -> list[tuple[str, UsageTotals]]:
        return sorted(self._summed(lambda row: row.kind, since, user_id).items(),
                      key=lambda item: (-item[1].tokens, item[0]))

    def top_users(self, since: date, limit: int) -> list[tuple[int, UsageTotals]]:
        ranked = sorted(self._summed(lambda row: row.user_id, since, None).items(),
                        key=lambda item: (-item[1].tokens, item[0]))
        return ranked[:limit]

    def _days(self, **equal: object) -> list[UsageDay]:
        return [row for row in self._rows.table(UsageDay).values()
                if all(getattr(row, name) == value for name, value in equal.items())]

    def _summed(self, key: Callable[[UsageDay], Any], since: date, user_id: int | None) -> dict[Any, UsageTotals]:
        sums: dict[Any, UsageTotals] = {}
        for row in self._rows.table(UsageDay).values():
            if row.day >= since and user_id in (None, row.user_id):
                sums[key(row)] = sums.get(key(row), UsageTotals()) + UsageTotals(
                    *(getattr(row, name) for name in SUMMED))
        return sums


class Clock:
    """A clock a test sets by hand (``clock.now = …``); services call it for the time."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now
