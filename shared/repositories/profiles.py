"""Per-user profile: the core summary and the scratchpad injected into prompts."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from shared.db.memory_models import Profile
from shared.text import clean_text

MAX_SUMMARY_CHARS = 4000


class ProfileRepository:
    """Reads and replaces one user's profile."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def get(self, user_id: int) -> Profile | None:
        return self.session.get(Profile, user_id)

    def save(self, user_id: int, core_summary: str, scratchpad: dict[str, Any], now: datetime) -> None:
        values = {"core_summary": clean_text(core_summary, MAX_SUMMARY_CHARS), "scratchpad": scratchpad,
                  "updated_at": now}
        self.session.execute(
            insert(Profile).values(user_id=user_id, **values)
            .on_conflict_do_update(index_elements=["user_id"], set_=values)
        )
        self.session.expire_all()
