"""Joining a person's Discord and Telegram identities into one user, and separating them again.

Joining takes the consent of both accounts, each told which account the other is:

1. ``/link`` on account A gives a one-time code (5 minutes, 8 characters without look-alikes).
2. ``/link <code>`` on account B joins nothing: it names A's accounts (platform and name) and gives B a
   second code that only A's user can use.
3. ``/link confirm <second code>`` on account A moves B's identity to A's user and merges everything
   B's previous user had (memories and their audit, episodes, todos, turns, working memory, the
   profile when A has none, owed jobs), then deletes the empty user; A is told which account joined.

So a code handed to a stranger joins nothing unless its owner then types the stranger's code, and
a stranger's code typed by mistake is refused on the wrong account. Wrong codes count: after
:data:`MAX_WRONG_CODES` in :data:`WRONG_CODE_WINDOW` an account is refused until the oldest expires.
A person has one account per platform, so a user never gets two identities of the same platform.
``/unlink`` gives an identity a user of its own again; the data stays with the other identity,
except pending reminders that ping on the unlinked identity's platform.

Everything lives in one-time tokens, without a table of its own: codes and join requests are
``link`` tokens told apart by ``payload["kind"]``; a wrong code is a ``confirm`` token of action
``link_miss`` whose name (``link-miss:<user>:<n>``) no confirmation button can carry, so only its
expiry ends it (a new ``/link`` code voids the user's ``link`` tokens, which must not reset the count).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from shared.db.models import Identity, User
from shared.errors import ConfirmationInvalid, InvalidCommand, NotFound
from shared.repositories.uow import UnitOfWork

LINK_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
"""No 0/O or 1/I: a code is read on one screen and typed on another."""
LINK_CODE_LENGTH = 8
LINK_LIFETIME = timedelta(minutes=5)
CONFIRM_WORD = "confirm"
MAX_WRONG_CODES = 5
WRONG_CODE_WINDOW = timedelta(hours=1)


@dataclass(frozen=True)
class LinkCode:
    code: str
    expires_at: datetime


@dataclass(frozen=True)
class Account:
    """One identity as a person recognises it: the platform and the name it goes by there."""

    platform: str
    name: str


@dataclass(frozen=True)
class LinkRequest:
    """What the account that entered a code sees: whose account it would join, and the code that
    confirms the join from that account."""

    code: str
    expires_at: datetime
    owner: tuple[Account, ...]


def normalise_code(raw: object) -> str:
    """What the user typed, without spaces or dashes, upper-cased; refused unless it can be a code."""
    code = raw.replace(" ", "").replace("-", "").upper() if isinstance(raw, str) and len(raw) <= 64 else ""
    if len(code) != LINK_CODE_LENGTH or any(ch not in LINK_ALPHABET for ch in code):
        raise InvalidCommand("link_code_format", length=LINK_CODE_LENGTH)
    return code


def confirmation_code(argument: str) -> str | None:
    """The code of ``confirm <code>`` (what the front-ends pass after ``/link``), None for anything else."""
    word, _, rest = argument.strip().partition(" ")
    return rest.strip() if word.lower() == CONFIRM_WORD else None


def issue_link_code(uow: UnitOfWork, user_id: int, now: datetime) -> LinkCode:
    """A new code for this user; any earlier unused code or join request stops working."""
    uow.tokens.withdraw(user_id, "link", now)
    return _issue(uow, user_id, {"kind": "code"}, now)


def request_link(uow: UnitOfWork, identity: Identity, code: str, now: datetime) -> LinkRequest | None:
    """Step 2: check ``code`` and answer with a join request for its owner to confirm; nothing is joined.
    None when the code is wrong (the miss is counted, so the caller commits and then refuses)."""
    _refuse_when_guessing(uow, identity.user_id, now)
    token = uow.tokens.valid(code, "link", now, lock=True)
    if token is None or token.payload.get("kind", "code") != "code":
        _count_miss(uow, identity.user_id, now)
        return None
    _check_joinable(uow, token.user_id, identity)
    uow.tokens.use(code, "link", now)
    request = _issue(uow, token.user_id, {"kind": "request", "platform": identity.platform,
                                          "platform_user_id": identity.platform_user_id}, now)
    owner = tuple(account(other) for other in uow.users.identities_of(token.user_id))
    return LinkRequest(request.code, request.expires_at, owner)


def confirm_link(uow: UnitOfWork, identity: Identity, code: str, now: datetime) -> Account | None:
    """Step 3: the owner confirms a join request; the requesting identity and its data join the owner's
    user. The account that joined, or None when the code is wrong (counted, as in :func:`request_link`)."""
    _refuse_when_guessing(uow, identity.user_id, now)
    token = uow.tokens.valid(code, "link", now, lock=True)
    if token is None or token.payload.get("kind") != "request" or token.user_id != identity.user_id:
        _count_miss(uow, identity.user_id, now)
        return None
    joining = uow.users.identity(str(token.payload.get("platform")), str(token.payload.get("platform_user_id")))
    if joining is None:
        raise ConfirmationInvalid("link_code_invalid")
    _check_joinable(uow, identity.user_id, joining)
    uow.tokens.use(code, "link", now)
    previous = joining.user_id
    uow.accounts.lock_users(identity.user_id, previous)
    _merge_users(uow, previous, identity.user_id, now)
    return account(joining)


def account(identity: Identity) -> Account:
    return Account(identity.platform, identity.display_name or identity.platform_user_id)


def unlink_identity(uow: UnitOfWork, identity: Identity) -> None:
    """Give ``identity`` a fresh user; refused when it is the user's only identity."""
    old = identity.user_id
    if len(uow.users.identities_of(old)) < 2:
        raise InvalidCommand("unlink_only_identity")
    person = _user(uow, old)
    fresh = uow.accounts.new_user(paused_at=person.paused_at)
    uow.users.set_timezone(fresh.id, person.timezone)  # still the same person, in the same place
    identity.user_id = fresh.id
    uow.accounts.move_pending_reminders(old, fresh.id, identity.platform)
    uow.flush()


