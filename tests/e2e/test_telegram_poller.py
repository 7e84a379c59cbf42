"""One long poller per Telegram bot: a second ``mnemo telegram`` of the same database is refused before it
asks Telegram anything, one that Telegram refuses (409: a poller of another deployment) stops and says so, and
none takes the updates of a bot whose webhook (replicas) is set."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.fakes.telegram_api import FakeTelegram
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def telegram() -> Iterator[FakeTelegram]:
    with FakeTelegram() as server:
        yield server


def poller(database_url: str, telegram: FakeTelegram, log: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LOG_", "LLM_", "REDIS_", "TELEGRAM_", "DISCORD_", "METRICS_", "PROMETHEUS_"))}
    env.update(DATABASE_URL=database_url, TELEGRAM_TOKEN=telegram.token, TELEGRAM_API_BASE_URL=telegram.base_url,
               MNEMO_DATA_DIR=str(log.parent), PYTHONPATH=str(ROOT), LOG_LEVEL="INFO")
    with open(log, "wb") as output:
        return subprocess.Popen([sys.executable, "-m", "shared.app.cli", "telegram", "--no-workers"], env=env,
                                stdout=output, stderr=subprocess.STDOUT, start_new_session=True)


def polling(telegram: FakeTelegram, count: int = 1) -> bool:
    return len(telegram.calls_to("getUpdates")) >= count


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        process.wait(timeout=30)


def test_a_second_poller_of_the_same_bot_is_refused_with_what_to_do(migrated_system_db, telegram, tmp_path):
    first = poller(migrated_system_db, telegram, tmp_path / "first.log")
    try:
        wait_for(lambda: polling(telegram) or first.poll() is not None, 90,
                 lambda: (tmp_path / "first.log").read_text())
        second = poller(migrated_system_db, telegram, tmp_path / "second.log")
        assert second.wait(timeout=90) == 2
        said = (tmp_path / "second.log").read_text()
        assert "another `mnemo telegram` already polls this bot" in said and "--webhook-url" in said
        assert first.poll() is None  # had the second polled, Telegram would have ended the first's poll (409)
    finally:
        stop(first)
    assert first.returncode == 0


def test_a_poller_telegram_refuses_with_409_stops_and_says_why(migrated_system_db, telegram, tmp_path):
    bot = poller(migrated_system_db, telegram, tmp_path / "bot.log")
    try:
        wait_for(lambda: polling(telegram) or bot.poll() is not None, 90, lambda: (tmp_path / "bot.log").read_text())
        # another deployment polls the same token: Telegram ends the held request of ours with 409
        httpx.post(f"{telegram.base_url}{telegram.token}/getUpdates", json={"timeout": 0}, timeout=10)
        assert bot.wait(timeout=60) == 2
    finally:
        stop(bot)
    said = (tmp_path / "bot.log").read_text()
    assert "Telegram says another process polls this bot token" in said and "terminated by other getUpdates" in said


def test_a_poller_refuses_to_take_the_updates_of_a_bot_whose_webhook_is_set(migrated_system_db, telegram, tmp_path):
    httpx.post(f"{telegram.base_url}{telegram.token}/setWebhook", json={"url": "https://bot.example.org/hook"})
    bot = poller(migrated_system_db, telegram, tmp_path / "bot.log")
    try:
        assert bot.wait(timeout=90) == 2
    finally:
        stop(bot)
    said = (tmp_path / "bot.log").read_text()
    assert "a webhook is set for this bot (bot.example.org)" in said and "--webhook-url" in said
    assert telegram.webhook is not None and not telegram.calls_to("deleteWebhook")  # the replicas keep it


def test_the_fake_bot_api_refuses_get_updates_while_a_webhook_is_set_as_telegram_does(telegram):
    api = f"{telegram.base_url}{telegram.token}"
    httpx.post(f"{api}/setWebhook", json={"url": "https://bot.example.org/hook", "secret_token": "s"})
    assert httpx.post(f"{api}/getWebhookInfo").json()["result"]["url"] == "https://bot.example.org/hook"
    refused = httpx.post(f"{api}/getUpdates", json={"timeout": 0})
    assert refused.status_code == 409 and "while webhook is active" in refused.json()["description"]
    httpx.post(f"{api}/deleteWebhook")
    assert httpx.post(f"{api}/getUpdates", json={"timeout": 0}).json() == {"ok": True, "result": []}
