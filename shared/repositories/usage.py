"""Usage of the model and the embedder: recording requests, and reading the daily sums.

:meth:`UsageRepository.record` writes a unit of work's requests and adds them to the daily sums in
one statement (one round trip on the hot path). Every read goes to the daily sums
(``llm_usage_daily``), never to the requests themselves: a quota check is one primary-key range and a
user's 30-day report a few dozen rows, however many requests were made; the operators' report sums
every user's days in its window (``mnemo bench usage`` times both at a million requests).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from functools import lru_cache
from typing import Any, Protocol, TypeVar

from sqlalchemy import BigInteger, Row, Select, TextClause, delete, desc, func, select, text, update
from sqlalchemy.orm import InstrumentedAttribute, Session

from shared.db.usage_models import (
    MAX_MODEL_CHARS,
    MESSAGE_KIND,
    NO_CHAT,
    SUMMED,
    UsageCall,
    UsageDay,
    UsageTotals,
    sums_by_kind,
    usage_day,
)

_ADD_TO_DAY = "ON CONFLICT (user_id, day, kind, chat_id) DO UPDATE SET " + ", ".join(
    f"{name} = d.{name} + excluded.{name}" for name in SUMMED)
CALLS_PER_STATEMENT = 32
"""Requests written by one statement (a batch of background work may have made more)."""
_Key = TypeVar("_Key")
_Query = TypeVar("_Query", bound=Select[*tuple[Any, ...]])
_CALL_COLUMNS = ("kind", "model", "prompt_tokens", "completion_tokens", "cached_tokens", "estimated", "latency_ms")


@lru_cache(maxsize=64)
def _record_statement(calls: int, kinds: int) -> TextClause:
    """``calls`` requests and the daily sums of ``kinds`` kinds in one statement of plain rows, one bound value
    per field: arrays to unnest cost the hot path twice the client time of the same request written as rows
    (a turn has one or two requests), and the sums per kind are added up before it is sent."""
    call_rows = ", ".join(
        "(:user_id, :chat_id, " + ", ".join(f":c{index}_{name}" for name in _CALL_COLUMNS) + ", :now)"
        for index in range(calls))
    day_rows = ", ".join(
        f"(:user_id, :day, :k{index}_kind, :chat_key, " + ", ".join(f":k{index}_{name}" for name in SUMMED) + ")"
        for index in range(kinds))
    insert_days = (f"INSERT INTO llm_usage_daily AS d (user_id, day, kind, chat_id, {', '.join(SUMMED)}) "
                   f"VALUES {day_rows} {_ADD_TO_DAY}")
    if not calls:
        return text(insert_days)
    return text(f"WITH calls AS (INSERT INTO llm_usage (user_id, chat_id, {', '.join(_CALL_COLUMNS)}, created_at) "
                f"VALUES {call_rows}) {insert_days}")


class SpentCall(Protocol):
    """One request as :class:`shared.llm.metering.CallUsage` describes it."""

    @property
    def kind(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def prompt_tokens(self) -> int: ...

    @property
    def completion_tokens(self) -> int: ...

    @property
    def cached_tokens(self) -> int: ...

    @property
    def estimated(self) -> bool: ...

    @property
    def latency_ms(self) -> int: ...


class UsageRepository:
    """Records requests and reads their daily sums; every read names its user (or is an operator's total)."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def record(self, user_id: int, chat_id: int | None, calls: Sequence[SpentCall], now: datetime, *,
               messages: int = 0) -> None:
        """The requests, on ``now``'s UTC day, and ``messages`` answered (hot-path turns): one statement for
        up to :data:`CALLS_PER_STATEMENT` requests (a turn's, in one round trip), one more for each further batch."""
        if not calls and not messages:
            return
        for start in range(0, max(len(calls), 1), CALLS_PER_STATEMENT):
            self._record(user_id, chat_id, calls[start:start + CALLS_PER_STATEMENT], now,
                         messages if start == 0 else 0)

    def _record(self, user_id: int, chat_id: int | None, calls: Sequence[SpentCall], now: datetime,
                messages: int) -> None:
        sums = sums_by_kind(calls, messages)
        values: dict[str, object] = {"user_id": user_id, "chat_id": chat_id, "chat_key": chat_id or NO_CHAT, "now": now,
                  "day": usage_day(now)}
        for index, call in enumerate(calls):
            values.update({f"c{index}_{name}": getattr(call, name) for name in _CALL_COLUMNS})
            values[f"c{index}_model"] = call.model[:MAX_MODEL_CHARS]
        for index, (kind, total) in enumerate(sums.items()):
            values[f"k{index}_kind"] = kind
            values.update({f"k{index}_{name}": getattr(total, name) for name in SUMMED})
        self.session.execute(_record_statement(len(calls), len(sums)), values)

    def lock_spenders(self, user_id: int, chat_id: int | None) -> None:
        """Hold the user's row (and the chat's, when given) until the transaction ends: the quota's check and
        its hold are one step for every process that spends for them (see :func:`shared.usage.quota.reserve`).
        ``NO KEY UPDATE``: rows that merely point at the user (a new turn) do not wait for it."""
        self.session.execute(text("SELECT id FROM users WHERE id = :id FOR NO KEY UPDATE"), {"id": user_id})
        if chat_id is not None:
            self.session.execute(text("SELECT id FROM chats WHERE id = :id FOR NO KEY UPDATE"), {"id": chat_id})

    def hold(self, user_id: int, chat_id: int | None, day: date, tokens: int) -> None:
        """Count ``tokens`` on the user's (and chat's) day before they are spent; :meth:`release` gives them
        back once what was spent is recorded. Counted as prompt tokens of the kind ``turn``, so every quota
        check and report sees them."""
        self.session.execute(text(
            f"INSERT INTO llm_usage_daily AS d (user_id, day, kind, chat_id, prompt_tokens) "
            f"VALUES (:user_id, :day, '{MESSAGE_KIND}', :chat_key, :tokens) ON CONFLICT (user_id, day, kind, chat_id) "
            f"DO UPDATE SET prompt_tokens = d.prompt_tokens + excluded.prompt_tokens"),
            {"user_id": user_id, "day": day, "chat_key": chat_id or NO_CHAT, "tokens": tokens})

    def release(self, user_id: int, chat_id: int | None, day: date, tokens: int) -> None:
        """Take back what :meth:`hold` counted (never below nothing)."""
        self.session.execute(text(
            f"UPDATE llm_usage_daily SET prompt_tokens = GREATEST(prompt_tokens - :tokens, 0) "
            f"WHERE user_id = :user_id AND day = :day AND kind = '{MESSAGE_KIND}' AND chat_id = :chat_key"),
            {"user_id": user_id, "day": day, "chat_key": chat_id or NO_CHAT, "tokens": tokens})

    def tokens_on(self, user_id: int, day: date) -> int:
        """The user's tokens (prompt and completion, every kind and chat) on ``day``."""
        query = select(func.coalesce(func.sum(UsageDay.prompt_tokens + UsageDay.completion_tokens), 0)).where(
            UsageDay.user_id == user_id, UsageDay.day == day)
        return int(self.session.scalar(query) or 0)

    def chat_tokens_on(self, chat_id: int, day: date) -> int:
        """Every user's tokens in one chat on ``day`` (a group's quota)."""
        query = select(func.coalesce(func.sum(UsageDay.prompt_tokens + UsageDay.completion_tokens), 0)).where(
            UsageDay.chat_id == chat_id, UsageDay.day == day)
        return int(self.session.scalar(query) or 0)

    def by_day(self, since: date, *, user_id: int | None = None) -> list[tuple[date, UsageTotals]]:
        """Sums per day from ``since`` on, oldest first: one user's, or everyone's."""
        query = _summed(UsageDay.day).where(UsageDay.day >= since).group_by(UsageDay.day).order_by(UsageDay.day)
        return [(row[0], _totals(row)) for row in self.session.execute(_for(query, user_id))]

    def by_kind(self, since: date, *, user_id: int | None = None) -> list[tuple[str, UsageTotals]]:
        """Sums per kind from ``since`` on, the most tokens first: one user's, or everyone's."""
        query = _summed(UsageDay.kind).where(UsageDay.day >= since).group_by(UsageDay.kind)
        rows = [(row[0], _totals(row)) for row in self.session.execute(_for(query, user_id))]
        return sorted(rows, key=lambda row: (-row[1].tokens, row[0]))

    def top_users(self, since: date, limit: int) -> list[tuple[int, UsageTotals]]:
        """The users with the most tokens from ``since`` on, most first."""
        tokens = func.sum(UsageDay.prompt_tokens + UsageDay.completion_tokens)
        query = (_summed(UsageDay.user_id).where(UsageDay.day >= since).group_by(UsageDay.user_id)
                 .order_by(desc(tokens), UsageDay.user_id).limit(limit))
        return [(row[0], _totals(row)) for row in self.session.execute(query)]

    def recent_calls(self, user_id: int, limit: int) -> list[UsageCall]:
        """The user's latest requests, newest first."""
        query = (select(UsageCall).where(UsageCall.user_id == user_id)
                 .order_by(UsageCall.created_at.desc(), UsageCall.id.desc()).limit(limit))
        return list(self.session.scalars(query))

    def move(self, source: int, target: int) -> None:
        """Give ``target`` the requests and daily sums of ``source`` (two accounts linked into one)."""
        self.session.execute(update(UsageCall).where(UsageCall.user_id == source).values(user_id=target)
                             .execution_options(synchronize_session=False))
        self.session.execute(text("""
            INSERT INTO llm_usage_daily AS d (user_id, day, kind, chat_id, messages, calls, prompt_tokens,
                                              completion_tokens, cached_tokens, estimated_calls)
            SELECT :target, day, kind, chat_id, messages, calls, prompt_tokens, completion_tokens, cached_tokens,
                   estimated_calls
            FROM llm_usage_daily WHERE user_id = :source
            """ + _ADD_TO_DAY),
            {"source": source, "target": target})
        self.session.execute(delete(UsageDay).where(UsageDay.user_id == source)
                             .execution_options(synchronize_session=False))


def _summed(key: InstrumentedAttribute[_Key]) -> Select[_Key, *tuple[int, ...]]:
    """``key`` and each of :data:`SUMMED` summed over the rows of each ``key``."""
    return select(key, *(func.coalesce(func.sum(getattr(UsageDay, name)), 0).cast(BigInteger) for name in SUMMED))


def _for(query: _Query, user_id: int | None) -> _Query:
    return query if user_id is None else query.where(UsageDay.user_id == user_id)


def _totals(row: Row[Any, *tuple[int, ...]]) -> UsageTotals:
    return UsageTotals(*(int(value) for value in row[1:]))
