"""Usage for users (``GET /api/v1/usage``, the panel's card) and operators (``GET /api/v1/admin/usage``,
``mnemo usage``) on real PostgreSQL: each sees what they may, money when prices are set, and an
operator can lift one user's quota."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.api.app import create_app
from bot.api.auth import SignInLimiter
from shared.app import cli
from shared.commands.panel import PanelService
from shared.commands.service import MemoryCommands
from shared.llm.metering import CallUsage
from shared.usage.policy import Prices, QuotaPolicy, UsagePolicy
from shared.usage.report import find_user, operator_usage
from shared.usage.texts import operator_usage_text
from tests.integration.test_api import ADMIN, ANN, BASE, BOB, Api

NOW = datetime.now(UTC)
POLICY = UsagePolicy(QuotaPolicy(per_user=5000), Prices(input_per_mtok=1.0, cached_input_per_mtok=0.5,
                                                         output_per_mtok=4.0, currency="CNY"))
ANSWER = CallUsage("turn", "fake-chat", prompt_tokens=1000, completion_tokens=200, cached_tokens=500, latency_ms=80)
MONITOR = CallUsage("extraction", "fake-chat", prompt_tokens=400, completion_tokens=50)


@pytest.fixture
def api(uow_factory) -> Api:
    panel = PanelService(uow_factory, session_lifetime=timedelta(hours=1), usage_policy=POLICY,
                         clock=lambda: NOW)  # the day the tests spend on, even across midnight
    app = create_app(panel, admin_token=ADMIN, public_url=BASE, limiter=SignInLimiter(per_address=100))
    return Api(app, MemoryCommands(uow_factory, panel_url=BASE), uow_factory)


def spend(api: Api, caller, calls, when: datetime = NOW, messages: int = 1) -> int:
    api.commands.panel_link(caller)  # the user exists
    user_id = api.user_id(caller)
    with api.uow_factory() as uow:
        uow.usage.record(user_id, None, calls, when, messages=messages)
        uow.commit()
    return user_id


def test_a_user_sees_their_own_usage_windows_money_and_what_is_left_today(api):
    spend(api, ANN, [ANSWER, MONITOR])
    spend(api, ANN, [ANSWER], when=NOW - timedelta(days=3))
    spend(api, BOB, [ANSWER, ANSWER])
    usage = api.signed_in(ANN).get("/api/v1/usage").json()
    today, week, month = usage["windows"]
    assert [w["days"] for w in usage["windows"]] == [1, 7, 30]
    assert (today["messages"], today["requests"], today["tokens"], today["cached_tokens"]) == (1, 2, 1650, 500)
    assert today["cached_share"] == pytest.approx(500 / 1400)
    assert today["cost"] == pytest.approx((900 * 1.0 + 500 * 0.5 + 250 * 4.0) / 1_000_000)
    assert (week["tokens"], month["messages"]) == (2850, 2)
    assert usage["allowance"]["limit"] == 5000
    assert usage["allowance"]["remaining"] == 5000 - 1650
    assert usage["currency"] == "CNY"
    assert usage["lifted"] is False


def test_operators_see_totals_kinds_days_and_top_users_and_nobody_else_does(api):
    ann = spend(api, ANN, [ANSWER, MONITOR])
    bob = spend(api, BOB, [ANSWER, ANSWER], when=NOW - timedelta(days=1))
    anonymous = api.client()
    assert anonymous.get("/api/v1/admin/usage").status_code == 401
    assert api.signed_in(ANN).get("/api/v1/admin/usage").status_code == 401
    assert anonymous.get("/api/v1/admin/usage", headers={"Authorization": "Bearer wrong"}).status_code == 401
    admin = {"Authorization": f"Bearer {ADMIN}"}
    report = anonymous.get("/api/v1/admin/usage?days=7", headers=admin).json()
    assert report["totals"]["tokens"] == 1650 + 2400
    assert report["totals"]["requests"] == 4
    assert [(k["kind"], k["requests"]) for k in report["by_kind"]] == [("turn", 3), ("extraction", 1)]
    assert [(u["user_id"], u["name"], u["tokens"]) for u in report["top_users"]] == [(bob, "Bob", 2400),
                                                                                      (ann, "Ann", 1650)]
    assert [d["tokens"] for d in report["by_day"]] == [2400, 1650]
    one = anonymous.get(f"/api/v1/admin/usage?user={ann}&days=1", headers=admin).json()
    assert (one["user_id"], one["totals"]["tokens"], one["top_users"]) == (ann, 1650, [])
    assert anonymous.get("/api/v1/admin/usage?user=999999999", headers=admin).status_code == 404
    assert anonymous.get("/api/v1/admin/usage?days=0", headers=admin).status_code == 422


def test_a_lifted_user_has_no_allowance_and_the_operator_report_reads_in_plain_words(api):
    ann = spend(api, ANN, [ANSWER])
    with api.uow_factory() as uow:
        assert find_user(uow, "telegram:1001") == ann == find_user(uow, str(ann))
        assert find_user(uow, "telegram:nobody") is None
        assert find_user(uow, "99999999999") is None
        uow.users.set_quota_lifted(ann, NOW)
        uow.commit()
    usage = api.signed_in(ANN).get("/api/v1/usage").json()
    assert usage["allowance"] is None
    assert usage["lifted"] is True
    with api.uow_factory() as uow:
        text = operator_usage_text(operator_usage(uow, NOW, POLICY, days=7))
    assert "Usage of all users, 7 UTC day(s)" in text
    assert "total: 1 message · 1 requests · 1,200 tokens" in text
    assert "replies: " in text
    assert "CNY" in text
    assert "#" in text


@pytest.mark.committed
def test_mnemo_usage_prints_the_report_and_lifts_and_restores_a_users_quota(api, migrated_url, monkeypatch, capsys):
    ann = spend(api, ANN, [ANSWER])
    monkeypatch.setenv("DATABASE_URL", migrated_url)
    monkeypatch.setattr("shared.app.bootstrap.configure_logging", lambda _settings: None)  # the test's own logging
    assert cli.main(["usage", "--lift", "telegram:1001"]) == 0
    assert "no longer applies" in capsys.readouterr().out
    assert api.signed_in(ANN).get("/api/v1/usage").json()["lifted"] is True
    assert cli.main(["usage", "--restore", str(ann)]) == 0
    assert "applies again" in capsys.readouterr().out
    assert cli.main(["usage", "--user", "telegram:nobody"]) == 1
    assert cli.main(["usage", "--days", "0"]) == 2
    capsys.readouterr()
    assert cli.main(["usage", "--days", "3"]) == 0
    printed = capsys.readouterr().out
    assert "Usage of all users, 3 UTC day(s)" in printed
    assert "#" in printed
    assert "Ann" in printed
