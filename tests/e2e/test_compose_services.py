"""Every service of docker-compose.yml started as its container starts, without a Docker engine: its own
command with the environment Compose gives it (the image's ENV, then ``.env`` — ``.env.example`` as an
operator fills it in — then the service's ``environment``), the compose hosts ``postgres`` and ``redis``
mapped to 127.0.0.1, its volume to a directory and its ports to free ones. Each reaches its ready state
(Compose's health check, ``mnemo health``, passes; a one-shot exits 0, a bot reaches its platform, here the
fakes), or, without what it needs, refuses at once (exit status 2) saying what to set."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from bench.databases import create_database, drop_database
from bench.fakes.discord_api import FakeDiscord
from bench.fakes.discord_gateway import FakeGateway
from bench.fakes.telegram_api import FakeTelegram
from tests.compose_file import ROOT, image_environment, load_compose, read_env_file, service_environment
from tests.e2e.bot_process import stop

READY_SECONDS = 120
REFUSAL_SECONDS = 60
COMPOSE_HOSTS = ("postgres", "redis")
REDIS_DB = 5
"""This file's own Redis database (compose's is 0, which other tests' processes may share)."""
WEBHOOK_URL = "https://bot.mnemo.test/telegram"
WEBHOOK_SECRET = "compose-secret_0123456789abcdef"

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def database(system_pg_admin_url: str) -> Iterator[str]:
    """The compose database (an empty one of its own), named as the operator's POSTGRES_DB."""
    url = create_database(system_pg_admin_url)
    yield urlsplit(url).path.lstrip("/")
    drop_database(system_pg_admin_url, url)


