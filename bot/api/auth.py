"""Who a request acts for: a panel session (cookie + CSRF header) or an operator (bearer token).

Every user endpoint depends on :func:`principal`; it yields exactly one user id, and the services
scope every query by it. Operators name the user with ``X-Mnemo-User``. Failed sign-ins are
counted per client address by :class:`SignInLimiter`.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from fastapi import Depends, Header, Request
from fastapi.security import APIKeyCookie, HTTPAuthorizationCredentials, HTTPBearer
from limits import RateLimitItemPerSecond
from limits.storage import MemoryStorage, Storage

from bot.api.errors import ApiError
from shared.commands.panel import PanelService
from shared.limits import SharedLimit

COOKIE = "mnemo_session"
CSRF_HEADER = "X-CSRF-Token"
USER_HEADER = "X-Mnemo-User"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
SIGN_INS_PER_MINUTE = 10
SIGN_INS_PER_MINUTE_ALL = 120
"""All addresses together: a spread-out guessing attempt still hits a ceiling."""
MAX_USER_ID = 2**63 - 1

session_cookie = APIKeyCookie(name=COOKIE, auto_error=False, description="set by signing in through a /panel link")
admin_bearer = HTTPBearer(auto_error=False, description="ADMIN_TOKEN, with the X-Mnemo-User header")


@dataclass(frozen=True)
class Principal:
    """The user a request acts for, and how it proved it."""

    user_id: int
    admin: bool
    csrf_token: str | None = None
    expires_at: datetime | None = None


@dataclass(frozen=True)
class ApiContext:
    """What the API's routes use, built once per process."""

    panel: PanelService
    admin_token: str | None
    secure_cookies: bool
    public_origin: str
    limiter: SignInLimiter


def context(request: Request) -> ApiContext:
    return request.app.state.context


def principal(request: Request, cookie: Annotated[str | None, Depends(session_cookie)],
              bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(admin_bearer)],
              user: Annotated[str | None, Header(alias=USER_HEADER, description="operators: the user id")] = None,
              csrf: Annotated[str | None, Header(alias=CSRF_HEADER, description="panel: the session's token")] = None,
              ) -> Principal:
    """The signed-in user (or the user an operator names); 401, 403 or 404 otherwise."""
    ctx = context(request)
    if bearer is not None:
        return _operator(ctx, bearer.credentials, user)
    session = ctx.panel.session(cookie) if cookie else None
    if session is None:
        raise ApiError(401, "not_signed_in", "Sign in through the link /panel gives you in the bot.")
    if request.method not in SAFE_METHODS and not (csrf and hmac.compare_digest(
            csrf.encode("utf-8", "surrogatepass"), session.csrf_token.encode())):
        raise ApiError(403, "csrf", f"Send the session's CSRF token in the {CSRF_HEADER} header.")
    return Principal(session.user_id, admin=False, csrf_token=session.csrf_token, expires_at=session.expires_at)


def adding_principal(request: Request, caller: Annotated[Principal, Depends(principal)]) -> Principal:
    """:func:`principal`, for what adds to the user's data or costs: a blocked user's panel session is refused
    (403 ``blocked_adding``); an operator's token is not."""
    if not caller.admin:
        context(request).panel.check_may_add(caller.user_id)
    return caller


def operator(request: Request,
             bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(admin_bearer)]) -> None:
    """Operators' endpoints: the admin token, and no user named; 401 otherwise."""
    _check_admin_token(context(request), bearer.credentials if bearer is not None else None)


def _check_admin_token(ctx: ApiContext, token: str | None) -> None:
    if token is None or ctx.admin_token is None or not hmac.compare_digest(
            token.encode("utf-8", "surrogatepass"), ctx.admin_token.encode()):
        raise ApiError(401, "bad_admin_token", "That bearer token is not the operators' token.")


def _operator(ctx: ApiContext, token: str, user: str | None) -> Principal:
    _check_admin_token(ctx, token)
    if user is None or not user.strip().isascii() or not user.strip().isdigit() or not (
            1 <= int(user.strip()) <= MAX_USER_ID):
        raise ApiError(422, "user_required", f"Operators name the user with the {USER_HEADER} header (a user id).")
    account = ctx.panel.account(int(user.strip()))  # NotFound for an unknown user
    return Principal(account.user_id, admin=True)


class SignInLimiter:
    """Counts failed sign-ins: once an address has ``per_address`` failures in a minute, or all addresses
    together ``overall``, further wrong tokens are answered 429. Only failures count, and a valid link is
    always checked and signs in, so no one else's guessing locks a user out. The counts live in
    ``storage`` (:func:`shared.limits.shared_storage`: Redis or PostgreSQL), so every API replica shares
    them and a restart forgets nothing; without one, in this process's memory."""

    def __init__(self, per_address: int = SIGN_INS_PER_MINUTE, overall: int = SIGN_INS_PER_MINUTE_ALL, *,
                 storage: Storage | None = None, window_seconds: int = 60) -> None:
        storage = storage or MemoryStorage()
        self.per_address = SharedLimit(storage, "sign-in", RateLimitItemPerSecond(per_address, window_seconds))
        self.overall = SharedLimit(storage, "sign-in-all", RateLimitItemPerSecond(overall, window_seconds))

    def failed(self, address: str) -> None:
        """Count one wrong token; raise 429 with the seconds to wait once the limit is reached."""
        waits = [wait for wait in (self.overall.hit(), self.per_address.hit(address)) if wait is not None]
        if waits:
            raise ApiError(429, "rate_limited", "Too many failed sign-in attempts; wait a minute.",
                           headers={"Retry-After": str(int(max(waits)))})
