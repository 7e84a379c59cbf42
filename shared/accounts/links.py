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

from sqlalchemy import delete, func, select, update

from shared.db.memory_models import Episode, Memory, MemoryEvent, OutboxJob, Profile, Todo
from shared.db.models import Chat, ConversationSession, ConversationTurn, Identity, User
from shared.errors import ConfirmationInvalid, InvalidCommand
from shared.repositories.uow import UnitOfWork

LINK_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
"""No 0/O or 1/I: a code is read on one screen and typed on another."""
LINK_CODE_LENGTH = 8
LINK_LIFETIME = timedelta(minutes=10)
MOVED_WITH_THE_USER = (Memory, MemoryEvent, Episode, Todo, ConversationTurn)


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
    _lock_users(uow, owner, previous)
    _merge_users(uow, previous, owner, now)


def unlink_identity(uow: UnitOfWork, identity: Identity) -> None:
    """Give ``identity`` a fresh user; refused when it is the user's only identity."""
    old = identity.user_id
    if len(uow.users.identities_of(old)) < 2:
        raise InvalidCommand("unlink_only_identity")
    fresh = User(paused_at=uow.users.get(old).paused_at)
    uow.session.add(fresh)
    uow.session.flush()
    identity.user_id = fresh.id
    on_this_platform = select(Chat.id).where(Chat.platform == identity.platform)
    uow.session.execute(update(Todo).where(Todo.user_id == old, Todo.status == "pending",
                                           Todo.chat_id.in_(on_this_platform))
                        .values(user_id=fresh.id).execution_options(synchronize_session=False))
    uow.session.flush()


def _lock_users(uow: UnitOfWork, *user_ids: int) -> None:
    """Lock both users in id order, so two links at once cannot interleave."""
    uow.session.execute(select(User.id).where(User.id.in_(user_ids)).order_by(User.id).with_for_update())


def _merge_users(uow: UnitOfWork, source: int, target: int, now: datetime) -> None:
    session = uow.session
    moved = {"synchronize_session": False}
    for model in MOVED_WITH_THE_USER:
        session.execute(update(model).where(model.user_id == source).values(user_id=target).execution_options(**moved))
    _merge_sessions(uow, source, target, now)
    session.execute(update(OutboxJob).where(OutboxJob.user_id == source, OutboxJob.payload.has_key("user_id"))
                    .values(payload=OutboxJob.payload.op("||")(func.jsonb_build_object("user_id", target)))
                    .execution_options(**moved))
    session.execute(update(OutboxJob).where(OutboxJob.user_id == source).values(user_id=target)
                    .execution_options(**moved))
    if uow.profiles.get(target) is None:
        session.execute(update(Profile).where(Profile.user_id == source).values(user_id=target)
                        .execution_options(**moved))
    paused = [at for at in (uow.users.get(source).paused_at, uow.users.get(target).paused_at) if at is not None]
    uow.users.set_paused(target, min(paused) if paused else None)
    session.flush()
    session.execute(update(Identity).where(Identity.user_id == source).values(user_id=target)
                    .execution_options(**moved))
    session.execute(delete(User).where(User.id == source).execution_options(**moved))
    session.expire_all()


def _merge_sessions(uow: UnitOfWork, source: int, target: int, now: datetime) -> None:
    """Move the working memories; one that would collide with an open one of the target is closed first."""
    open_of_target = select(ConversationSession.chat_id).where(ConversationSession.user_id == target,
                                                               ConversationSession.closed_at.is_(None))
    colliding = uow.session.scalars(select(ConversationSession.id).where(
        ConversationSession.user_id == source, ConversationSession.closed_at.is_(None),
        ConversationSession.chat_id.in_(open_of_target))).all()
    for session_id in colliding:
        uow.sessions.close(session_id, now)
        uow.outbox.add("close_session", {"session_id": session_id}, dedup_key=f"close:{session_id}", user_id=source)
    uow.session.execute(update(ConversationSession).where(ConversationSession.user_id == source)
                        .values(user_id=target).execution_options(synchronize_session=False))
