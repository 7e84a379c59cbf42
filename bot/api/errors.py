"""How the API answers errors: ``{"code": ..., "detail": ...}`` with the right status.

Domain errors from the services keep their key as ``code`` and their English text as ``detail``;
anything unexpected is logged with its traceback and answered 500 without details.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from shared.commands.texts import error_text
from shared.errors import ConfirmationInvalid, InvalidCommand, NotFound

log = logging.getLogger(__name__)
MAX_REPORTED_PROBLEMS = 20


class ApiError(Exception):
    """An answer other than success, raised by the API's own checks (auth, CSRF, rate limit)."""

    def __init__(self, status: int, code: str, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(code)
        self.status, self.code, self.detail, self.headers = status, code, detail, headers


def error_response(status: int, code: str, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"code": code, "detail": detail}, status_code=status, headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.detail, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def malformed(_request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [{"where": ".".join(str(part) for part in error.get("loc", ())), "problem": str(error.get("msg"))}
                    for error in exc.errors()[:MAX_REPORTED_PROBLEMS]]
        first = problems[0] if problems else {"where": "request", "problem": "invalid"}
        return JSONResponse({"code": "invalid", "detail": f"{first['where']}: {first['problem']}",
                             "problems": problems}, status_code=422)

    @app.exception_handler(NotFound)
    async def not_found(_request: Request, exc: NotFound) -> JSONResponse:
        code = _key(exc, "not_found")
        return error_response(404, code, error_text(exc, "en"))

    @app.exception_handler(InvalidCommand)
    async def invalid(_request: Request, exc: InvalidCommand) -> JSONResponse:
        return error_response(422, exc.key, error_text(exc, "en"))

    @app.exception_handler(ConfirmationInvalid)
    async def expired(_request: Request, exc: ConfirmationInvalid) -> JSONResponse:
        return error_response(400, exc.key, error_text(exc, "en"))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
        return error_response(500, "unexpected", "Something went wrong.")


def _key(exc: Exception, default: str) -> str:
    key = exc.args[0] if exc.args and isinstance(exc.args[0], str) else default
    return key
