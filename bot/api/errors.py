"""How the API answers errors: ``{"code": ..., "detail": ...}`` with the right status.

Domain errors from the services keep their key as ``code`` and their text, in the language the client asks for
(``Accept-Language``: Chinese or English, from the one table of ``shared.commands.texts``), as ``detail``;
a request FastAPI or Starlette refuses (a malformed body, an unknown path, a wrong method) gets the
same shape. Each refusal is logged as one line without a traceback. Anything unexpected is caught
by :class:`ServerErrors`, logged once with its traceback and answered 500 without details; the
exception goes no further, so the server neither logs it again nor drops the connection.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shared.commands.texts import error_text
from shared.errors import AccessRefused, ConfirmationInvalid, DatabaseUnavailable, InvalidCommand, NotFound
from shared.text import Language, is_chinese

log = logging.getLogger(__name__)
MAX_REPORTED_PROBLEMS = 20
HTTP_CODES = {400: "bad_request", 404: "not_found", 405: "method_not_allowed", 413: "too_large"}
"""The ``code`` of an answer Starlette or FastAPI gives by status (the route was not reached)."""


class ApiError(Exception):
    """An answer other than success, raised by the API's own checks (auth, CSRF, rate limit)."""

    def __init__(self, status: int, code: str, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(code)
        self.status, self.code, self.detail, self.headers = status, code, detail, headers


def accepted_language(accept_language: str | None) -> Language:
    """The language a client asks for (the first of its ``Accept-Language``): Chinese for ``zh…``, else English."""
    return Language.ZH if is_chinese((accept_language or "").split(",")[0].strip()) else Language.EN


def request_language(request: Request) -> Language:
    """The language of an error's ``detail`` for this request; its ``code`` is the same in every language."""
    return accepted_language(request.headers.get("accept-language"))


def error_response(status: int, code: str, detail: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"code": code, "detail": detail}, status_code=status, headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return _refused(request, exc.status, exc.code, exc.detail, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def malformed(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [_problem(error) for error in exc.errors()[:MAX_REPORTED_PROBLEMS]]
        first = problems[0] if problems else {"where": "request", "problem": "invalid"}
        detail = f"{first['where']}: {first['problem']}"
        log_refusal(request.method, request.url.path, 422, "invalid", detail)
        return JSONResponse({"code": "invalid", "detail": detail, "problems": problems}, status_code=422)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        return _refused(request, exc.status_code, HTTP_CODES.get(exc.status_code, "http_error"), str(exc.detail),
                        exc.headers)

    @app.exception_handler(NotFound)
    async def not_found(request: Request, exc: NotFound) -> JSONResponse:
        return _refused(request, 404, _key(exc, "not_found"), error_text(exc, request_language(request)))

    @app.exception_handler(InvalidCommand)
    async def invalid(request: Request, exc: InvalidCommand) -> JSONResponse:
        return _refused(request, 422, exc.key, error_text(exc, request_language(request)))

    @app.exception_handler(AccessRefused)
    async def refused(request: Request, exc: AccessRefused) -> JSONResponse:
        return _refused(request, 403, exc.key, error_text(exc, request_language(request)))

    @app.exception_handler(ConfirmationInvalid)
    async def expired(request: Request, exc: ConfirmationInvalid) -> JSONResponse:
        return _refused(request, 400, exc.key, error_text(exc, request_language(request)))

    @app.exception_handler(DatabaseUnavailable)
    async def database_away(request: Request, exc: DatabaseUnavailable) -> JSONResponse:
        log.warning("%s %r: the database is unavailable: %s", request.method, request.url.path, exc.__cause__ or exc)
        return error_response(503, "database_unavailable", error_text(exc, request_language(request)),
                              {"Retry-After": "30"})


def log_refusal(method: str, path: str, status: int, code: str, why: str = "") -> None:
    """One line for a request the API refused: the client's mistake, so no traceback."""
    log.info("refused %s %r: %d %s%s", method, path, status, code, f" ({why})" if why else "")


class ServerErrors:
    """Answers an unexpected exception 500 ``unexpected`` and logs it once, with its traceback.

    It sits inside Starlette's own last-resort handler, which would log the exception, answer and
    then raise it again to the server (a second log and a closed keep-alive connection).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except Exception as exc:  # every route's last resort: logged with the traceback, answered 500
            log.error("unexpected error on %s %r", scope["method"], scope["path"], exc_info=exc)
            if not started:  # else the answer is cut short: the server closes the connection
                await error_response(500, "unexpected", "Something went wrong.")(scope, receive, send)


def _refused(request: Request, status: int, code: str, detail: str,
             headers: Mapping[str, str] | None = None) -> JSONResponse:
    log_refusal(request.method, request.url.path, status, code)
    return error_response(status, code, detail, headers)


def _problem(error: dict[str, Any]) -> dict[str, str]:
    if error.get("type") == "json_invalid":  # the body is not JSON the API reads: say why, not where
        why = error.get("ctx", {}).get("error", "unreadable")
        return {"where": "body", "problem": f"cannot be read as JSON: {why}"}
    return {"where": ".".join(str(part) for part in error.get("loc", ())), "problem": str(error.get("msg"))}


def _key(exc: Exception, default: str) -> str:
    key = exc.args[0] if exc.args and isinstance(exc.args[0], str) else default
    return key
