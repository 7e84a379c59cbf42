"""Summaries of measured values (pure): percentiles and distributions."""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile (``share`` 0-1) of a non-empty sequence."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def distribution(values: Sequence[float]) -> dict[str, float]:
    """Count, mean, p50, p95 and max of a non-empty sequence."""
    return {"count": len(values), "mean": statistics.fmean(values), "p50": percentile(values, 0.50),
            "p95": percentile(values, 0.95), "max": max(values)}
