"""The request head limit: a request line or header block over a fixed size is refused before any route.

A request's head reaches the access log, the refusal log and the routing before authentication, so its
size bounds what one unauthenticated request can cost. :class:`HeadLimit` is plain ASGI and outermost: a
request target (path and query) over :data:`MAX_REQUEST_TARGET_BYTES` is answered 414, headers over
:data:`MAX_HEADER_BYTES` in all are answered 431, both with ``Connection: close``; the refusal is logged
with the target cut short. uvicorn's h11 parser refuses a head that arrives in pieces past the same size
(:data:`MAX_HEAD_BYTES`, ``h11_max_incomplete_event_size``) on its own.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from bot.api.errors import error_response, log_refusal

MAX_REQUEST_TARGET_BYTES = 8 * 1024
"""The path and query string together, as sent (percent-encoded): as nginx's default large header buffer."""
MAX_HEADER_BYTES = 16 * 1024
"""Every header name and value together."""
MAX_HEAD_BYTES = MAX_REQUEST_TARGET_BYTES + MAX_HEADER_BYTES
"""What uvicorn buffers of a head that has not arrived whole."""
LOGGED_TARGET_CHARS = 200
CLOSE = {"Connection": "close"}


class HeadLimit:
    """Refuses a too-long request target (414 ``uri_too_long``) or header block (431 ``headers_too_large``)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        target = len(scope.get("raw_path") or scope["path"].encode("utf-8", "surrogatepass")) + len(
            scope.get("query_string", b""))
        headers = sum(len(name) + len(value) for name, value in scope.get("headers", ()))
        if target > MAX_REQUEST_TARGET_BYTES:
            detail = f"The request target is longer than {MAX_REQUEST_TARGET_BYTES} bytes."
            await self._refuse(scope, receive, send, 414, "uri_too_long", detail, f"{target} bytes")
        elif headers > MAX_HEADER_BYTES:
            detail = f"The request headers are larger than {MAX_HEADER_BYTES} bytes."
            await self._refuse(scope, receive, send, 431, "headers_too_large", detail, f"{headers} bytes")
        else:
            await self.app(scope, receive, send)

    @staticmethod
    async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, code: str, detail: str,
                      why: str) -> None:
        log_refusal(scope["method"], scope["path"][:LOGGED_TARGET_CHARS], status, code, why)
        await error_response(status, code, detail, headers=CLOSE)(scope, receive, send)
