"""`mnemo doctor` warns when the web panel's sign-in links would point where users cannot go."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from shared.app.doctor import _panel_check
from shared.settings import Settings


def settings(url: str, **tokens: str) -> Settings:
    return Settings(_env_file=None, panel_public_url=url, **{name: SecretStr(value) for name, value in tokens.items()})


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080", "http://localhost:9000", "http://[::1]:8080",
                                 "http://127.3.2.1"])
def test_a_loopback_panel_address_is_a_warning_once_a_bot_sends_links_to_people_elsewhere(url):
    check = _panel_check(settings(url, discord_token="discord-token-for-the-doctor"))
    assert check.verdict == "warn"
    assert "Discord users" in check.detail
    assert "reverse proxy" in check.detail
    both = _panel_check(settings(url, discord_token="d-token", telegram_token="123:telegram-token"))
    assert "Discord and Telegram users" in both.detail


def test_a_loopback_address_is_fine_on_the_console_alone_and_a_public_https_one_everywhere():
    assert _panel_check(settings("http://127.0.0.1:8080")).verdict == "ok"
    assert _panel_check(settings("https://mnemo.example.org", telegram_token="123:telegram-token")).verdict == "ok"


def test_a_public_address_without_https_is_a_warning():
    check = _panel_check(settings("http://192.0.2.10:8080", telegram_token="123:telegram-token"))
    assert check.verdict == "warn"
    assert "not https" in check.detail