def _user(uow: UnitOfWork, user_id: int) -> User:
    """The user an identity points at (its foreign key keeps the row while the identity is there)."""
    user = uow.users.get(user_id)
    if user is None:
        raise NotFound(f"user {user_id}")
    return user


def _issue(uow: UnitOfWork, user_id: int, payload: dict[str, str], now: datetime) -> LinkCode:
    expires_at = now + LINK_LIFETIME
    while True:
        code = "".join(secrets.choice(LINK_ALPHABET) for _ in range(LINK_CODE_LENGTH))
        if uow.tokens.issue(code, user_id, "link", payload, now=now, expires_at=expires_at):
            return LinkCode(code, expires_at)


def _check_joinable(uow: UnitOfWork, owner: int, joining: Identity) -> None:
    if owner == joining.user_id:
        raise InvalidCommand("link_self")
    if any(other.platform == joining.platform for other in uow.users.identities_of(owner)):
        raise InvalidCommand("link_same_platform", platform=joining.platform)
    if len(uow.users.identities_of(joining.user_id)) > 1:
        raise InvalidCommand("link_unlink_first")


def _miss_names(user_id: int) -> list[str]:
    return [f"link-miss:{user_id}:{n}" for n in range(1, MAX_WRONG_CODES + 1)]


def _refuse_when_guessing(uow: UnitOfWork, user_id: int, now: datetime) -> None:
    if all(uow.tokens.valid(name, "confirm", now) is not None for name in _miss_names(user_id)):
        raise InvalidCommand("link_too_many_tries", limit=MAX_WRONG_CODES,
                             minutes=int(WRONG_CODE_WINDOW.total_seconds() // 60))


def _count_miss(uow: UnitOfWork, user_id: int, now: datetime) -> None:
    uow.tokens.drop_expired(user_id, now)  # frees the names of misses older than the window
    free = next(name for name in _miss_names(user_id) if uow.tokens.valid(name, "confirm", now) is None)
    uow.tokens.issue(free, user_id, "confirm", {"action": "link_miss"}, now=now, expires_at=now + WRONG_CODE_WINDOW)


def _merge_users(uow: UnitOfWork, source: int, target: int, now: datetime) -> None:
    """Everything of ``source`` goes to ``target``; ``source`` is deleted and loaded rows are reloaded."""
    _close_colliding_sessions(uow, source, target, now)
    uow.accounts.move_rows(source, target, with_profile=uow.profiles.get(target) is None)
    uow.usage.move(source, target)  # one person, one allowance
    paused = [at for at in (_user(uow, source).paused_at, _user(uow, target).paused_at) if at is not None]
    uow.users.set_paused(target, min(paused) if paused else None)
    if _user(uow, target).timezone is None:  # the account that confirms keeps its zone; else the joining one's
        uow.users.set_timezone(target, _user(uow, source).timezone)
    uow.flush()
    uow.accounts.retire_user(source, target)
    uow.forget_loaded()


def _close_colliding_sessions(uow: UnitOfWork, source: int, target: int, now: datetime) -> None:
    """Close the working memories of ``source`` in chats where ``target`` has one open, so the two can
    merge (at most one open session per user and chat); each is owed its summary."""
    for session_id in uow.sessions.open_in_same_chats(source, target):
        uow.sessions.close(session_id, now)
        uow.outbox.add("close_session", {"session_id": session_id}, dedup_key=f"close:{session_id}", user_id=source)
