"""The sign-in limit as clients meet it: failures are counted per address and overall, a valid link
signs in whatever others did, and the address counted is the connection's own unless it comes
through a configured proxy (uvicorn's proxy-header handling, configured as ``mnemo api`` does)."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
import redis
import uvicorn
from fastapi.testclient import TestClient
from sqlalchemy import pool

from bot.api.app import create_app
from bot.api.auth import SignInLimiter
from bot.api.errors import ApiError
from bot.api.server import uvicorn_options
from shared.commands.panel import PanelService
from shared.commands.service import Caller, MemoryCommands
from shared.db.engine import make_engine
from shared.limits import shared_storage
from shared.settings import Settings
from tests.integration.test_api import BASE, token_of

CAROL = Caller("telegram", "3003", display_name="Carol", locale="en")
WRONG = "W" * 43
SIGN_IN = "/panel/sign-in"
REDIS_URL = "redis://127.0.0.1:6379/2"  # a Redis database no other test uses


@pytest.fixture
def panel(uow_factory) -> PanelService:
    return PanelService(uow_factory, session_lifetime=timedelta(hours=1))


@pytest.fixture
def links(uow_factory) -> MemoryCommands:
    return MemoryCommands(uow_factory, panel_url=BASE)


def client_from(app, address: str, **headers: str) -> TestClient:
    return TestClient(app, base_url=BASE, client=(address, 40000), headers=headers)


def attempt(client: TestClient, token: str = WRONG, **headers: str) -> int:
    return client.post(SIGN_IN, data={"token": token}, headers=headers, follow_redirects=False).status_code


def test_a_valid_link_signs_in_from_an_address_that_is_limited(panel, links):
    app = create_app(panel, admin_token=None, public_url=BASE, limiter=SignInLimiter(per_address=2))
    shared_address = client_from(app, "198.51.100.7")
    assert [attempt(shared_address) for _ in range(3)] == [400, 400, 429]
    assert attempt(shared_address, token_of(links.panel_link(CAROL).url)) == 303
    assert attempt(shared_address) == 429  # the guesser is still limited


def test_a_valid_link_signs_in_while_failures_from_everywhere_are_over_the_overall_limit(panel, links):
    app = create_app(panel, admin_token=None, public_url=BASE, limiter=SignInLimiter(per_address=5, overall=4))
    answers = [attempt(client_from(app, f"203.0.113.{n}")) for n in range(1, 7)]
    assert answers == [400, 400, 400, 400, 429, 429]
    assert attempt(client_from(app, "192.0.2.50"), token_of(links.panel_link(CAROL).url)) == 303
    assert attempt(client_from(app, "192.0.2.51")) == 429


def test_successful_sign_ins_do_not_count_against_the_limit(panel, links):
    app = create_app(panel, admin_token=None, public_url=BASE, limiter=SignInLimiter(per_address=2, overall=2))
    household = client_from(app, "198.51.100.8")
    for _ in range(4):
        assert attempt(household, token_of(links.panel_link(CAROL).url)) == 303
    assert [attempt(household) for _ in range(3)] == [400, 400, 429]


def test_an_address_that_stops_failing_is_let_go_when_its_window_ends():
    limiter = SignInLimiter(per_address=2, overall=100, window_seconds=1)
    limiter.failed("a")
    limiter.failed("a")
    with pytest.raises(ApiError) as refused:
        limiter.failed("a")
    assert refused.value.status == 429
    assert int(refused.value.headers["Retry-After"]) == 1
    time.sleep(1.1)  # the behaviour under test is the window's end
    limiter.failed("a")  # counted again from zero


@pytest.mark.parametrize("store", ["redis", "postgresql"])
def test_two_api_replicas_share_the_count_and_a_restart_forgets_nothing(panel, migrated_system_db, store):
    engines = [make_engine(migrated_system_db, poolclass=pool.NullPool) for _ in range(3)]
    if store == "redis":
        redis.Redis.from_url(REDIS_URL).flushdb()
    url = REDIS_URL if store == "redis" else None
    try:
        replicas = [create_app(panel, admin_token=None, public_url=BASE,
                               limiter=SignInLimiter(per_address=3, storage=shared_storage(url, engine)))
                    for engine in engines[:2]]
        guesser = [client_from(app, "198.51.100.9") for app in replicas]
        assert [attempt(guesser[0]), attempt(guesser[1]), attempt(guesser[0]), attempt(guesser[1])] == [
            400, 400, 400, 429]
        restarted = create_app(panel, admin_token=None, public_url=BASE,
                               limiter=SignInLimiter(per_address=3, storage=shared_storage(url, engines[2])))
        assert attempt(client_from(restarted, "198.51.100.9")) == 429
        assert attempt(client_from(restarted, "198.51.100.10")) == 400
    finally:
        for engine in engines:
            engine.dispose()


def proxied_app(panel: PanelService, trusted_proxies: str, per_address: int = 2):
    """The app wrapped the way ``mnemo api`` has uvicorn wrap it for these TRUSTED_PROXIES."""
    settings = Settings(_env_file=None, trusted_proxies=trusted_proxies)
    app = create_app(panel, admin_token=None, public_url=BASE,
                     limiter=SignInLimiter(per_address=per_address, overall=100))
    config = uvicorn.Config(app, log_config=None, lifespan="off", **uvicorn_options(settings))
    config.load()
    return config.loaded_app


def test_without_trusted_proxies_x_forwarded_for_from_loopback_does_not_escape_the_limit(panel, monkeypatch):
    monkeypatch.delenv("FORWARDED_ALLOW_IPS", raising=False)
    local = client_from(proxied_app(panel, ""), "127.0.0.1")
    answers = [attempt(local, **{"X-Forwarded-For": f"192.0.2.{n}"}) for n in range(1, 5)]
    assert answers == [400, 400, 429, 429]


def test_a_trusted_proxy_names_the_client_and_others_cannot(panel):
    app = proxied_app(panel, "10.0.0.0/8, 127.0.0.1")
    proxy, stranger = client_from(app, "10.20.30.40"), client_from(app, "198.51.100.9")
    assert [attempt(proxy, **{"X-Forwarded-For": f"192.0.2.{n}"}) for n in range(1, 5)] == [400] * 4
    assert [attempt(proxy, **{"X-Forwarded-For": "192.0.2.99"}) for _ in range(3)] == [400, 400, 429]
    assert [attempt(stranger, **{"X-Forwarded-For": f"192.0.2.{n}"}) for n in range(10, 13)] == [400, 400, 429]


def test_trusted_proxies_are_addresses_or_networks():
    assert Settings(_env_file=None).trusted_proxies == ()
    assert Settings(_env_file=None, trusted_proxies=" 10.1.0.0/16,::1 ,").trusted_proxies == ("10.1.0.0/16", "::1")
    assert uvicorn_options(Settings(_env_file=None))["proxy_headers"] is False
