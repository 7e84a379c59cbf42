"""The API's own address is ``PANEL_PUBLIC_URL``, never what a request's ``Host`` header claims.

Everything that builds a URL from the request (Starlette's redirect of ``/panel`` to ``/panel/``, an
absolute ``Location``, the sign-in form's ``Origin`` check) reads the scheme and host of the scope.
This plain ASGI layer sets both from the public URL before anything else reads them, so a request
with a foreign ``Host`` can neither send a browser elsewhere nor make its own origin pass the check.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send


def public_origin(public_url: str) -> str:
    """``scheme://host[:port]`` of the public URL."""
    parts = urlsplit(public_url)
    return f"{parts.scheme}://{parts.netloc}"


class PublicOrigin:
    """Every HTTP request is seen as addressed to the public URL's scheme and host."""

    def __init__(self, app: ASGIApp, *, public_url: str) -> None:
        self.app = app
        parts = urlsplit(public_url)
        self.scheme, self.host = parts.scheme, parts.netloc.encode("latin-1")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = [(name, value) for name, value in scope["headers"] if name != b"host"]
            scope = {**scope, "scheme": self.scheme, "headers": [(b"host", self.host), *headers]}
        await self.app(scope, receive, send)
