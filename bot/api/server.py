"""``mnemo api``: the memory API and panel on the configured database, served by uvicorn.

uvicorn believes ``X-Forwarded-For`` and ``X-Forwarded-Proto`` only from ``TRUSTED_PROXIES``; with
none configured it reads neither, so the address the sign-in limit counts is the connection's own. The h11
parser buffers at most :data:`~bot.api.head_limit.MAX_HEAD_BYTES` of a request head that has not arrived whole.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from bot.api.head_limit import MAX_HEAD_BYTES
from shared.settings import Settings


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """How uvicorn serves the API: proxy headers only from the configured proxies, no server header."""
    proxies = ",".join(settings.trusted_proxies)
    return {"log_level": settings.log_level.lower(), "server_header": False, "http": "h11",
            "h11_max_incomplete_event_size": MAX_HEAD_BYTES,
            "proxy_headers": bool(proxies), "forwarded_allow_ips": proxies or None}


def run_api(settings: Settings, host: str | None = None, port: int | None = None) -> int:
    import uvicorn

    from bot.api.app import create_app
    from bot.api.auth import SignInLimiter
    from shared.app.bootstrap import access_service, runtime
    from shared.app.ops_server import serve_operations
    from shared.commands.panel import PanelService
    from shared.limits import shared_storage
    from shared.usage.policy import UsagePolicy

    with runtime(settings) as rt, serve_operations(settings, rt.database_url, "api", broker=False, llm=False):
        panel = PanelService(rt.uow, session_lifetime=timedelta(hours=settings.panel_session_hours),
                             embeddings_wanted=settings.embeddings_configured,
                             usage_policy=UsagePolicy.from_settings(settings), access=access_service(rt),
                             default_timezone=settings.default_timezone,
                             followup_quiet_hours=settings.followup_quiet_hours)
        token = settings.admin_token.get_secret_value().strip() if settings.admin_token else None
        limiter = SignInLimiter(storage=shared_storage(settings.redis_url, rt.engine))  # shared by replicas
        app = create_app(panel, admin_token=token, public_url=settings.panel_public_url, limiter=limiter,
                         max_body_bytes=settings.api_max_body_bytes)
        uvicorn.run(app, host=host or settings.api_host, port=settings.api_port if port is None else port,
                    log_config=None, **uvicorn_options(settings))  # None: the process's logging (LOG_FORMAT)
    return 0
