"""Signing in to the web panel: a one-time link from the bot, then a session cookie.

``/panel`` gives a link with a random token (purpose ``panel``) that works once, for that user, for
``link_lifetime``; any earlier unused link stops working. Signing in uses the token up and starts a
:class:`~shared.db.web_session_models.WebSession` whose secret goes into an HttpOnly cookie and
whose CSRF token the page sends back on every change. The panel and the API resolve the cookie to
exactly one user id; nothing else decides whose data a request may touch.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeGuard
from urllib.parse import quote

from shared.errors import ConfirmationInvalid
from shared.repositories.uow import UnitOfWork

TOKEN_BYTES = 32
"""43 URL-safe characters: the sign-in token and the session secret."""
SIGN_IN_PATH = "/panel/sign-in"
_SECRET = re.compile(r"[A-Za-z0-9_-]{32,64}")


def revoke_web_access(uow: UnitOfWork, user_id: int, now: datetime) -> None:
    """Void the user's unused /panel links and end every web session of the user ("forget all")."""
    uow.tokens.withdraw(user_id, "panel", now)
    uow.web_sessions.end_for_user(user_id)


@dataclass(frozen=True)
class PanelLink:
    url: str
    expires_at: datetime


@dataclass(frozen=True)
class SignedIn:
    """A new session: the cookie's secret (shown once, stored hashed) and the page's CSRF token."""

    secret: str
    csrf_token: str
    user_id: int
    expires_at: datetime


@dataclass(frozen=True)
class PanelSession:
    user_id: int
    csrf_token: str
    expires_at: datetime


def issue_panel_link(uow: UnitOfWork, user_id: int, now: datetime, *, base_url: str,
                     lifetime: timedelta) -> PanelLink:
    """A sign-in link for this user; any earlier unused link stops working."""
    uow.tokens.withdraw(user_id, "panel", now)
    expires_at = now + lifetime
    token = secrets.token_urlsafe(TOKEN_BYTES)
    while not uow.tokens.issue(token, user_id, "panel", {}, now=now, expires_at=expires_at):
        token = secrets.token_urlsafe(TOKEN_BYTES)
    return PanelLink(f"{base_url.rstrip('/')}{SIGN_IN_PATH}?token={quote(token)}", expires_at)


def sign_in(uow: UnitOfWork, token: object, now: datetime, *, lifetime: timedelta) -> SignedIn:
    """Use a sign-in token up and start a session for its user."""
    if not is_secret(token):
        raise ConfirmationInvalid("panel_link_invalid")
    used = uow.tokens.use(token, "panel", now)
    if used is None:
        raise ConfirmationInvalid("panel_link_invalid")
    uow.web_sessions.drop_expired(now)
    secret, csrf = secrets.token_urlsafe(TOKEN_BYTES), secrets.token_urlsafe(TOKEN_BYTES)
    row = uow.web_sessions.start(secret, used.user_id, csrf, now=now, expires_at=now + lifetime)
    return SignedIn(secret=secret, csrf_token=csrf, user_id=row.user_id, expires_at=row.expires_at)


def session_for(uow: UnitOfWork, secret: object, now: datetime) -> PanelSession | None:
    """The live session of a cookie's secret, or None."""
    if not is_secret(secret):
        return None
    row = uow.web_sessions.find(secret, now)
    return None if row is None else PanelSession(row.user_id, row.csrf_token, row.expires_at)


def sign_out(uow: UnitOfWork, secret: object) -> None:
    if is_secret(secret):
        uow.web_sessions.end(secret)


def is_secret(value: object) -> TypeGuard[str]:
    """Whether ``value`` (a form field or a cookie, as it came) has the shape of a token or session secret."""
    return isinstance(value, str) and bool(_SECRET.fullmatch(value))
