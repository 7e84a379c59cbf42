"""The request body limit: a body over the limit is answered 413 before it is read whole.

:class:`BodyLimit` is plain ASGI and sits outside every route, so the check comes before
authentication, before FastAPI reads or parses a body and before a multipart file is spooled. A
declared ``Content-Length`` over the limit is refused before a byte of the body is read; a chunked
body is counted as it arrives and refused on the chunk that crosses the limit, after which nothing
more is read. Either answer carries ``Connection: close``, so the server stops reading the rest.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bot.api.errors import HTTP_CODES, error_response, log_refusal

CODE = HTTP_CODES[413]
CLOSE = {"Connection": "close"}


class BodyTooLarge(HTTPException):
    """Raised by the counting ``receive``; an :class:`HTTPException`, so FastAPI passes it on as it is."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, detail=too_large_detail(limit), headers=CLOSE)


def too_large_detail(limit: int) -> str:
    return f"The request body is larger than {limit} bytes."


class BodyLimit:
    """Refuses request bodies over ``max_bytes`` with 413 ``too_large``."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            log_refusal(scope["method"], scope["path"], 413, CODE, f"Content-Length {declared}")
            response = error_response(413, CODE, too_large_detail(self.max_bytes), headers=CLOSE)
            await response(scope, receive, send)
            return
        await self.app(scope, self._counting(receive), send)

    def _counting(self, receive: Receive) -> Receive:
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        return counted


def _content_length(scope: Scope) -> int | None:
    value = Headers(scope=scope).get("content-length", "")
    return int(value) if value.isascii() and value.isdigit() else None
