"""The production deployment files, checked by reading them (no Docker engine needed).

``docker-compose.yml`` must run every Mnemo process with the right dependencies and settings,
and every process command it names must be a real ``mnemo`` subcommand whose arguments mnemo accepts.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from shared.app.cli import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"

INFRASTRUCTURE = ("postgres", "redis")
LONG_RUNNING = ("bot-discord", "bot-discord-shards-even", "bot-discord-shards-odd", "bot-telegram",
                "bot-telegram-webhook", "api", "worker", "beat")
APP_SERVICES = ("migrate", "discord-sync", *LONG_RUNNING)
PLATFORM_PROFILES = {"bot-discord": ["discord"], "discord-sync": ["discord", "discord-sharded"],
                     "bot-discord-shards-even": ["discord-sharded"], "bot-discord-shards-odd": ["discord-sharded"],
                     "bot-telegram": ["telegram"], "bot-telegram-webhook": ["telegram-webhook"]}
SINGLETONS = ("beat",)

_VARIABLE = re.compile(r"\$\{(?P<name>\w+)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")


def interpolate(value: str) -> str:
    """Compose's ``${NAME:-default}`` / ``${NAME:?error}`` with defaults, a placeholder otherwise."""

    def replace(match: re.Match[str]) -> str:
        if match["op"] in (":-", "-"):
            return match["arg"]
        return f"<{match['name']}>"

    return _VARIABLE.sub(replace, value)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return compose["services"]


def command_of(service: dict[str, Any]) -> list[str]:
    command = service.get("command", [])
    return shlex.split(command) if isinstance(command, str) else [str(part) for part in command]


def environment_of(service: dict[str, Any]) -> dict[str, str]:
    environment = service.get("environment", {})
    if isinstance(environment, list):
        environment = dict(item.split("=", 1) for item in environment)
    return {name: interpolate(str(value)) for name, value in environment.items()}


def env_files_of(service: dict[str, Any]) -> list[str]:
    env_file = service.get("env_file", [])
    entries = [env_file] if isinstance(env_file, str | dict) else env_file
    return [entry["path"] if isinstance(entry, dict) else entry for entry in entries]


