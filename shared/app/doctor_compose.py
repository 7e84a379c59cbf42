"""``mnemo doctor`` under docker compose: do the bots ``COMPOSE_PROFILES`` starts have what they need, and
does a bot whose token is set actually run? (docker-compose.yml passes ``COMPOSE_PROFILES`` in; the rest
of ``.env`` arrives through its ``env_file``.)"""

from __future__ import annotations

import os
from collections.abc import Mapping

from shared.app.check import Check
from shared.app.container import BOTS, compose_profiles, webhook_url_problem

WEBHOOK_PROFILE = "telegram-webhook"


def compose_check(environ: Mapping[str, str] = os.environ) -> Check | None:
    """The verdict on the bots this deployment runs; None outside docker compose."""
    profiles = compose_profiles(environ)
    if profiles is None:
        return None
    shown = f"COMPOSE_PROFILES={','.join(profiles)}" if profiles else "COMPOSE_PROFILES (empty)"
    problems, idle, running = [], [], []
    for bot in BOTS:
        starting = [name for name in profiles if name in bot.profiles]
        token = environ.get(bot.token, "").strip()
        if starting and not token:
            problems.append(f"{shown} starts the {bot.platform} bot, but {bot.token} is not set: set it in .env, "
                            f"or take {' and '.join(starting)} out of COMPOSE_PROFILES")
        elif token and not starting:
            idle.append(f"{bot.token} is set, but {shown} starts no {bot.platform} bot: add {bot.profiles[0]} to "
                        "COMPOSE_PROFILES in .env")
        elif starting:
            running.append(bot.platform)
    if WEBHOOK_PROFILE in profiles:
        problems += _webhook_problems(environ, profiles)
    if problems:
        return Check("compose", "fail", "; ".join(problems + idle))
    if idle:
        return Check("compose", "warn", "; ".join(idle))
    if not running:
        return Check("compose", "info", f"{shown}: no bot runs, only the API, worker and beat")
    return Check("compose", "ok", f"{shown}: the {' and '.join(running)} bot{'s' if len(running) > 1 else ''} run")


def _webhook_problems(environ: Mapping[str, str], profiles: tuple[str, ...]) -> list[str]:
    problems = []
    if problem := webhook_url_problem(environ.get("TELEGRAM_WEBHOOK_URL", "")):
        problems.append(problem)
    if not environ.get("TELEGRAM_WEBHOOK_SECRET", "").strip():
        problems.append("profile telegram-webhook needs TELEGRAM_WEBHOOK_SECRET in .env (`openssl rand -hex 32`)")
    if "telegram" in profiles:
        problems.append("profiles telegram and telegram-webhook together: a poller refuses to start while the "
                        "webhook is set; keep one of them")
    return problems
