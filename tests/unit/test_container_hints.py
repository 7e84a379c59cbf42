"""What an operator running Mnemo in a container is told: 127.0.0.1 there is the container, which of a bot's
token or its compose profile to change, and that a Telegram webhook needs the bot's own public address."""

from __future__ import annotations

import pytest

from shared.app.container import BOTS, in_container, loopback_hint, missing_token, webhook_url_problem
from shared.app.doctor_compose import compose_check

DISCORD, TELEGRAM = BOTS
IN_COMPOSE = {"MNEMO_IN_CONTAINER": "1"}


def test_the_container_flag_wins_and_otherwise_dockers_or_podmans_marker_file_tells(tmp_path) -> None:
    assert in_container({"MNEMO_IN_CONTAINER": "1"}, tmp_path)
    (tmp_path / ".dockerenv").touch()
    assert not in_container({"MNEMO_IN_CONTAINER": "0"}, tmp_path)
    assert in_container({}, tmp_path)
    (tmp_path / ".dockerenv").unlink()
    assert not in_container({}, tmp_path)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / ".containerenv").touch()
    assert in_container({}, tmp_path)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8813/v1", "http://localhost:11434/v1", "http://[::1]:8000/v1",
                                 "http://127.0.0.2:9/v1"])
def test_a_loopback_url_in_a_container_is_explained_with_the_address_that_reaches_the_host(url, tmp_path) -> None:
    hint = loopback_hint(url, "LLM_BASE_URL", IN_COMPOSE, tmp_path)
    port = url.rsplit(":", 1)[1]
    assert "is the container itself" in hint
    assert f"LLM_BASE_URL=http://host.docker.internal:{port}" in hint
    assert "not 127.0.0.1 only" in hint


def test_no_hint_outside_a_container_or_for_a_host_that_is_not_loopback(tmp_path) -> None:
    assert loopback_hint("http://127.0.0.1:8000/v1", "LLM_BASE_URL", {"MNEMO_IN_CONTAINER": "0"}, tmp_path) == ""
    assert loopback_hint("http://llm.internal:8000/v1", "LLM_BASE_URL", IN_COMPOSE, tmp_path) == ""
    assert loopback_hint("http://host.docker.internal:8000/v1", "LLM_BASE_URL", IN_COMPOSE, tmp_path) == ""


def test_a_bot_started_by_its_compose_profile_without_a_token_names_both_fixes() -> None:
    said = missing_token(DISCORD, "create a bot and put its token in .env", {"COMPOSE_PROFILES": "telegram,discord"})
    assert said.startswith("DISCORD_TOKEN is not set: create a bot")
    assert "take discord out of COMPOSE_PROFILES in .env (now telegram,discord)" in said
    assert "COMPOSE_PROFILES" not in missing_token(TELEGRAM, "get one", {})  # not under compose: one fix only


@pytest.mark.parametrize(("url", "words"), [("", "set TELEGRAM_WEBHOOK_URL in .env"),
                                            ("   ", "set TELEGRAM_WEBHOOK_URL in .env"),
                                            ("https://bot.example.org/telegram", "is an example address"),
                                            ("https://example.com/hook", "is an example address"),
                                            ("http://bot.mnemo.chat/telegram", "must be the https://"),
                                            ("bot.mnemo.chat/telegram", "must be the https://")])
def test_a_webhook_url_telegram_could_not_post_to_is_refused_with_what_to_set(url, words) -> None:
    assert words in (webhook_url_problem(url) or "")


def test_a_public_https_webhook_url_is_accepted() -> None:
    assert webhook_url_problem("https://bot.mnemo.chat/telegram") is None
    assert webhook_url_problem("https://notexample.org/telegram") is None


def test_outside_compose_the_doctor_has_nothing_to_say_about_profiles() -> None:
    assert compose_check({"TELEGRAM_TOKEN": "1:abc"}) is None


@pytest.mark.parametrize(("environ", "verdict", "words"), [
    ({"COMPOSE_PROFILES": "discord", "TELEGRAM_TOKEN": "1:abc"}, "fail",
     "COMPOSE_PROFILES=discord starts the Discord bot, but DISCORD_TOKEN is not set"),
    ({"COMPOSE_PROFILES": "", "TELEGRAM_TOKEN": "1:abc"}, "warn",
     "TELEGRAM_TOKEN is set, but COMPOSE_PROFILES (empty) starts no Telegram bot: add telegram to COMPOSE_PROFILES"),
    ({"COMPOSE_PROFILES": "", "TELEGRAM_TOKEN": ""}, "info", "no bot runs, only the API, worker and beat"),
    ({"COMPOSE_PROFILES": "telegram,discord", "TELEGRAM_TOKEN": "1:abc", "DISCORD_TOKEN": "x.y.z"}, "ok",
     "the Discord and Telegram bots run"),
    ({"COMPOSE_PROFILES": "telegram-webhook", "TELEGRAM_TOKEN": "1:abc", "TELEGRAM_WEBHOOK_URL": ""}, "fail",
     "set TELEGRAM_WEBHOOK_URL in .env"),
    ({"COMPOSE_PROFILES": "telegram-webhook", "TELEGRAM_TOKEN": "1:abc",
      "TELEGRAM_WEBHOOK_URL": "https://bot.mnemo.chat/t"}, "fail", "needs TELEGRAM_WEBHOOK_SECRET"),
    ({"COMPOSE_PROFILES": "telegram,telegram-webhook", "TELEGRAM_TOKEN": "1:abc", "TELEGRAM_WEBHOOK_SECRET": "s" * 32,
      "TELEGRAM_WEBHOOK_URL": "https://bot.mnemo.chat/t"}, "fail", "keep one of them"),
])
def test_the_doctor_says_which_bots_the_profiles_start_and_what_each_lacks(environ, verdict, words) -> None:
    check = compose_check(environ)
    assert check is not None, check
    assert check.verdict == verdict, check
    assert words in check.detail, check
