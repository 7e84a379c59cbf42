"""The words of usage: ``/usage`` in Chinese and English, and the operators' report (the over-quota notice is a
reply's notice: :mod:`shared.conversation.notice_texts`).

Plain text only; every front-end shows the same. Days are UTC days, and the texts say so.
"""

from __future__ import annotations

from datetime import UTC
from typing import Any

from shared.text import is_chinese

WINDOW_NAMES = {1: ("Today", "今天"), 7: ("7 days", "近 7 天"), 30: ("30 days", "近 30 天")}
KIND_NAMES = {"turn": "replies", "turn_embedding": "reply search", "extraction": "memory keeping",
              "episode": "summaries", "review": "reviews", "dedup": "dedup", "embedding": "embeddings",
              "followup": "follow-ups"}
COST_DIGITS = 4


def user_usage_text(usage: Any, locale: str | None) -> str:
    """``/usage``: today, 7 and 30 days (messages, tokens, the share cached, money when priced), then the
    allowance left today."""
    zh = is_chinese(locale)
    lines = ["你的用量（按 UTC 日计算）：" if zh else "Your usage (UTC days):"]
    lines += [_window_line(window, usage.currency, zh) for window in usage.windows]
    allowance = usage.allowance
    if allowance is not None:
        resets = f"{allowance.resets_at.astimezone(UTC):%H:%M}"
        lines.append(f"每日额度 {tokens(allowance.limit)} tokens，今天还剩 {tokens(allowance.remaining)}"
                     f"（UTC {resets} 重置）。" if zh else
                     f"Daily allowance: {tokens(allowance.limit)} tokens, {tokens(allowance.remaining)} left today "
                     f"(resets {resets} UTC).")
    elif usage.lifted:
        lines.append("你没有每日额度限制。" if zh else "No daily limit applies to you.")
    sent, answered = usage.followups
    if sent or answered:
        lines.append(f"近 30 天回访：发出 {sent} 次，你回复了 {answered} 次。" if zh else
                     f"Follow-ups in 30 days: {sent} sent, {answered} answered.")
    return "\n".join(lines)


def operator_usage_text(report: Any) -> str:
    """``mnemo usage``: totals, by kind, by day and the top users, for operators (English)."""
    who = f"user {report.user.user_id} ({report.user.name or 'no name'})" if report.user else "all users"
    lines = [f"Usage of {who}, {report.days} UTC day(s) from {report.since:%Y-%m-%d}:",
             "  " + _window_line(report.totals, report.currency, False, label="total")]
    if report.by_kind:
        lines.append("By kind:")
        lines += ["  " + _window_line(window, report.currency, False, label=KIND_NAMES.get(kind, kind))
                  for kind, window in report.by_kind]
    if report.top_users:
        lines.append("Top users:")
        lines += ["  " + _window_line(window, report.currency, False, label=_user_label(line))
                  for line, window in report.top_users]
    if report.by_day:
        lines.append("By day:")
        lines += ["  " + _window_line(window, report.currency, False, label=f"{day:%Y-%m-%d}")
                  for day, window in report.by_day]
    return "\n".join(lines)


def _user_label(line: Any) -> str:
    return f"#{line.user_id} {line.name or ''}".strip()


def tokens(count: int) -> str:
    return f"{count:,}"


def money(cost: float, currency: str) -> str:
    """``0.0021 USD``: enough digits to tell small amounts apart."""
    return f"{cost:.{COST_DIGITS}f} {currency}" if cost < 1 else f"{cost:,.2f} {currency}"


def _window_line(window: Any, currency: str | None, zh: bool, *, label: str | None = None) -> str:
    name = label or WINDOW_NAMES.get(window.days, (f"{window.days} days", f"近 {window.days} 天"))[zh]
    totals = window.totals
    share = window.cached_share
    cached = "—" if share is None else f"{share:.0%}"
    if zh:
        parts = [f"{totals.messages} 条消息", f"{tokens(totals.tokens)} tokens", f"缓存 {cached}"]
    else:
        parts = [f"{totals.messages} {'message' if totals.messages == 1 else 'messages'}",
                 f"{tokens(totals.tokens)} tokens", f"{cached} cached"]
    if label is not None:  # operators: requests and estimates too
        parts.insert(1, f"{totals.calls} requests")
        if totals.estimated_calls:
            parts.append(f"{totals.estimated_calls} estimated")
    if currency is not None and window.cost is not None:
        parts.append(("约 " if zh else "≈ ") + money(window.cost, currency))
    return f"{name}{'：' if zh else ': '}" + " · ".join(parts)
