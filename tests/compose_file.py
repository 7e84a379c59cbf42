"""docker-compose.yml as Compose reads it, for tests that have no Docker engine: the ``.env`` file, the
``${...}`` interpolation (the Compose specification's rules) and each service's environment."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_FILE = ROOT / "docker-compose.yml"
ENV_EXAMPLE = ROOT / ".env.example"
_VARIABLE = re.compile(r"\$(?:(?P<escaped>\$)|\{(?P<name>\w+)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}|(?P<bare>\w+))")


class MissingVariable(Exception):
    """A ``${NAME:?message}`` whose variable is unset (or empty): Compose stops with ``message``."""


def read_env_file(path: Path = ENV_EXAMPLE) -> dict[str, str]:
    """``NAME=value`` lines, as Compose reads an env file (comments and blank lines skipped)."""
    values = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#") and "=" in line:
            name, _, value = line.partition("=")
            values[name.strip()] = value
    return values


def interpolate(value: str, env: Mapping[str, str]) -> str:
    """``value`` with every ``$NAME``, ``${NAME}``, ``${NAME:-default}``, ``${NAME-default}``, ``${NAME:?error}``,
    ``${NAME?error}`` and ``$$`` replaced as Compose does."""

    def replace(match: re.Match[str]) -> str:
        if match["escaped"]:
            return "$"
        name = match["name"] or match["bare"]
        op, current = match["op"], env.get(name)
        empty = current is None or (current == "" and op in (":-", ":?"))
        if op in (":-", "-") and empty:
            return match["arg"]
        if op in (":?", "?") and empty:
            raise MissingVariable(f"{name}: {match['arg']}")
        return current or ""

    return _VARIABLE.sub(replace, value)


def resolved(document: Any, env: Mapping[str, str]) -> Any:
    """The compose document with every string value interpolated (keys are not)."""
    if isinstance(document, dict):
        return {key: resolved(value, env) for key, value in document.items()}
    if isinstance(document, list):
        return [resolved(item, env) for item in document]
    return interpolate(document, env) if isinstance(document, str) else document


def load_compose(env: Mapping[str, str]) -> dict[str, Any]:
    return resolved(yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8")), env)


def service_environment(service: Mapping[str, Any], env_files: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """What a container of ``service`` gets: its env files' values, then its ``environment`` over them."""
    entries = service.get("env_file", [])
    entries = [entries] if isinstance(entries, str | dict) else entries
    values: dict[str, str] = {}
    for entry in entries:
        values.update(env_files[entry["path"] if isinstance(entry, dict) else entry])
    environment = service.get("environment", {})
    if isinstance(environment, list):
        environment = dict(item.split("=", 1) for item in environment)
    values.update({name: "" if value is None else str(value) for name, value in environment.items()})
    return values


def image_environment(dockerfile: Path = ROOT / "Dockerfile") -> dict[str, str]:
    """The ``ENV NAME=value …`` of the Dockerfile: what every container starts with."""
    text = re.sub(r"\\\n", " ", dockerfile.read_text(encoding="utf-8"))
    values = {}
    for line in text.splitlines():
        if line.strip().upper().startswith("ENV "):
            values.update(pair.split("=", 1) for pair in line.split()[1:] if "=" in pair)
    return values
