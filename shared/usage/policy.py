"""The rules of usage, fixed at start-up: daily token quotas (per user, per group chat) and prices. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shared.settings import Settings

TOKENS_PER_PRICE_UNIT = 1_000_000
"""Prices are per million tokens (``LLM_PRICE_*_PER_MTOK``)."""


@dataclass(frozen=True)
class Prices:
    """What a million tokens cost; unset prices count as nothing, and cached input as input when unset."""

    input_per_mtok: float | None = None
    cached_input_per_mtok: float | None = None
    output_per_mtok: float | None = None
    currency: str = "USD"

    @property
    def known(self) -> bool:
        """Money can be shown: at least the input or the output price is set."""
        return self.input_per_mtok is not None or self.output_per_mtok is not None

    def cost(self, prompt_tokens: int, cached_tokens: int, completion_tokens: int) -> float:
        """The price of the tokens (the cached ones at the cached price)."""
        cached = min(cached_tokens, prompt_tokens)
        cached_price = self.cached_input_per_mtok if self.cached_input_per_mtok is not None else self.input_per_mtok
        spent = ((prompt_tokens - cached) * (self.input_per_mtok or 0.0) + cached * (cached_price or 0.0)
                 + completion_tokens * (self.output_per_mtok or 0.0))
        return spent / TOKENS_PER_PRICE_UNIT


@dataclass(frozen=True)
class QuotaPolicy:
    """Daily token allowances (prompt and completion, every kind of work); None means no limit."""

    per_user: int | None = None
    per_chat: int | None = None
    """A group chat's allowance, every member's use in it together."""

    @property
    def enabled(self) -> bool:
        return self.per_user is not None or self.per_chat is not None

    def user_over(self, used: int, *, lifted: bool) -> bool:
        return self.per_user is not None and not lifted and used >= self.per_user

    def chat_over(self, used: int) -> bool:
        return self.per_chat is not None and used >= self.per_chat

    @classmethod
    def from_settings(cls, settings: Settings) -> QuotaPolicy:
        return cls(settings.llm_daily_tokens_per_user, settings.llm_daily_tokens_per_chat)

    def remaining(self, used: int, *, lifted: bool) -> int | None:
        """Tokens left today for a user (None: no limit applies)."""
        if self.per_user is None or lifted:
            return None
        return max(0, self.per_user - used)


@dataclass(frozen=True)
class UsagePolicy:
    """Quotas and prices together, as every front-end and the workers read them."""

    quota: QuotaPolicy = field(default_factory=QuotaPolicy)
    prices: Prices = field(default_factory=Prices)

    @classmethod
    def from_settings(cls, settings: Settings) -> UsagePolicy:
        return cls(QuotaPolicy.from_settings(settings),
                   Prices(settings.llm_price_input_per_mtok, settings.llm_price_cached_input_per_mtok,
                          settings.llm_price_output_per_mtok, settings.llm_price_currency))
