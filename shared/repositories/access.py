"""The access entries operators added from chat: read all (they are few), add, move, remove."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from shared.db.access_models import AccessEntryRow


class AccessRepository:
    """The ``access_entries`` table. A target (kind, platform, value) is on one list at most."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def entries(self) -> list[AccessEntryRow]:
        """Every entry, oldest first, as the table holds them now (after this transaction's own upserts too)."""
        query = select(AccessEntryRow).order_by(AccessEntryRow.id).execution_options(populate_existing=True)
        return list(self.session.scalars(query))

    def find(self, kind: str, platform: str, value: str) -> AccessEntryRow | None:
        return self.session.scalars(select(AccessEntryRow).where(
            AccessEntryRow.kind == kind, AccessEntryRow.platform == platform, AccessEntryRow.value == value,
        )).one_or_none()

    def put(self, effect: str, kind: str, platform: str, value: str, *, added_by: str, now: datetime) -> None:
        """Put the target on the ``effect`` list (off the other one), race-free between processes."""
        statement = insert(AccessEntryRow).values(effect=effect, kind=kind, platform=platform, value=value,
                                                  added_by=added_by, created_at=now)
        self.session.execute(statement.on_conflict_do_update(
            index_elements=["kind", "platform", "value"],
            set_={"effect": effect, "added_by": added_by, "created_at": now},
            where=AccessEntryRow.effect != effect,
        ))

    def remove(self, kind: str, platform: str, value: str) -> str | None:
        """Take the target off whichever list it is on; the list it was on, or None."""
        return self.session.scalars(delete(AccessEntryRow).where(
            AccessEntryRow.kind == kind, AccessEntryRow.platform == platform, AccessEntryRow.value == value,
        ).returning(AccessEntryRow.effect)).one_or_none()
