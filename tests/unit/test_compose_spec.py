"""docker-compose.yml and .env.example as an operator meets them: valid by the Compose specification's own
JSON schema once filled in from ``.env.example``, no bot started for a platform the operator does not run,
nothing required that only one profile needs, and the docs naming what the file runs.

The schema is the one check-jsonschema ships (``vendor/compose-spec.json``, from the compose-spec project).
"""

from __future__ import annotations

import copy
import json
import re
from importlib import resources

import pytest
from jsonschema import Draft202012Validator

from tests.compose_file import ENV_EXAMPLE, ROOT, MissingVariable, load_compose, read_env_file

OPERATOR = {"POSTGRES_PASSWORD": "a1b2c3d4e5f6"}  # the one value .env.example leaves for the operator to fill in
APP_SERVICES = ("migrate", "discord-sync", "bot-discord", "bot-discord-shards-even", "bot-discord-shards-odd",
                "bot-telegram", "bot-telegram-webhook", "api", "worker", "beat")


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    schema = json.loads((resources.files("check_jsonschema.builtin_schemas.vendor") / "compose-spec.json").read_text())
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


@pytest.fixture(scope="module")
def compose() -> dict:
    return load_compose({**read_env_file(), **OPERATOR})


def problems(validator: Draft202012Validator, document: dict) -> list[str]:
    return [f"{'/'.join(map(str, error.absolute_path))}: {error.message}" for error in validator.iter_errors(document)]


def test_the_filled_in_compose_file_is_valid_by_the_compose_specification(validator, compose) -> None:
    assert problems(validator, compose) == []


@pytest.mark.parametrize(("path", "value"), [(("services", "api", "ports"), "127.0.0.1:8080:8080"),
                                             (("services", "worker", "restart_policy"), "always"),
                                             (("services", "beat", "depends_on", "migrate", "condition"),
                                              "service_finished")])
def test_the_schema_check_finds_a_mistake_compose_would_refuse(validator, compose, path, value) -> None:
    broken = copy.deepcopy(compose)
    *parents, last = path
    target = broken
    for key in parents:
        target = target[key]
    target[last] = value
    assert problems(validator, broken), f"{path} = {value!r} passed the schema"


def test_only_the_database_password_must_be_filled_in_before_compose_starts() -> None:
    with pytest.raises(MissingVariable, match="POSTGRES_PASSWORD"):
        load_compose(read_env_file())
    load_compose({**read_env_file(), **OPERATOR})  # nothing a single profile needs is required of everyone


def test_a_copied_env_example_starts_no_bot_until_the_operator_names_one() -> None:
    assert read_env_file()["COMPOSE_PROFILES"] == "", "a Telegram-only operator would start the Discord bot"
    text = ENV_EXAMPLE.read_text(encoding="utf-8")
    explained = text[text.index("# --- docker compose only"):text.index("\nCOMPOSE_PROFILES=")]
    assert "mnemo doctor" in explained, "nothing tells the operator how to check which bots run"


def test_the_webhook_url_has_no_example_default_anywhere_compose_reads() -> None:
    compose_text = (ROOT / "docker-compose.yml").read_text(encoding="utf-8")
    assert "example.org" not in compose_text
    assert read_env_file()["TELEGRAM_WEBHOOK_URL"] == ""


@pytest.mark.parametrize("name", APP_SERVICES)
def test_every_mnemo_process_reaches_the_host_by_name_and_knows_it_runs_in_a_container(compose, name) -> None:
    service = compose["services"][name]
    assert "host.docker.internal:host-gateway" in service.get("extra_hosts", []), f"{name} cannot reach the host"
    assert service["environment"].get("MNEMO_IN_CONTAINER") == "1"
    assert "COMPOSE_PROFILES" in service["environment"], f"{name} cannot say which profile started it"


def test_the_deployment_guide_names_the_postgres_image_compose_runs(compose) -> None:
    image = compose["services"]["postgres"]["image"]
    guide = (ROOT / "docs" / "deployment.md").read_text(encoding="utf-8")
    named = set(re.findall(r"pgvector/pgvector:pg\d+", guide))
    assert named == {image}, f"docs/deployment.md names {named}, docker-compose.yml runs {image}"
