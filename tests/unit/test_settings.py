"""Settings: names, defaults, validation messages that name the variable, masking."""

import re
from pathlib import Path

import pytest

from shared.errors import ConfigError
from shared.settings import Settings, load_settings, mask_secret

ROOT = Path(__file__).resolve().parents[2]
REQUIRED = {"DATABASE_URL", "REDIS_URL", "LLM_BASE_URL", "LLM_API_KEY", "LLM_MODEL", "EMBEDDING_BASE_URL",
            "EMBEDDING_MODEL", "DISCORD_TOKEN", "DISCORD_API_BASE_URL", "TELEGRAM_TOKEN",
            "TELEGRAM_API_BASE_URL", "MEMORY_RETRIEVAL_LIMIT", "MEMORY_EVICTION_THRESHOLD",
            "SESSION_IDLE_MINUTES", "DEFAULT_TIMEZONE", "MNEMO_DATA_DIR"}

COMPOSE_ONLY = {"POSTGRES_PASSWORD", "POSTGRES_USER", "POSTGRES_DB", "MNEMO_IMAGE", "COMPOSE_PROFILES",
                "PROMETHEUS_PORT", "GRAFANA_PORT", "GRAFANA_ADMIN_PASSWORD", "TELEGRAM_WEBHOOK_URL",
                "TELEGRAM_WEBHOOK_PORTS", "DISCORD_SHARD_COUNT", "DISCORD_SHARDS_EVEN", "DISCORD_SHARDS_ODD"}


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, tmp_path):
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.chdir(tmp_path)  # no .env from the checkout


def test_the_issue_names_every_variable_and_the_documented_defaults():
    settings = load_settings()
    assert set(settings.masked()) >= REQUIRED
    assert settings.memory_retrieval_limit == 5
    assert settings.memory_eviction_threshold is None
    assert settings.session_idle_minutes == 30
    assert settings.uses_embedded_database
    assert not settings.llm_configured
    assert settings.telegram_api_base_url == "https://api.telegram.org/bot"


def test_env_example_documents_every_setting():
    documented = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.MULTILINE))
    assert documented - COMPOSE_ONLY == {name.upper() for name in Settings.model_fields}


def test_a_wrong_value_names_the_variable(monkeypatch):
    monkeypatch.setenv("MEMORY_RETRIEVAL_LIMIT", "lots")
    monkeypatch.setenv("DEFAULT_TIMEZONE", "Mars/Olympus")
    with pytest.raises(ConfigError) as error:
        load_settings()
    assert "MEMORY_RETRIEVAL_LIMIT" in str(error.value)
    assert "DEFAULT_TIMEZONE" in str(error.value)
    assert "IANA" in str(error.value)


def test_urls_must_have_the_right_scheme(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "mysql://root@localhost/db")
    monkeypatch.setenv("LLM_BASE_URL", "localhost:8000")
    with pytest.raises(ConfigError, match="DATABASE_URL") as error:
        load_settings()
    assert "LLM_BASE_URL" in str(error.value)


def test_a_context_window_that_leaves_no_room_for_a_prompt_beside_the_reply_stops_start_up(monkeypatch):
    assert load_settings().llm_context_tokens == 8192
    monkeypatch.setenv("LLM_MAX_OUTPUT_TOKENS", "2000")
    monkeypatch.setenv("LLM_CONTEXT_TOKENS", "2048")
    with pytest.raises(ConfigError, match=r"LLM_CONTEXT_TOKENS: .*LLM_MAX_OUTPUT_TOKENS \(2000\): at least 2512"):
        load_settings()
    monkeypatch.setenv("LLM_CONTEXT_TOKENS", "2512")
    assert load_settings().llm_context_tokens == 2512


def test_a_placeholder_secret_is_refused_and_not_echoed_in_full(monkeypatch):
    monkeypatch.setenv("TELEGRAM_TOKEN", "changeme")
    with pytest.raises(ConfigError, match="TELEGRAM_TOKEN: is still the placeholder"):
        load_settings()


def test_values_are_read_from_a_dotenv_file(tmp_path):
    (tmp_path / ".env").write_text("MEMORY_RETRIEVAL_LIMIT=7\nMEMORY_EVICTION_THRESHOLD=off\n")
    settings = load_settings()
    assert settings.memory_retrieval_limit == 7
    assert settings.memory_eviction_threshold is None


def test_eviction_threshold_can_be_switched_on(monkeypatch):
    monkeypatch.setenv("MEMORY_EVICTION_THRESHOLD", "5000")
    assert load_settings().memory_eviction_threshold == 5000


def test_masked_configuration_hides_secrets_and_url_passwords(monkeypatch):
    monkeypatch.setenv("LLM_API_KEY", "sk-verysecretkey123456")
    monkeypatch.setenv("DATABASE_URL", "postgresql://mnemo:hunter2@db:5432/mnemo")
    shown = load_settings().masked()
    assert "verysecret" not in shown["LLM_API_KEY"]
    assert shown["DATABASE_URL"] == "postgresql://mnemo:***@db:5432/mnemo"
    assert "hunter2" not in str(shown)


def test_mask_secret_keeps_urls_without_credentials_readable():
    assert mask_secret("redis://redis:6379/0") == "redis://redis:6379/0"
    assert mask_secret("short") == "***"


