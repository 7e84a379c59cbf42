"""The seed's retrieval score, component by component."""

import math
from datetime import UTC, datetime, timedelta

import pytest

from shared.scoring import (
    CATEGORY_BOOST,
    TOPIC_BOOST,
    combine,
    frequency_score,
    keyword_score,
    recency_score,
    rrf_scores,
    term_coverage,
)

NOW = datetime(2026, 11, 22, tzinfo=UTC)


def test_recency_halves_every_seven_days():
    assert recency_score(NOW, NOW) == pytest.approx(1.0)
    assert recency_score(NOW - timedelta(days=7), NOW) == pytest.approx(0.5)
    assert recency_score(NOW - timedelta(days=14), NOW) == pytest.approx(0.25)
    assert recency_score(NOW + timedelta(days=1), NOW) == pytest.approx(1.0)


def test_frequency_is_log_normalised_over_the_candidates():
    assert frequency_score(9, 9) == pytest.approx(1.0)
    assert frequency_score(0, 9) == 0.0
    assert frequency_score(3, 9) == pytest.approx(math.log(4) / math.log(10))
    assert frequency_score(0, 0) == 0.5


def test_category_boosts_follow_the_seed():
    assert (CATEGORY_BOOST["preference"], CATEGORY_BOOST["fact"], CATEGORY_BOOST["pattern"]) == (1.5, 1.2, 1.0)


def test_term_coverage_counts_prefix_matches():
    assert term_coverage(["pyth", "代码"], ["python", "代码", "喜欢"]) == 1.0
    assert term_coverage(["java", "代码"], ["python", "代码"]) == 0.5
    assert term_coverage([], ["python"]) == 0.0


def test_keyword_score_blends_coverage_with_relative_rank():
    assert keyword_score(1.0, 0.5, 0.5) == pytest.approx(1.0)
    assert keyword_score(0.5, 0.0, 0.5) == pytest.approx(0.35)


def test_the_total_is_the_seed_formula_and_the_topic_multiplies_it():
    plain = combine(relevance=1.0, keyword=1.0, memory_type="preference", recency=1.0, frequency=1.0,
                    confidence=1.0, on_topic=False)
    assert plain.total == pytest.approx(0.40 + 0.20 * 1.5 + 0.15 + 0.10 + 0.15)
    topical = combine(relevance=1.0, keyword=1.0, memory_type="preference", recency=1.0, frequency=1.0,
                      confidence=1.0, on_topic=True)
    assert topical.total == pytest.approx(plain.total * TOPIC_BOOST)
    assert topical.as_dict()["topic_boost"] == 1.3


def test_reciprocal_rank_fusion_rewards_items_found_by_both_branches():
    fused = rrf_scores([[1, 2, 3], [3, 4]])
    assert fused[3] == 1.0
    assert fused[1] > fused[2] > fused[4] * 0.99
    assert rrf_scores([[], []]) == {}
