"""Signing in and out: the page a /panel link opens, the session cookie, and who is signed in."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, Form, Header, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from bot.api.auth import COOKIE, Principal, context, principal
from bot.api.errors import ApiError, accepted_language
from bot.api.json_body import CheckedJsonRoute
from bot.api.schemas import ErrorOut, SessionOut
from shared.accounts.panel_access import SIGN_IN_PATH, is_secret
from shared.errors import ConfirmationInvalid

PANEL_PATH = "/panel/"
SIGN_IN_PAGE = Path(__file__).with_name("sign_in.html")
PAGE_TEXTS = {
    "en": {"lang": "en", "title": "Sign in to Mnemo", "button": "Sign in",
           "lead": "This link signs you in to your memories, once. Press the button to continue.",
           "invalid": "This sign-in link is unknown, used or expired. Send /panel to the bot for a new one."},
    "zh": {"lang": "zh", "title": "登录 Mnemo", "button": "登录",
           "lead": "这个链接可以登录你的记忆面板，只能用一次。点击按钮继续。",
           "invalid": "这个登录链接无效、已使用或已过期。请向机器人发送 /panel 获取新链接。"},
}

router = APIRouter(route_class=CheckedJsonRoute)


@router.get(SIGN_IN_PATH, response_class=HTMLResponse, include_in_schema=False)
def sign_in_page(request: Request, token: str = "",
                 accept_language: Annotated[str | None, Header()] = None) -> HTMLResponse:
    """The page a /panel link opens; only its button uses the token (link previews don't)."""
    return _page(_texts(accept_language), token if is_secret(token) else None)


@router.post(SIGN_IN_PATH, include_in_schema=False)
def sign_in(request: Request, token: Annotated[str, Form(max_length=64)] = "",
            origin: Annotated[str | None, Header()] = None,
            accept_language: Annotated[str | None, Header()] = None) -> Response:
    """Use the link's token up, set the session cookie and open the panel; a wrong token counts as a failure."""
    ctx = context(request)
    if origin is not None and origin != ctx.public_origin:  # PANEL_PUBLIC_URL's, never one the Host header claims
        raise ApiError(403, "bad_origin", "Sign in from the panel's own page.")
    try:
        signed_in = ctx.panel.sign_in(token)
    except ConfirmationInvalid:
        ctx.limiter.failed(request.client.host if request.client else "unknown")  # 429 once over the limit
        return _page(_texts(accept_language), None, status=400)
    response = RedirectResponse(PANEL_PATH, status_code=303)
    response.set_cookie(COOKIE, signed_in.secret, expires=signed_in.expires_at, path="/", httponly=True,
                        samesite="strict", secure=ctx.secure_cookies)
    return response


@router.get("/api/v1/session", response_model=SessionOut, tags=["session"],
            responses={401: {"model": ErrorOut}, 404: {"model": ErrorOut}})
def current_session(request: Request, caller: Annotated[Principal, Depends(principal)]) -> SessionOut:
    """Who is signed in, and the CSRF token the panel sends back on every change."""
    account = context(request).panel.account(caller.user_id)
    return SessionOut(user_id=account.user_id, display_name=account.display_name, locale=account.locale,
                      csrf_token=caller.csrf_token, expires_at=caller.expires_at, admin=caller.admin)


@router.post("/api/v1/session/sign-out", status_code=204, tags=["session"],
             responses={401: {"model": ErrorOut}, 403: {"model": ErrorOut}})
def sign_out(request: Request, caller: Annotated[Principal, Depends(principal)]) -> Response:
    """End this browser's session."""
    ctx = context(request)
    if not caller.admin:
        ctx.panel.sign_out(request.cookies.get(COOKIE))
    response = Response(status_code=204)
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict", secure=ctx.secure_cookies)
    return response


def _page(texts: dict[str, str], token: str | None, status: int = 200) -> HTMLResponse:
    if token is None:
        body = f'<p class="notice error">{html.escape(texts["invalid"])}</p>'
    else:
        body = (f'<p>{html.escape(texts["lead"])}</p>'
                f'<form method="post" action="{SIGN_IN_PATH}">'
                f'<input type="hidden" name="token" value="{html.escape(token)}">'
                f'<button type="submit" id="sign-in" class="primary">{html.escape(texts["button"])}</button></form>')
    page = SIGN_IN_PAGE.read_text(encoding="utf-8")
    page = page.replace("{lang}", texts["lang"]).replace("{title}", html.escape(texts["title"]))
    return HTMLResponse(page.replace("{body}", body), status_code=status)


def _texts(accept_language: str | None) -> dict[str, str]:
    return PAGE_TEXTS[accepted_language(accept_language)]
