"""The request body limit: a body over the limit is answered 413 before the app reads it.

:class:`BodyLimit` is plain ASGI and sits outside every route, so the check comes before
authentication, before FastAPI reads or parses a body and before a multipart file is spooled. A
declared ``Content-Length`` over the limit is refused before the app sees a byte of the body; a
chunked body is counted as it arrives and refused on the chunk that crosses the limit.

Most clients (Python's urllib and http.client, a browser's ``fetch`` of a form) send the whole body
before they read the answer. A server that answers and closes while body bytes are still arriving
makes the kernel reset the connection, and such a client sees the reset, not the 413. So the rest of a
refused body is read and thrown away first, while the whole body stays within :data:`DRAIN_FACTOR`
times the limit and arrives within :data:`DRAIN_SECONDS`; then the 413 is sent. A body declared
larger than that, a client that asks ``Expect: 100-continue`` (it sends nothing more until told), or a
sender too slow is answered at once. Every answer carries ``Connection: close``.
"""

from __future__ import annotations

import asyncio
import time

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bot.api.errors import HTTP_CODES, error_response, log_refusal

CODE = HTTP_CODES[413]
CLOSE = {"Connection": "close"}
DRAIN_FACTOR = 4
"""A refused body is read to its end (and thrown away) only while it stays within this many times the limit."""
DRAIN_SECONDS = 15.0
"""…and only for this long, counted from the refusal."""


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
        self.drain_bytes = max_bytes * DRAIN_FACTOR

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        declared = _content_length(headers)
        drains = headers.get("expect", "").lower() != "100-continue"
        if declared is not None and declared > self.max_bytes:
            log_refusal(scope["method"], scope["path"], 413, CODE, f"Content-Length {declared}")
            if drains and declared <= self.drain_bytes:
                await self._drain(receive, 0)
            response = error_response(413, CODE, too_large_detail(self.max_bytes), headers=CLOSE)
            await response(scope, receive, send)
            return
        await self.app(scope, self._counting(receive, drains), send)

    def _counting(self, receive: Receive, drains: bool) -> Receive:
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    if drains and message.get("more_body", False):
                        await self._drain(receive, received)
                    raise BodyTooLarge(self.max_bytes)
            return message

        return counted

    async def _drain(self, receive: Receive, received: int) -> None:
        """Read and throw away the rest of the body, up to the drain limits."""
        deadline = time.monotonic() + DRAIN_SECONDS
        while received <= self.drain_bytes:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                message = await asyncio.wait_for(receive(), left)
            except TimeoutError:
                return
            if message["type"] != "http.request":
                return
            received += len(message.get("body", b""))
            if not message.get("more_body", False):
                return


def _content_length(headers: Headers) -> int | None:
    value = headers.get("content-length", "")
    return int(value) if value.isascii() and value.isdigit() else None
