"""Readiness probes against the real peers: PostgreSQL and Redis behind relays that go down, and the fake
OpenAI server answering, refusing the key or failing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import SecretStr

from bench.fakes.openai_server import FakeOpenAI
from shared.app.readiness import Readiness, broker_probe, database_probe, llm_probe, process_probes
from shared.settings import Settings
from tests.fakes.database_outage import DatabaseOutage

REDIS_URL = "redis://127.0.0.1:6379/9"


@pytest.fixture
def llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(models=("fake-chat",), api_key="the-right-key") as server:
        yield server


def verdicts(*probes) -> dict[str, str]:
    readiness = Readiness(probes)
    try:
        return readiness.report().checks
    finally:
        readiness.close()


def test_the_database_probe_fails_while_the_database_is_away(migrated_system_db: str) -> None:
    with DatabaseOutage(migrated_system_db) as relay:
        probe = database_probe(relay.url)
        assert verdicts(probe) == {"database": "ok"}
        relay.down()
        assert verdicts(probe)["database"].startswith("OperationalError")
        relay.up()
        assert verdicts(probe) == {"database": "ok"}


def test_the_broker_probe_pings_redis_or_asks_the_database_that_is_the_broker(migrated_system_db: str) -> None:
    with DatabaseOutage(REDIS_URL) as relay:
        probe = broker_probe(Settings(_env_file=None, redis_url=relay.url), migrated_system_db)
        assert verdicts(probe) == {"broker": "ok"}
        relay.down()
        assert "ConnectionError" in verdicts(probe)["broker"]
    assert verdicts(broker_probe(Settings(_env_file=None), migrated_system_db)) == {"broker": "ok"}


def test_the_llm_probe_needs_an_answer_that_is_not_a_refused_key_or_a_server_error(llm: FakeOpenAI) -> None:
    right = Settings(_env_file=None, llm_base_url=llm.base_url, llm_api_key=SecretStr("the-right-key"))
    wrong = Settings(_env_file=None, llm_base_url=llm.base_url, llm_api_key=SecretStr("a-wrong-key"))
    assert verdicts(llm_probe(right)) == {"llm": "ok"}
    assert "refuses LLM_API_KEY (HTTP 401)" in verdicts(llm_probe(wrong))["llm"]
    gone = Settings(_env_file=None, llm_base_url="http://127.0.0.1:9/v1")
    assert verdicts(llm_probe(gone))["llm"].startswith("ConnectError")
    assert llm_probe(Settings(_env_file=None)) is None  # offline mode needs no LLM


def test_a_process_probes_only_what_it_uses(migrated_system_db: str, llm: FakeOpenAI) -> None:
    settings = Settings(_env_file=None, redis_url=REDIS_URL, llm_base_url=llm.base_url)
    assert [p.name for p in process_probes(settings, migrated_system_db)] == ["database", "broker", "llm"]
    assert [p.name for p in process_probes(settings, migrated_system_db, broker=False, llm=False)] == ["database"]
