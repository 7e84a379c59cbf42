"""What an operator deploying Mnemo must be told: that 127.0.0.1 in a container is the container itself;
under docker compose, which bots ``COMPOSE_PROFILES`` starts (docker-compose.yml passes it in, with
``MNEMO_IN_CONTAINER=1``); and that a Telegram webhook needs the bot's own public HTTPS address. Reads
the environment it is given, nothing else but two marker files.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

CONTAINER_MARKERS = (".dockerenv", "run/.containerenv")  # Docker's and Podman's, below the root
HOST_FROM_CONTAINER = "host.docker.internal"
NO = ("0", "false", "no", "off")
EXAMPLE_DOMAINS = ("example.org", "example.com", "example.net")  # RFC 2606: documentation, never a bot's


@dataclass(frozen=True)
class Bot:
    """A platform's bot as docker-compose.yml runs it: the profiles that start it and its token's name."""

    platform: str
    token: str
    profiles: tuple[str, ...]


BOTS = (Bot("Discord", "DISCORD_TOKEN", ("discord", "discord-sharded")),
        Bot("Telegram", "TELEGRAM_TOKEN", ("telegram", "telegram-webhook")))


def in_container(environ: Mapping[str, str] = os.environ, root: Path = Path("/")) -> bool:
    """``MNEMO_IN_CONTAINER`` when set (docker-compose.yml sets 1), else whether Docker's or Podman's
    marker file exists."""
    flag = environ.get("MNEMO_IN_CONTAINER", "").strip().lower()
    if flag:
        return flag not in NO
    return any((root / marker).exists() for marker in CONTAINER_MARKERS)


def is_loopback_host(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def loopback_hint(url: str, variable: str, environ: Mapping[str, str] = os.environ, root: Path = Path("/")) -> str:
    """Why ``url`` may not answer from here, when it names loopback inside a container; else ''."""
    parts = urlsplit(url)
    if not is_loopback_host(parts.hostname or "") or not in_container(environ, root):
        return ""
    port = f":{parts.port}" if parts.port else ""
    on_host = parts._replace(netloc=f"{HOST_FROM_CONTAINER}{port}").geturl()
    return (f"; this runs in a container, where {parts.hostname} is the container itself: for a server on the "
            f"host set {variable}={on_host} (docker-compose.yml maps {HOST_FROM_CONTAINER} to the host), and "
            "have the server listen on an address containers reach, not 127.0.0.1 only")


def compose_profiles(environ: Mapping[str, str] = os.environ) -> tuple[str, ...] | None:
    """The profiles this compose deployment runs; None outside compose (no ``COMPOSE_PROFILES`` at all)."""
    if "COMPOSE_PROFILES" not in environ:
        return None
    return tuple(name.strip() for name in environ["COMPOSE_PROFILES"].split(",") if name.strip())


def missing_token(bot: Bot, how: str, environ: Mapping[str, str] = os.environ) -> str:
    """The message of a bot started without its token: how to get one, and, when compose's profiles
    started it, that the other fix is to take its profile out."""
    message = f"{bot.token} is not set: {how}"
    starting = [name for name in compose_profiles(environ) or () if name in bot.profiles]
    if starting:
        message += (f"; or, if this deployment runs no {bot.platform} bot, take {' and '.join(starting)} out of "
                    f"COMPOSE_PROFILES in .env (now {environ['COMPOSE_PROFILES']})")
    return message


def webhook_url_problem(url: str) -> str | None:
    """Why Telegram could not post updates to ``url`` (empty, not https, the example's address); None if it can."""
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").lower()
    if not url.strip():
        return ("webhook mode needs the public HTTPS URL Telegram posts updates to: set TELEGRAM_WEBHOOK_URL in .env "
                "(docker compose passes it as --webhook-url), e.g. https://bot.<your domain>/telegram")
    if parts.scheme != "https" or not host:
        return (f"the Telegram webhook URL (TELEGRAM_WEBHOOK_URL, passed as --webhook-url) must be the https:// "
                f"address Telegram posts updates to, not {url!r}")
    if any(host == domain or host.endswith(f".{domain}") for domain in EXAMPLE_DOMAINS):
        return (f"the Telegram webhook URL {url} is an example address, not your bot's: set TELEGRAM_WEBHOOK_URL "
                "in .env to the public HTTPS URL your reverse proxy serves")
    return None
