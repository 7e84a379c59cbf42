"""The rules of usage without a database: prices, quotas, UTC days, estimates, the words of /usage; and
``/usage`` through the memory-command service on the fake unit of work."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from shared.commands.service import Caller, MemoryCommands
from shared.conversation.notice_texts import Notice, NoticeCode, notice_text
from shared.conversation.service import quota_notice
from shared.db.usage_models import UsageTotals, next_usage_day, usage_day
from shared.llm.metering import CallUsage, metered, note_chat, note_embedding
from shared.usage.policy import Prices, QuotaPolicy, UsagePolicy
from shared.usage.quota import QuotaState
from shared.usage.report import Allowance, UsageWindow, UserUsage
from shared.usage.texts import money, user_usage_text
from tests.fakes.uow import Clock, FakeDatabase

NOW = datetime(2026, 11, 22, 23, 30, tzinfo=UTC)
SHANGHAI = timezone(timedelta(hours=8))


def test_cached_input_is_priced_as_cached_and_as_input_when_it_has_no_price_of_its_own():
    prices = Prices(input_per_mtok=2.0, cached_input_per_mtok=0.5, output_per_mtok=8.0)
    assert prices.cost(1_000_000, 400_000, 100_000) == pytest.approx(0.6 * 2 + 0.4 * 0.5 + 0.1 * 8)
    assert Prices(input_per_mtok=2.0).cost(1_000_000, 400_000, 0) == pytest.approx(2.0)
    assert Prices(input_per_mtok=2.0).cost(100, 500, 0) == pytest.approx(200 / 1_000_000)  # never more cached
    assert not Prices().known
    assert Prices(output_per_mtok=1).known


def test_a_quota_is_spent_at_its_limit_lifted_users_have_none_and_no_limit_means_none():
    quota = QuotaPolicy(per_user=1000, per_chat=5000)
    assert not quota.user_over(999, lifted=False)
    assert quota.user_over(1000, lifted=False)
    assert not quota.user_over(10**9, lifted=True)
    assert quota.remaining(300, lifted=False) == 700
    assert quota.remaining(5000, lifted=False) == 0
    assert quota.remaining(300, lifted=True) is None
    assert QuotaPolicy().remaining(300, lifted=False) is None
    assert quota.chat_over(5000)
    assert not QuotaPolicy(per_user=1).chat_over(10**9)
    assert not QuotaPolicy().enabled
    assert QuotaPolicy(per_chat=1).enabled


def test_usage_days_are_utc_days_and_the_next_one_begins_at_midnight_utc():
    late_in_shanghai = datetime(2026, 11, 23, 6, 0, tzinfo=SHANGHAI)  # 22:00 UTC the day before
    assert usage_day(late_in_shanghai) == date(2026, 11, 22)
    assert next_usage_day(late_in_shanghai) == datetime(2026, 11, 23, tzinfo=UTC)
    assert next_usage_day(datetime(2026, 12, 31, 23, 59, tzinfo=UTC)) == datetime(2027, 1, 1, tzinfo=UTC)


def test_a_request_without_reported_usage_is_estimated_from_its_text_and_marked():
    request = {"model": "m", "messages": [{"role": "user", "content": "我喜欢乌龙茶 and green tea"}]}
    with metered("turn") as meter:
        note_chat(request, {}, "好的", 0.25)
        note_chat(request, {"prompt_tokens": 30, "total_tokens": 42}, "好的", 0.1)
        note_embedding("e", None, ["one text"], 0.01)
    guessed, reported, embedded = meter.calls
    assert guessed.estimated
    assert guessed.prompt_tokens >= 8
    assert guessed.completion_tokens == 2
    assert guessed.latency_ms == 250
    assert (reported.estimated, reported.prompt_tokens, reported.completion_tokens) == (False, 30, 12)
    assert embedded.estimated
    assert embedded.completion_tokens == 0
    assert embedded.kind == "turn"
    note_chat(request, {}, "outside", 0.1)  # no meter open: nothing, nowhere
    assert len(meter.calls) == 3


def test_usage_reads_in_english_and_chinese_with_money_and_what_is_left():
    windows = tuple(UsageWindow(days, UsageTotals(messages=days, prompt_tokens=10_000 * days, completion_tokens=500,
                                                  cached_tokens=2_500 * days), cost=0.0123 * days)
                    for days in (1, 7, 30))
    usage = UserUsage(windows, Allowance(20_000, 10_500, 9_500, datetime(2026, 11, 23, tzinfo=UTC)), False, "USD")
    english = user_usage_text(usage, "en")
    assert english.splitlines() == [
        "Your usage (UTC days):", "Today: 1 message · 10,500 tokens · 25% cached · ≈ 0.0123 USD",
        "7 days: 7 messages · 70,500 tokens · 25% cached · ≈ 0.0861 USD",
        "30 days: 30 messages · 300,500 tokens · 25% cached · ≈ 0.3690 USD",
        "Daily allowance: 20,000 tokens, 9,500 left today (resets 00:00 UTC)."]
    chinese = user_usage_text(usage, "zh-CN")
    assert "今天：1 条消息 · 10,500 tokens · 缓存 25% · 约 0.0123 USD" in chinese
    assert chinese.endswith("每日额度 20,000 tokens，今天还剩 9,500（UTC 00:00 重置）。")
    assert money(12.5, "CNY") == "12.50 CNY"


def test_the_over_quota_notice_says_when_it_resets_for_a_user_or_a_group():
    resets = datetime(2026, 11, 23, tzinfo=UTC)
    assert quota_notice(QuotaState(True, False, 100, resets)) == Notice.of(NoticeCode.QUOTA_SPENT, resets="00:00")
    assert "00:00 UTC" in notice_text(quota_notice(QuotaState(True, False, 100, resets)), chinese=False)
    assert notice_text(quota_notice(QuotaState(True, True, 100, resets)), chinese=False).startswith("This group")
    assert "UTC 00:00" in notice_text(quota_notice(QuotaState(True, False, 100, resets)), chinese=True)


def test_usage_on_the_fake_unit_of_work_counts_only_the_callers_days_and_kinds():
    database = FakeDatabase(Clock(NOW))
    commands = MemoryCommands(database.unit_of_work, clock=lambda: NOW,
                              usage_policy=UsagePolicy(QuotaPolicy(per_user=5000)))
    ann, bob = Caller("telegram", "1", locale="en"), Caller("telegram", "2")
    commands.is_paused(ann), commands.is_paused(bob)  # both exist
    with database.unit_of_work() as uow:
        ann_id = uow.users.identify("telegram", "1").user_id
        bob_id = uow.users.identify("telegram", "2").user_id
        uow.usage.record(ann_id, 1, [CallUsage("turn", "m", 1000, 100, 400)], NOW, messages=1)
        uow.usage.record(ann_id, None, [CallUsage("review", "m", 200, 20)], NOW - timedelta(days=3))
        uow.usage.record(ann_id, 1, [CallUsage("turn", "m", 9000, 900)], NOW - timedelta(days=40), messages=1)
        uow.usage.record(bob_id, 2, [CallUsage("turn", "m", 7777, 7)], NOW, messages=1)
        uow.commit()
    today, week, month = commands.usage(ann).windows
    assert (today.totals.tokens, week.totals.tokens, month.totals.tokens) == (1100, 1320, 1320)
    assert (today.totals.messages, month.totals.calls, today.cached_share) == (1, 2, 0.4)
    assert commands.usage(ann).allowance.remaining == 3900
    assert commands.usage(bob).windows[0].totals.tokens == 7784
