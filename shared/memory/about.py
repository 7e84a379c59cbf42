"""What a memory is about, as a model reads it: the entities it names and when it happened. Pure.

The knowledge monitor may add to a memory the people, pets, places and things it is about, in the
words one would ask with ("dog", "Biscuit" for "Biscuit" under ``pet_name``), and the day or month
what it tells of happened. Both go into the memory's search tokens; the time is also matched
against time cues ("last summer"). What a model writes here is checked like any other model text.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from shared.text import clean_text

MAX_ENTITIES = 10
MAX_ENTITY_CHARS = 60
_WHEN = re.compile(r"^(?P<year>\d{4})-(?P<month>\d{1,2})(?:-(?P<day>\d{1,2}))?(?:[T ].*)?$")


def read_entities(raw: object) -> tuple[str, ...]:
    """Up to ``MAX_ENTITIES`` distinct short names from a model's list (anything else is ignored)."""
    if not isinstance(raw, list):
        return ()
    names = (clean_text(item, MAX_ENTITY_CHARS).strip() for item in raw if isinstance(item, str))
    return tuple(dict.fromkeys(name for name in names if name))[:MAX_ENTITIES]


def read_when(raw: object, now: datetime | None = None) -> datetime | None:
    """A day ("2023-05-08") or month ("2023-05") as midnight UTC of its first day; None for anything
    else, an impossible date, or a time after ``now`` (a memory tells of what has happened)."""
    match = _WHEN.match(raw.strip()) if isinstance(raw, str) else None
    if match is None:
        return None
    try:
        moment = datetime(int(match["year"]), int(match["month"]), int(match["day"] or 1), tzinfo=UTC)
    except ValueError:
        return None
    return moment if now is None or moment <= now else None