def dockerfile_instructions() -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` pairs, continuation lines joined, comments dropped."""
    lines = [line for line in DOCKERFILE.read_text(encoding="utf-8").splitlines()
             if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    instructions = []
    for line in joined.splitlines():
        if line.strip():
            keyword, _, arguments = line.strip().partition(" ")
            instructions.append((keyword.upper(), arguments.strip()))
    return instructions


def exec_form(arguments: str) -> list[str]:
    return json.loads(arguments) if arguments.startswith("[") else shlex.split(arguments)


# --- docker-compose.yml ---------------------------------------------------------------------


def test_every_service_of_the_deployment_is_defined(services: dict[str, dict[str, Any]]) -> None:
    missing = [name for name in (*INFRASTRUCTURE, *APP_SERVICES) if name not in services]
    assert not missing, f"docker-compose.yml lacks the services {missing}"


def test_postgres_uses_an_image_with_pgvector_and_has_a_healthcheck(services: dict[str, dict[str, Any]]) -> None:
    postgres = services["postgres"]
    assert "pgvector" in postgres["image"], f"postgres image {postgres['image']!r} does not ship pgvector"
    assert "pg_isready" in " ".join(postgres["healthcheck"]["test"]), "postgres is not health-checked with pg_isready"
    assert postgres.get("volumes"), "postgres keeps its data in no volume: a restart would lose every memory"


def test_postgres_password_is_never_written_in_the_file(services: dict[str, dict[str, Any]]) -> None:
    password = str(services["postgres"]["environment"]["POSTGRES_PASSWORD"])
    assert password.startswith("${POSTGRES_PASSWORD"), f"the postgres password is hard-coded as {password!r}"


def test_redis_has_a_healthcheck(services: dict[str, dict[str, Any]]) -> None:
    check = " ".join(services["redis"]["healthcheck"]["test"])
    assert "redis-cli" in check, f"redis is not health-checked with redis-cli ping: {check!r}"
    assert "ping" in check, f"redis is not health-checked with redis-cli ping: {check!r}"


@pytest.mark.parametrize("name", APP_SERVICES + INFRASTRUCTURE)
def test_a_bot_runs_only_in_its_platforms_profile_and_everything_else_always(
        services: dict[str, dict[str, Any]], name: str) -> None:
    expected = PLATFORM_PROFILES.get(name, [])
    assert services[name].get("profiles", []) == expected, (
        f"{name} runs in profiles {services[name].get('profiles')}: a deployment for one platform would start "
        "(and crash-loop) the other platform's bot")


def test_the_slash_commands_are_published_once_before_the_discord_bot_starts(
        services: dict[str, dict[str, Any]]) -> None:
    sync = services["discord-sync"]
    assert command_of(sync) == ["mnemo", "discord", "--sync"]
    assert str(sync.get("restart")) == "no"
    for bot in ("bot-discord", "bot-discord-shards-even", "bot-discord-shards-odd"):
        assert services[bot]["depends_on"]["discord-sync"]["condition"] == "service_completed_successfully"
        assert "--sync" not in command_of(services[bot])


def test_two_discord_processes_split_the_shards_between_them(services: dict[str, dict[str, Any]]) -> None:
    commands = [command_of(services[name]) for name in ("bot-discord-shards-even", "bot-discord-shards-odd")]
    counts = {command[command.index("--shard-count") + 1] for command in commands}
    ids = [command[command.index("--shards") + 1] for command in commands]
    assert counts == {"${DISCORD_SHARD_COUNT:-2}"}
    assert ids == ["${DISCORD_SHARDS_EVEN:-0}", "${DISCORD_SHARDS_ODD:-1}"]


def test_telegram_webhook_replicas_listen_for_the_proxy_and_poll_nowhere(services: dict[str, dict[str, Any]]) -> None:
    command = command_of(services["bot-telegram-webhook"])
    assert command[:3] == ["mnemo", "telegram", "--webhook-url"]
    assert command[command.index("--listen") + 1] == "0.0.0.0"
    assert services["bot-telegram-webhook"]["deploy"]["replicas"] >= 2
    assert services["bot-telegram"]["deploy"]["replicas"] == 1


def test_telegram_webhook_replicas_have_a_loopback_host_port_each_and_never_run_beside_the_poller(
        services: dict[str, dict[str, Any]]) -> None:
    replicas, poller = services["bot-telegram-webhook"], services["bot-telegram"]
    assert not set(replicas["profiles"]) & set(poller["profiles"])
    command = command_of(replicas)
    assert command[command.index("--port") + 1] == "8443"  # the port the proxy is told to forward to
    [mapping] = [interpolate(str(entry)) for entry in replicas["ports"]]
    host_ip, host_ports, container_port = mapping.split(":")
    first, last = (int(port) for port in host_ports.split("-"))
    assert host_ip == "127.0.0.1", mapping  # for a proxy on the host, nobody else
    assert container_port == "8443", mapping
    assert last - first + 1 >= replicas["deploy"]["replicas"], f"{mapping}: two replicas would need one host port"


def test_the_env_example_names_every_variable_the_compose_file_reads() -> None:
    read = set(_VARIABLE.findall(COMPOSE_FILE.read_text(encoding="utf-8")))
    example = (ROOT / ".env.example").read_text(encoding="utf-8")
    documented = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", example, re.MULTILINE))
    missing = sorted({name for name, _op, _arg in read} - documented)
    assert not missing, f".env.example does not mention {missing}"
    assert "COMPOSE_PROFILES=" in example, "an operator is not told how to choose the bots"


@pytest.mark.parametrize("name", APP_SERVICES)
def test_each_process_keeps_its_data_directory_in_a_volume(compose: dict[str, Any], name: str) -> None:
    service = compose["services"][name]
    data_dir = environment_of(service)["MNEMO_DATA_DIR"]
    mounts = {str(volume).split(":")[1]: str(volume).split(":")[0] for volume in service.get("volumes", [])}
    assert mounts.get(data_dir) in compose["volumes"], f"{name}'s {data_dir} is lost with its container"


def test_postgres_keeps_its_data_where_its_major_version_puts_it(services: dict[str, dict[str, Any]]) -> None:
    postgres = services["postgres"]
    major = int(re.search(r":pg(\d+)", postgres["image"]).group(1))
    mount = "/var/lib/postgresql" if major >= 18 else "/var/lib/postgresql/data"
    assert any(str(volume).endswith(f":{mount}") for volume in postgres["volumes"]), (
        f"PostgreSQL {major}'s image needs its volume at {mount}")


def test_migrate_runs_the_schema_upgrade_once(services: dict[str, dict[str, Any]]) -> None:
    migrate = services["migrate"]
    assert command_of(migrate) == ["mnemo", "db", "upgrade"], "the migrate service does not run `mnemo db upgrade`"
    assert str(migrate.get("restart", "no")) == "no", "the one-shot migrate service must not be restarted"
    assert migrate["depends_on"]["postgres"]["condition"] == "service_healthy", "migrate does not wait for postgres"


@pytest.mark.parametrize("name", LONG_RUNNING)
def test_each_process_waits_for_the_migration_and_healthy_services(
    services: dict[str, dict[str, Any]], name: str,
) -> None:
    depends_on = services[name]["depends_on"]
    assert depends_on["migrate"]["condition"] == "service_completed_successfully", (
        f"{name} may start before the migration has completed"
    )
    for dependency in INFRASTRUCTURE:
        assert depends_on[dependency]["condition"] == "service_healthy", f"{name} does not wait for {dependency}"
    assert services[name].get("restart") == "unless-stopped", f"{name} is not restarted when it crashes"


@pytest.mark.parametrize("name", APP_SERVICES)
def test_each_process_reads_its_settings_from_the_env_file(services: dict[str, dict[str, Any]], name: str) -> None:
    assert ".env" in env_files_of(services[name]), f"{name} does not read its secrets from .env"


@pytest.mark.parametrize("name", APP_SERVICES)
def test_each_process_points_at_the_compose_database_and_broker(
    services: dict[str, dict[str, Any]], name: str,
) -> None:
    environment = environment_of(services[name])
    database, broker = urlsplit(environment["DATABASE_URL"]), urlsplit(environment["REDIS_URL"])
    assert database.scheme.startswith("postgres") and database.hostname == "postgres", (
        f"{name}'s DATABASE_URL does not point at the postgres service: {environment['DATABASE_URL']!r}"
    )
    assert broker.scheme == "redis" and broker.hostname == "redis", (
        f"{name}'s REDIS_URL does not point at the redis service: {environment['REDIS_URL']!r}"
    )


@pytest.mark.parametrize("name", APP_SERVICES)
def test_each_process_runs_the_one_shared_image(services: dict[str, dict[str, Any]], name: str) -> None:
    service = services[name]
    assert service.get("build"), f"{name} is not built from the Dockerfile"
    assert service.get("image") == services["migrate"].get("image"), f"{name} does not share the Mnemo image"


@pytest.mark.parametrize("name", SINGLETONS)
def test_beat_is_never_scaled(services: dict[str, dict[str, Any]], name: str) -> None:
    replicas = services[name].get("deploy", {}).get("replicas", 1)
    assert int(replicas) == 1 and int(services[name].get("scale", 1)) == 1, (
        f"{name} runs {replicas} replicas: every scheduled task would be sent more than once"
    )


@pytest.mark.parametrize("name", APP_SERVICES)
def test_each_process_runs_a_mnemo_subcommand_that_exists_with_arguments_it_accepts(
    services: dict[str, dict[str, Any]], name: str,
) -> None:
    command = command_of(services[name])
    assert command[:1] == ["mnemo"], f"{name} does not run `mnemo <subcommand>`: {command}"
    assert len(command) >= 2, f"{name} does not run `mnemo <subcommand>`: {command}"
    assert command[1] in COMMANDS, f"{name} runs `mnemo {command[1]}`, which is not in shared.app.cli.COMMANDS"
    as_run = [_VARIABLE.sub(lambda found: found["arg"] or "", part) for part in command]  # compose's defaults
    try:
        build_parser().parse_args(as_run[1:])
    except SystemExit:
        pytest.fail(f"{name} runs `{shlex.join(command)}`, whose arguments mnemo rejects (see above)")


# --- Dockerfile and .dockerignore -------------------------------------------------------------


def test_the_image_starts_the_mnemo_console_script() -> None:
    instructions = dockerfile_instructions()
    entrypoints = [exec_form(args) for keyword, args in instructions if keyword == "ENTRYPOINT"]
    commands = [exec_form(args) for keyword, args in instructions if keyword == "CMD"]
    program = (entrypoints or commands)[-1][0]
    assert program == "mnemo", f"the image starts {program!r}, not the `mnemo` console script"


def test_the_image_runs_as_a_non_root_user() -> None:
    users = [args for keyword, args in dockerfile_instructions() if keyword == "USER"]
    assert users, "the Dockerfile never leaves root"
    assert users[-1].split(":")[0] not in {"root", "0"}, f"the image runs as {users[-1]!r}"


def test_the_image_does_not_install_torch_or_extras() -> None:
    installs = " ".join(args for keyword, args in dockerfile_instructions() if keyword == "RUN")
    assert not re.search(r"pip install[^&]*\btorch\b", installs), "the Dockerfile installs PyTorch"
    assert not re.search(r"\.\[[^\]]*\]", installs), "the Dockerfile installs an extra of the project (dev? torch?)"
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    heavy = [dep for dep in dependencies if re.match(r"(torch|sentence-transformers)\b", dep, re.IGNORECASE)]
    assert not heavy, f"the image installs [project].dependencies, which now pull in {heavy}"


def test_secrets_and_local_state_stay_out_of_the_image() -> None:
    ignored = {line.strip() for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines()}
    for entry in (".env", ".git", ".venv", "var"):
        assert entry in ignored, f".dockerignore does not exclude {entry}"


# --- health checks and the monitoring profile ----------------------------------------------------

MONITORING = ("prometheus", "grafana")
ONE_SHOT = ("migrate", "discord-sync")


@pytest.mark.parametrize("name", LONG_RUNNING)
def test_each_long_running_process_is_health_checked_through_its_readiness_endpoint(
        services: dict[str, dict[str, Any]], name: str) -> None:
    service = services[name]
    check = service.get("healthcheck", {})
    assert check.get("test") == ["CMD", "mnemo", "health"], f"{name} is not health-checked with `mnemo health`"
    build_parser().parse_args(check["test"][2:])  # a subcommand mnemo has
    port = environment_of(service).get("METRICS_PORT", "")
    assert port.isdigit(), f"{name} serves no /readyz for its health check (METRICS_PORT={port!r})"
    assert int(port) > 0, f"{name} serves no /readyz for its health check (METRICS_PORT={port!r})"
    assert environment_of(service).get("METRICS_HOST") == "0.0.0.0", f"{name}'s /metrics is unreachable for Prometheus"
    assert not any(str(mapping).split(":")[-1] == port for mapping in service.get("ports", [])), (
        f"{name} publishes its operations port on the host")


@pytest.mark.parametrize("name", ONE_SHOT)
def test_one_shot_services_are_not_health_checked(services: dict[str, dict[str, Any]], name: str) -> None:
    assert services[name].get("healthcheck", {}).get("disable") is True, f"{name} would report unhealthy while it runs"


@pytest.mark.parametrize("name", MONITORING)
def test_prometheus_and_grafana_run_only_in_the_monitoring_profile_on_loopback(
        services: dict[str, dict[str, Any]], name: str) -> None:
    service = services[name]
    assert service.get("profiles") == ["monitoring"], f"{name} runs without `--profile monitoring`"
    assert all(interpolate(str(mapping)).startswith("127.0.0.1:") for mapping in service.get("ports", [])), (
        f"{name} is published beyond the host's loopback")
    for volume in service.get("volumes", []):
        source = str(volume).split(":")[0]
        if source.startswith("./"):
            assert (ROOT / source).exists(), f"{name} mounts {source}, which is not in the repository"


def test_prometheus_scrapes_every_long_running_service_on_its_metrics_port(
        services: dict[str, dict[str, Any]]) -> None:
    config = yaml.safe_load((ROOT / "deploy/prometheus/prometheus.yml").read_text(encoding="utf-8"))
    scraped = {(name, target["port"]) for job in config["scrape_configs"] for target in job.get("dns_sd_configs", [])
               for name in target["names"]}
    for name in LONG_RUNNING:
        port = int(environment_of(services[name])["METRICS_PORT"])
        assert (name, port) in scraped, f"Prometheus does not scrape {name} on port {port}"
    assert "alerts.yml" in config["rule_files"], "Prometheus does not load the alert rules"


def test_grafana_is_provisioned_with_prometheus_and_the_dashboard(services: dict[str, dict[str, Any]]) -> None:
    mounts = {str(volume).split(":")[1]: str(volume).split(":")[0] for volume in services["grafana"]["volumes"]}
    assert mounts.get("/etc/grafana/provisioning") == "./deploy/grafana/provisioning"
    provider = yaml.safe_load((ROOT / "deploy/grafana/provisioning/dashboards/mnemo.yml").read_text(encoding="utf-8"))
    dashboards = provider["providers"][0]["options"]["path"]
    assert mounts.get(f"{dashboards}/mnemo.json") == "./deploy/grafana/mnemo.json"
