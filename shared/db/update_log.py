"""The inbox of platform updates, so that an update delivered twice, or to two replicas behind a load
balancer, is handled once, and one whose replica died before handling it is handled by another.

Telegram sends an update again when it did not see the webhook's answer; behind a load balancer the
second delivery may reach another replica. Three steps:

1. :meth:`UpdateInbox.receive`, before the webhook answers 200: one ``INSERT … ON CONFLICT DO NOTHING``
   decides which replica received it first; the others drop it. Its body is kept until it is handled.
2. While a replica handles it, the update is *in hand* (:func:`handling`, a context variable: the services
   it calls know nothing of updates): the first unit of work that commits marks it handled in that same
   transaction (:func:`marked_in`), so the turn, the reminder set or the memory forgotten and the mark land
   together or not at all. Only the webhook's units of work do: ``run_telegram`` wires its process with
   ``bootstrap.runtime(settings, around_commit=marked_in)``, and no other process reads the variable. An
   update that changes nothing is marked when its handling ends (:meth:`UpdateInbox.finish`).
3. :meth:`UpdateInbox.reclaim`: an update received more than :data:`RECLAIM_AFTER` ago and never marked
   (its replica died, or stopped with it queued) is claimed again, by one replica, and handled there.

The mark carries the attempt's id: a transaction of another attempt that finds the update marked fails
with :class:`UpdateHandledElsewhere` and rolls back. Bodies are cleared once handled (they may quote
the user); rows older than :data:`KEEP` are removed now and then (Telegram stops trying after a day).
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import timedelta

from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from shared.db.results import rows_changed
from shared.db.update_models import PlatformUpdate

log = logging.getLogger(__name__)

TABLE = PlatformUpdate.__tablename__
KEEP = timedelta(days=2)
PRUNE_EVERY = 1000
"""Every this many updates received, a replica removes the rows older than :data:`KEEP`."""
RECLAIM_AFTER = timedelta(minutes=2)
"""An update unmarked this long after it was received (or last claimed) is claimed again."""
MAX_ATTEMPTS = 3
"""An update that took down its replica this many times is not tried again."""
RECLAIM_BATCH = 100

RECEIVE = text(f"""INSERT INTO {TABLE} (platform, update_id, body) VALUES (:platform, :update_id, :body)
                   ON CONFLICT DO NOTHING RETURNING update_id""")
MARK = text(f"""UPDATE {TABLE} SET handled_at = now(), handled_by = :attempt, body = NULL
                WHERE platform = :platform AND update_id = :update_id
                  AND (handled_at IS NULL OR handled_by = :attempt)""")
RECLAIM = text(f"""UPDATE {TABLE} SET seen_at = now(), attempts = attempts + 1
                   WHERE (platform, update_id) IN (
                       SELECT platform, update_id FROM {TABLE}
                       WHERE platform = :platform AND handled_at IS NULL AND seen_at < now() - :after
                         AND attempts < :attempts
                       ORDER BY seen_at LIMIT :batch FOR UPDATE SKIP LOCKED)
                   RETURNING update_id, body""")
PRUNE = text(f"DELETE FROM {TABLE} WHERE platform = :platform AND seen_at < now() - :keep")


class UpdateHandledElsewhere(Exception):
    """Another attempt (a replica that received it again after a silence) marked the update handled first:
    this attempt's transaction is rolled back and it answers nothing."""


@dataclass
class UpdateInHand:
    """The update a task is handling: which one, the attempt's id, and whether a commit marked it yet."""

    platform: str
    update_id: int
    attempt: str = field(default_factory=lambda: str(uuid.uuid4()))
    marked: bool = False

    def mark(self, session: Session) -> None:
        """Mark it handled in ``session``'s transaction; raises when another attempt did."""
        values = {"platform": self.platform, "update_id": self.update_id, "attempt": self.attempt}
        if rows_changed(session.execute(MARK, values)) == 0:
            raise UpdateHandledElsewhere(f"update {self.update_id} was handled by another attempt")


_in_hand: ContextVar[UpdateInHand | None] = ContextVar("update_in_hand", default=None)


@contextmanager
def handling(update: UpdateInHand) -> Iterator[UpdateInHand]:
    """``update`` is in hand for the code (and the threads it starts with ``asyncio.to_thread``) in the block."""
    token = _in_hand.set(update)
    try:
        yield update
    finally:
        _in_hand.reset(token)


@contextmanager
def marked_in(session: Session) -> Iterator[None]:
    """Around a commit (the webhook's units of work are given it as their ``around_commit`` hook): the update in
    hand, if any and not yet marked, is marked in this transaction."""
    update = _in_hand.get()
    if update is None or update.marked:
        yield
        return
    update.mark(session)
    yield
    update.marked = True


class UpdateInbox:
    """The updates of one platform received by any replica."""

    def __init__(self, engine: Engine, platform: str) -> None:
        self.engine, self.platform = engine, platform
        self._received = itertools.count(1)

    def receive(self, update_id: int, body: str) -> bool:
        """True for the first replica to receive ``update_id`` (it handles it); False for a delivery again.
        ``body`` is the update's JSON as it came."""
        values = {"platform": self.platform, "update_id": update_id, "body": body}
        with self.engine.begin() as connection:
            first = connection.execute(RECEIVE, values).first() is not None
            if next(self._received) % PRUNE_EVERY == 0:
                connection.execute(PRUNE, {"platform": self.platform, "keep": KEEP})
        return first

    def finish(self, update: UpdateInHand) -> None:
        """Mark an update handled that no commit marked (nothing changed, or nothing handled it)."""
        if update.marked:
            return
        with Session(self.engine) as session, session.begin():
            update.mark(session)
        update.marked = True

    def reclaim(self) -> list[str]:
        """The bodies of updates received but not handled for :data:`RECLAIM_AFTER`, claimed by this replica
        (oldest first); each is claimed by one replica, and again only after as long a silence."""
        values = {"platform": self.platform, "after": RECLAIM_AFTER, "attempts": MAX_ATTEMPTS,
                  "batch": RECLAIM_BATCH}
        with self.engine.begin() as connection:
            rows = connection.execute(RECLAIM, values).all()
        if rows:
            log.warning("%d %s update(s) received but never handled (a replica stopped): handling them here",
                        len(rows), self.platform)
        return [row.body for row in rows if row.body is not None]
