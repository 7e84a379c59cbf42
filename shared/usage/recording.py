"""Recording what work cost when the work itself wrote nothing (it failed, or was left for later)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from shared.llm.metering import CallUsage

if TYPE_CHECKING:
    from shared.repositories.uow import UnitOfWork


def record_alone(uow_factory: Callable[[], UnitOfWork], user_id: int, chat_id: int | None,
                 calls: Sequence[CallUsage], now: datetime) -> None:
    """The requests in a transaction of their own (nothing when there were none)."""
    if not calls:
        return
    with uow_factory() as uow:
        uow.usage.record(user_id, chat_id, calls, now)
        uow.commit()
