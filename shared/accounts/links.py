"""Joining a person's Discord and Telegram identities into one user, and separating them again.

``/link`` on one account gives a one-time code (10 minutes, 8 characters without look-alikes);
``/link <code>`` on the other account moves that identity to the code owner's user and merges
everything its previous user had (memories and their audit, episodes, todos, turns, working
memory, the profile when the owner has none, owed jobs), then deletes the empty user. A person
has one account per platform, so a user never gets two identities of the same platform.
``/unlink`` gives an identity a user of its own again; the data stays with the other identity,
except pending reminders that ping on the unlinked identity's platform.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from shared.db.models import Identity
from shared.errors import ConfirmationInvalid, InvalidCommand
from shared.repositories.uow import UnitOfWork

LINK_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
"""No 0/O or 1/I: a code is read on one screen and typed on another."""
LINK_CODE_LENGTH = 8
LINK_LIFETIME = timedelta(minutes=10)


@dataclass(frozen=True)
class LinkCode:
    code: str
    expires_at: datetime


def normalise_code(raw: object) -> str:
    """What the user typed, without spaces or dashes, upper-cased; refused unless it can be a code."""
    code = raw.replace(" ", "").replace("-", "").upper() if isinstance(raw, str) and len(raw) <= 64 else ""
    if len(code) != LINK_CODE_LENGTH or any(ch not in LINK_ALPHABET for ch in code):
        raise InvalidCommand("link_code_format", length=LINK_CODE_LENGTH)
    return code


def issue_link_code(uow: UnitOfWork, user_id: int, now: datetime) -> LinkCode:
    """A new code for this user; any earlier unused one stops working."""
    uow.tokens.withdraw(user_id, "link", now)
    expires_at = now + LINK_LIFETIME
    while True:
        code = "".join(secrets.choice(LINK_ALPHABET) for _ in range(LINK_CODE_LENGTH))
        if uow.tokens.issue(code, user_id, "link", {}, now=now, expires_at=expires_at):
            return LinkCode(code, expires_at)


def link_identity(uow: UnitOfWork, identity: Identity, code: str, now: datetime) -> None:
    """Move ``identity`` to the user who owns ``code`` and merge its previous user's data into that user."""
    token = uow.tokens.valid(code, "link", now, lock=True)
    if token is None:
        raise ConfirmationInvalid("link_code_invalid")
    owner, previous = token.user_id, identity.user_id
    if owner == previous:
        raise InvalidCommand("link_self")
    if any(other.platform == identity.platform for other in uow.users.identities_of(owner)):
        raise InvalidCommand("link_same_platform", platform=identity.platform)
    if len(uow.users.identities_of(previous)) > 1:
        raise InvalidCommand("link_unlink_first")
    uow.tokens.use(code, "link", now)
    uow.accounts.lock_users(owner, previous)
    _merge_users(uow, previous, owner, now)


def unlink_identity(uow: UnitOfWork, identity: Identity) -> None:
    """Give ``identity`` a fresh user; refused when it is the user's only identity."""
    old = identity.user_id
    if len(uow.users.identities_of(old)) < 2:
        raise InvalidCommand("unlink_only_identity")
    fresh = uow.accounts.new_user(paused_at=uow.users.get(old).paused_at)
    identity.user_id = fresh.id
    uow.accounts.move_pending_reminders(old, fresh.id, identity.platform)
    uow.flush()


def _merge_users(uow: UnitOfWork, source: int, target: int, now: datetime) -> None:
    """Everything of ``source`` goes to ``target``; ``source`` is deleted and loaded rows are reloaded."""
    _close_colliding_sessions(uow, source, target, now)
    uow.accounts.move_rows(source, target, with_profile=uow.profiles.get(target) is None)
    paused = [at for at in (uow.users.get(source).paused_at, uow.users.get(target).paused_at) if at is not None]
    uow.users.set_paused(target, min(paused) if paused else None)
    uow.flush()
    uow.accounts.retire_user(source, target)
    uow.forget_loaded()


def _close_colliding_sessions(uow: UnitOfWork, source: int, target: int, now: datetime) -> None:
    """Close the working memories of ``source`` in chats where ``target`` has one open, so the two can
    merge (at most one open session per user and chat); each is owed its summary."""
    for session_id in uow.sessions.open_in_same_chats(source, target):
        uow.sessions.close(session_id, now)
        uow.outbox.add("close_session", {"session_id": session_id}, dedup_key=f"close:{session_id}", user_id=source)
