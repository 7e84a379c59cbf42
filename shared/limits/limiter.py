"""One named limit ("20 per minute, per user") over a shared storage."""

from __future__ import annotations

import math
import time

from limits import RateLimitItem, parse
from limits.storage import Storage
from limits.strategies import FixedWindowRateLimiter

NAMESPACE = "mnemo"


class SharedLimit:
    """``rate`` (``limits`` notation: "20/minute", "5 per 10 seconds") for each key of the limit ``name``."""

    def __init__(self, storage: Storage, name: str, rate: str | RateLimitItem) -> None:
        self.name = name
        self.item = parse(rate) if isinstance(rate, str) else rate
        self._limiter = FixedWindowRateLimiter(storage)

    def hit(self, *key: str) -> float | None:
        """Count one hit; None while within the limit, else the seconds until its window ends (≥ 1)."""
        if self._limiter.hit(self.item, NAMESPACE, self.name, *key):
            return None
        return self.wait(*key)

    def wait(self, *key: str) -> float:
        """Seconds until the window of ``key`` ends (at least 1)."""
        reset = self._limiter.get_window_stats(self.item, NAMESPACE, self.name, *key).reset_time
        return float(max(1, math.ceil(reset - time.time())))
