"""The ``mnemo api`` application: the memory API, the sign-in pages and the panel's files.

:func:`create_app` takes everything it uses (the panel service, the admin token, cookie policy), so
tests build it on any database. Every answer carries security headers: a Content-Security-Policy
that allows only the panel's own files, a same-origin referrer policy (a sign-in link never leaks to
another site, and browsers still send the ``Origin`` the sign-in form is checked against), no
framing, and ``no-store`` for the API and the sign-in page.

Before anything else, a request line or header block over a fixed size is refused
(:mod:`bot.api.head_limit`); before any route, a body over ``max_body_bytes`` is refused
(:mod:`bot.api.body_limit`); routes read JSON bodies strictly (:mod:`bot.api.json_body`); an
unexpected error is answered 500 and logged once (:class:`bot.api.errors.ServerErrors`). Each answer
is counted in the metrics by route template and status.
"""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import urlsplit

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from bot.api import routes_conversation, routes_memory, routes_session, routes_settings, routes_usage
from bot.api.auth import ApiContext, SignInLimiter, context
from bot.api.body_limit import BodyLimit
from bot.api.errors import ServerErrors, install_error_handlers
from bot.api.head_limit import HeadLimit
from bot.api.json_body import CheckedJsonRoute
from bot.api.public_origin import PublicOrigin, public_origin
from shared.commands.panel import PanelService
from shared.metrics import record
from shared.settings import DEFAULT_API_MAX_BODY_BYTES

PANEL_DIR = Path(__file__).resolve().parent.parent / "panel"
SECURITY_HEADERS = {
    "Content-Security-Policy": ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                                "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}
NO_STORE_PREFIXES = ("/api/", "/panel/sign-in")


def create_app(panel: PanelService, *, admin_token: str | None, public_url: str,
               limiter: SignInLimiter | None = None, max_body_bytes: int = DEFAULT_API_MAX_BODY_BYTES) -> FastAPI:
    app = FastAPI(title="Mnemo memory API", version="1", openapi_url="/api/openapi.json", docs_url=None,
                  redoc_url=None, description="What Mnemo remembers about a user: see, change, forget, export.")
    app.state.context = ApiContext(panel=panel, admin_token=admin_token,
                                   secure_cookies=urlsplit(public_url).scheme == "https",
                                   public_origin=public_origin(public_url), limiter=limiter or SignInLimiter())
    app.router.route_class = CheckedJsonRoute
    install_error_handlers(app)
    app.add_middleware(ServerErrors)  # added first, so innermost: outside it only what is added below
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)

    @app.middleware("http")
    async def security_headers(request: Request, call_next):
        response = await call_next(request)
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        if request.url.path.startswith(NO_STORE_PREFIXES):
            response.headers["Cache-Control"] = "no-store"
        return response

    @app.middleware("http")
    async def count_requests(request: Request, call_next):
        started = time.perf_counter()
        response = await call_next(request)
        route = getattr(request.scope.get("route"), "path", None) or "unmatched"  # the template, never the path
        record.http_request(request.method, route, response.status_code, time.perf_counter() - started)
        return response

    app.add_middleware(PublicOrigin, public_url=public_url)  # the Host header is never believed
    app.add_middleware(HeadLimit)  # added last, so outermost: a too-long head is refused before anything reads it

    @app.get("/api/v1/health", tags=["health"])
    def health(request: Request) -> dict[str, str]:
        """200 when the database answers."""
        with context(request).panel.uow_factory() as uow:
            uow.ping()
        return {"status": "ok"}

    @app.get("/", include_in_schema=False)
    def home() -> RedirectResponse:
        return RedirectResponse(routes_session.PANEL_PATH)

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> Response:
        """The panel has no icon (its pages say so with an empty one): nothing, rather than a 404 in the log."""
        return Response(status_code=204)

    app.include_router(routes_session.router)
    app.include_router(routes_memory.router)
    app.include_router(routes_conversation.router)
    app.include_router(routes_usage.router)
    app.include_router(routes_settings.router)
    app.mount("/panel", StaticFiles(directory=PANEL_DIR, html=True, check_dir=False), name="panel")
    return app