def test_trusted_proxies_are_a_comma_separated_list_of_addresses_or_networks(monkeypatch):
    monkeypatch.setenv("TRUSTED_PROXIES", "172.18.0.0/16, 10.9.8.7")
    assert load_settings().trusted_proxies == ("172.18.0.0/16", "10.9.8.7")
    for wrong in ("*", "proxy.internal", "10.0.0.0/33"):
        monkeypatch.setenv("TRUSTED_PROXIES", wrong)
        with pytest.raises(ConfigError, match=r"TRUSTED_PROXIES: .*not an IP address or CIDR"):
            load_settings()


@pytest.mark.parametrize("secret", ["k", "short-secret-15", "has spaces in the middle of it",
                                    " padded-secret-0123456789", "dots.are.not.allowed.here",
                                    "ünïcode-secret-0123456789", "x" * 257])
def test_a_webhook_secret_telegram_would_refuse_or_that_is_weak_stops_start_up(monkeypatch, secret):
    monkeypatch.setenv("TELEGRAM_WEBHOOK_SECRET", secret)
    with pytest.raises(ConfigError, match="TELEGRAM_WEBHOOK_SECRET: must be") as error:
        load_settings()
    assert secret.strip() not in str(error.value) or len(secret.strip()) <= 8


@pytest.mark.parametrize("secret", ["Ab3_-Ab3_-Ab3_-Z", "x" * 256])
def test_a_webhook_secret_of_telegrams_characters_and_enough_length_is_accepted(monkeypatch, secret):
    monkeypatch.setenv("TELEGRAM_WEBHOOK_SECRET", secret)
    assert load_settings().telegram_webhook_secret.get_secret_value() == secret


def test_every_url_shown_hides_its_password_and_password_like_query_values(monkeypatch):
    monkeypatch.setenv("LLM_BASE_URL", "https://llm-user:Op3n-Sesame@gateway.example/v1?api_key=k-77x&region=eu")
    monkeypatch.setenv("EMBEDDING_BASE_URL", "http://embed.local/v1?X-Auth-Token=tt-5150")
    monkeypatch.setenv("DATABASE_URL", "postgresql://db.internal/mnemo?user=bot&password=p@ss-w0rd&sslmode=require")
    monkeypatch.setenv("REDIS_URL", "rediss://:r3dis-secret@cache:6380/2")
    shown = load_settings().masked()
    assert shown["LLM_BASE_URL"] == "https://llm-user:***@gateway.example/v1?api_key=***&region=eu"
    assert shown["EMBEDDING_BASE_URL"] == "http://embed.local/v1?X-Auth-Token=***"
    assert shown["DATABASE_URL"] == "postgresql://db.internal/mnemo?user=bot&password=***&sslmode=require"
    assert shown["REDIS_URL"] == "rediss://:***@cache:6380/2"
    for secret in ("Op3n-Sesame", "k-77x", "tt-5150", "p@ss-w0rd", "r3dis-secret"):
        assert secret not in str(shown)


@pytest.mark.parametrize("secret", ["dc-token-0123456789abcdefghij.XYZ", "1234567:AAbbCCddEEffGGhhIIjjKKllMMnn",
                                    "sk-short-key-19char"])
def test_a_masked_secret_shows_at_most_two_of_its_characters(secret):
    shown = mask_secret(secret)
    visible = {shown[i:i + 3] for i in range(len(shown) - 2)}
    assert not any(piece in secret for piece in visible)


def test_a_bad_url_in_the_configuration_is_quoted_without_its_password(monkeypatch):
    monkeypatch.setenv("LLM_BASE_URL", "ftp://ops:tr0ub4dor@llm.example/v1")
    with pytest.raises(ConfigError) as refused:
        load_settings()
    assert "LLM_BASE_URL" in str(refused.value)
    assert "tr0ub4dor" not in str(refused.value)


def test_the_secret_values_are_the_tokens_and_every_password_inside_a_url(monkeypatch):
    monkeypatch.setenv("TELEGRAM_TOKEN", "42424242:tg-secret")
    monkeypatch.setenv("ADMIN_TOKEN", "adm-" + "9" * 30)
    monkeypatch.setenv("DATABASE_URL", "postgresql://mnemo:pg%40pw@db/mnemo")
    monkeypatch.setenv("LLM_BASE_URL", "https://llm.example/v1?key=llm-q-secret")
    found = load_settings().secret_values()
    assert {"42424242:tg-secret", "adm-" + "9" * 30, "pg%40pw", "pg@pw", "llm-q-secret"} <= set(found)


def test_the_panels_address_follows_the_api_port_unless_it_is_set():
    assert Settings(_env_file=None).panel_public_url == "http://127.0.0.1:8080"
    assert Settings(_env_file=None, api_port=18123).panel_public_url == "http://127.0.0.1:18123"
    assert Settings(_env_file=None, api_port=0).panel_public_url == "http://127.0.0.1:8080"  # a free port: as set
    moved = Settings(_env_file=None, api_port=9000, panel_public_url="https://mnemo.example.org")
    assert moved.panel_public_url == "https://mnemo.example.org"