@pytest.fixture(scope="module")
def migrated(database: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The one-shot ``migrate`` service run first, as every other service waits for it."""
    migrate = Container("migrate", operator(database), tmp_path_factory.mktemp("migrate"))
    assert migrate.process.wait(timeout=READY_SECONDS) == 0, migrate.output()
    assert "Schema at" in migrate.output()
    return database


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def operator(database: str, **values: str) -> dict[str, str]:
    """``.env`` as an operator makes it: .env.example with the database password filled in (and the local
    server's user and a database of this test's), plus ``values``."""
    return {**read_env_file(), "POSTGRES_PASSWORD": "a1b2c3d4e5f6", "POSTGRES_USER": "postgres",
            "POSTGRES_DB": database, **values}


class Container:
    """One service's command, run as its container would run it."""

    def __init__(self, name: str, dotenv: dict[str, str], volume: Path) -> None:
        self.service = load_compose(dotenv)["services"][name]
        self.log = volume / "output.log"
        self.env = self._environment(dotenv, volume)
        with open(self.log, "wb") as output:
            self.process = subprocess.Popen(self._local(self.service["command"]), env=self.env, cwd=volume,
                                            stdout=output, stderr=subprocess.STDOUT, start_new_session=True)

    def _environment(self, dotenv: dict[str, str], volume: Path) -> dict[str, str]:
        env = {**image_environment(), **service_environment(self.service, {".env": dotenv})}
        for name in ("DATABASE_URL", "REDIS_URL"):
            parts = urlsplit(env[name])
            assert parts.hostname in COMPOSE_HOSTS, env[name]
            host_at = parts.netloc.rpartition("@")
            env[name] = parts._replace(netloc=f"{host_at[0]}{host_at[1]}127.0.0.1:{parts.port}").geturl()
        env["REDIS_URL"] = urlsplit(env["REDIS_URL"])._replace(path=f"/{REDIS_DB}").geturl()
        env.update(MNEMO_DATA_DIR=str(volume), METRICS_PORT=str(free_port()), METRICS_HOST="127.0.0.1",
                   PATH=os.environ["PATH"], HOME=str(volume), PYTHONPATH=str(ROOT))
        return env

    @staticmethod
    def _local(command: list[str]) -> list[str]:
        """``mnemo …`` as this Python runs it; 0.0.0.0 (the container's every interface) is loopback here and
        a fixed port a free one."""
        local = [sys.executable, "-m", "shared.app.cli", *command[1:]]
        for flag in ("--listen", "--host", "--port"):
            if flag in local:
                local[local.index(flag) + 1] = str(free_port()) if flag == "--port" else "127.0.0.1"
        return local

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def healthy(self) -> bool:
        """Compose's health check, run as Compose runs it in the container."""
        check = self._local(self.service["healthcheck"]["test"][1:])
        return subprocess.run(check, env=self.env, capture_output=True, timeout=30).returncode == 0

    def wait_healthy(self) -> None:
        deadline = time.monotonic() + READY_SECONDS
        while not self.healthy():
            assert self.process.poll() is None, f"exited {self.process.returncode}:\n{self.output()[-3000:]}"
            assert time.monotonic() < deadline, f"not healthy within {READY_SECONDS} s:\n{self.output()[-3000:]}"
            time.sleep(1)

    def refusal(self) -> str:
        """What it said when it refused to start (exit status 2, within seconds)."""
        assert self.process.wait(timeout=REFUSAL_SECONDS) == 2, self.output()
        return self.output()


@pytest.fixture
def run(tmp_path: Path) -> Iterator:
    started: list[Container] = []

    def start(name: str, dotenv: dict[str, str]) -> Container:
        volume = tmp_path / f"{name}-{len(started)}"
        volume.mkdir()
        started.append(Container(name, dotenv, volume))
        return started[-1]

    yield start
    for container in started:
        stop(container.process)


@pytest.mark.parametrize("name", ["api", "worker", "beat"])
def test_the_services_every_deployment_runs_become_healthy_from_a_copied_env_example(run, migrated, name) -> None:
    container = run(name, operator(migrated))
    container.wait_healthy()


@pytest.mark.parametrize(("name", "profile", "token", "fix"), [
    ("discord-sync", "discord", "DISCORD_TOKEN", "take discord out of COMPOSE_PROFILES in .env (now discord)"),
    ("bot-discord", "discord", "DISCORD_TOKEN", "take discord out of COMPOSE_PROFILES in .env (now discord)"),
    ("bot-discord-shards-even", "discord-sharded", "DISCORD_TOKEN", "take discord-sharded out of COMPOSE_PROFILES"),
    ("bot-telegram", "telegram", "TELEGRAM_TOKEN", "take telegram out of COMPOSE_PROFILES in .env (now telegram)"),
    ("bot-telegram-webhook", "telegram-webhook", "TELEGRAM_TOKEN", "take telegram-webhook out of COMPOSE_PROFILES"),
])
def test_a_bot_whose_profile_runs_without_its_token_refuses_naming_the_token_and_the_profile(
        run, migrated, name, profile, token, fix) -> None:
    said = run(name, operator(migrated, COMPOSE_PROFILES=profile)).refusal()
    assert f"{token} is not set" in said, said
    assert fix in said, said


@pytest.mark.parametrize(("url", "words"), [("", "set TELEGRAM_WEBHOOK_URL in .env"),
                                            ("https://bot.example.org/telegram", "is an example address")])
def test_webhook_replicas_without_the_bots_own_public_url_refuse_to_start(run, migrated, url, words) -> None:
    dotenv = operator(migrated, COMPOSE_PROFILES="telegram-webhook", TELEGRAM_TOKEN="123:ABC",
                      TELEGRAM_WEBHOOK_SECRET=WEBHOOK_SECRET, TELEGRAM_WEBHOOK_URL=url)
    said = run("bot-telegram-webhook", dotenv).refusal()
    assert words in said, said


def test_the_discord_services_publish_the_commands_and_connect_each_shard(run, migrated) -> None:
    with FakeDiscord() as discord, FakeGateway(discord, shard_count=2) as gateway:
        dotenv = operator(migrated, COMPOSE_PROFILES="discord", DISCORD_TOKEN=discord.token,
                          DISCORD_API_BASE_URL=discord.base_url)
        sync = run("discord-sync", dotenv)
        assert sync.process.wait(timeout=READY_SECONDS) == 0, sync.output()
        assert discord.command_syncs, "discord-sync published no commands"
        for name, shards in (("bot-discord", {0, 1}), ("bot-discord-shards-even", {0}),
                             ("bot-discord-shards-odd", {1})):
            bot = run(name, {**dotenv, "COMPOSE_PROFILES": "discord-sharded" if "shards" in name else "discord"})
            bot.wait_healthy()
            gateway.wait_ready(shards, timeout=READY_SECONDS)
            stop(bot.process)  # one connection per shard at a time, as the profiles never run them together


@pytest.mark.parametrize("profile", ["telegram", "telegram-webhook"])
def test_the_telegram_services_reach_telegram_when_configured(run, migrated, profile) -> None:
    with FakeTelegram() as telegram:
        dotenv = operator(migrated, COMPOSE_PROFILES=profile, TELEGRAM_TOKEN=telegram.token,
                          TELEGRAM_API_BASE_URL=telegram.base_url, TELEGRAM_WEBHOOK_URL=WEBHOOK_URL,
                          TELEGRAM_WEBHOOK_SECRET=WEBHOOK_SECRET)
        bot = run("bot-telegram-webhook" if profile == "telegram-webhook" else "bot-telegram", dotenv)
        bot.wait_healthy()
        if profile == "telegram-webhook":
            telegram.wait_for(lambda: telegram.webhook, timeout=READY_SECONDS)
            assert telegram.webhook["url"] == WEBHOOK_URL
            assert telegram.webhook["secret_token"] == WEBHOOK_SECRET
        else:
            telegram.wait_for(lambda: telegram.calls_to("getUpdates"), timeout=READY_SECONDS)
