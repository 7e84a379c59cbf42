"""The seed's retrieval score, component by component."""

import math
from datetime import UTC, datetime, timedelta

import pytest

from shared.search.scoring import (
    ADJACENT_SHARE,
    CATEGORY_BOOST,
    NEIGHBOUR_SHARE,
    NEIGHBOUR_WINDOW,
    TIME_CUE_BOOST,
    TOPIC_BOOST,
    VECTOR_SHARE,
    adjacent_support,
    combine,
    frequency_score,
    fused_relevance,
    neighbour_support,
    recency_clock,
    recency_score,
    relative_scores,
    term_coverage,
    with_neighbours,
    with_time_cue,
)

NOW = datetime(2026, 11, 22, tzinfo=UTC)


def test_recency_halves_every_seven_days():
    assert recency_score(NOW, NOW) == pytest.approx(1.0)
    assert recency_score(NOW - timedelta(days=7), NOW) == pytest.approx(0.5)
    assert recency_score(NOW - timedelta(days=14), NOW) == pytest.approx(0.25)
    assert recency_score(NOW + timedelta(days=1), NOW) == pytest.approx(1.0)


def test_time_away_beyond_a_day_does_not_age_what_the_user_said():
    left = datetime(2026, 3, 1, 21, 30, tzinfo=UTC)
    assert recency_clock(left + timedelta(hours=5), left) == left + timedelta(hours=5)
    assert recency_clock(left + timedelta(days=200), left) == left + timedelta(days=1)
    assert recency_clock(left + timedelta(days=3), None) == left + timedelta(days=3), "a first message: the clock"
    used = left - timedelta(days=2)
    assert (recency_score(used, recency_clock(left + timedelta(days=200), left))
            == recency_score(used, recency_clock(left + timedelta(days=1), left)))


def test_frequency_is_log_normalised_over_the_candidates():
    assert frequency_score(9, 9) == pytest.approx(1.0)
    assert frequency_score(0, 9) == 0.0
    assert frequency_score(3, 9) == pytest.approx(math.log(4) / math.log(10))
    assert frequency_score(0, 0) == 0.5


def test_category_boosts_follow_the_seed():
    assert (CATEGORY_BOOST["preference"], CATEGORY_BOOST["fact"], CATEGORY_BOOST["pattern"]) == (1.5, 1.2, 1.0)


def test_term_coverage_counts_matches_as_the_tsquery_does_english_stems_whole_chinese_words_as_prefixes():
    assert term_coverage(["python", "代码"], ["python", "代码写作", "喜欢"]) == 1.0
    assert term_coverage(["pyth", "代码"], ["python", "代码", "喜欢"]) == 0.5
    assert term_coverage(["java", "代码"], ["python", "代码"]) == 0.5
    assert term_coverage([], ["python"]) == 0.0


def test_relative_scores_put_the_best_at_one():
    assert relative_scores({1: 4.0, 2: 1.0, 3: 0.0}) == {1: 1.0, 2: 0.25, 3: 0.0}
    assert relative_scores({1: 0.0}) == {1: 0.0}
    assert relative_scores({}) == {}


def test_neighbours_are_memories_noted_within_the_window_and_lend_their_best_score():
    noted = {1: NOW, 2: NOW + timedelta(minutes=10), 3: NOW + NEIGHBOUR_WINDOW + timedelta(minutes=5),
             4: NOW + timedelta(days=3)}
    support = neighbour_support({1: 2.0, 2: 0.5, 3: 1.0, 4: 9.0}, noted)
    assert support == {1: 0.5, 2: 2.0, 3: 0.5, 4: 0.0}


def test_a_memory_borrows_a_share_of_its_best_neighbours_score():
    assert with_neighbours({1: 1.0, 2: 0.0}, {1: 0.0, 2: 1.0}) == {1: 1.0, 2: NEIGHBOUR_SHARE}


def test_a_memory_noted_right_beside_a_match_borrows_from_it_within_one_sitting_only():
    noted = {1: NOW, 2: NOW + timedelta(minutes=1), 3: NOW + timedelta(days=2)}
    beside = adjacent_support({1: 2.0, 2: 0.0, 3: 0.0}, {2: (1,), 3: (1,), 9: (1,)}, noted)
    assert beside == {2: 2.0, 3: 0.0}
    assert with_neighbours({2: 0.0}, {}, adjacent=beside) == {2: ADJACENT_SHARE * 2.0}


def test_memories_noted_within_the_asked_about_time_match_better():
    assert with_time_cue({1: 2.0, 2: 2.0}, [2]) == {1: 2.0, 2: 2.0 * (1 + TIME_CUE_BOOST)}


def test_recency_and_use_decide_between_equal_matches_but_never_lift_a_weak_match_over_an_exact_one():
    def total(relevance, recency):
        return combine(relevance=relevance, keyword=relevance, memory_type="event", recency=recency,
                       frequency=0.0, confidence=0.9, on_topic=False).total

    assert total(1.0, recency=1.0) > total(1.0, recency=0.0)
    assert total(1.0, recency=0.0) > total(0.7, recency=1.0)
    assert total(0.0, recency=1.0) == total(0.0, recency=0.0)


def test_the_total_weighs_use_in_proportion_to_relevance_and_the_topic_multiplies_it():
    plain = combine(relevance=1.0, keyword=1.0, memory_type="preference", recency=1.0, frequency=1.0,
                    confidence=1.0, on_topic=False)
    assert plain.total == pytest.approx(0.40 + 0.20 * 1.5 + 0.15 + 0.10 + 0.15)  # the seed's, at full relevance
    partial = combine(relevance=0.5, keyword=0.5, memory_type="fact", recency=0.8, frequency=0.4,
                      confidence=0.9, on_topic=False)
    assert partial.total == pytest.approx(0.40 * 0.5 + 0.20 * 1.2 + 0.15 * 0.9 + 0.5 * (0.15 * 0.8 + 0.10 * 0.4))
    assert partial.total < 0.40 * 0.5 + 0.20 * 1.2 + 0.15 * 0.8 + 0.10 * 0.4 + 0.15 * 0.9  # the seed's adds use whole
    unmatched = combine(relevance=0.0, keyword=0.0, memory_type="event", recency=1.0, frequency=1.0,
                        confidence=0.5, on_topic=False)
    assert unmatched.total == pytest.approx(0.20 * 1.1 + 0.15 * 0.5)  # use lends nothing without a match
    topical = combine(relevance=1.0, keyword=1.0, memory_type="preference", recency=1.0, frequency=1.0,
                      confidence=1.0, on_topic=True)
    assert topical.total == pytest.approx(plain.total * TOPIC_BOOST)
    assert topical.as_dict()["topic_boost"] == 1.3
    assert plain.as_dict()["neighbours"] == 0.0


def test_vectors_add_a_share_of_cosine_similarity_and_lexical_strength_is_kept():
    fused = fused_relevance({1: 1.0, 2: 0.4}, {2: 0.9, 3: 0.8, 4: -0.2})
    assert fused[1] == pytest.approx(1 - VECTOR_SHARE)
    assert fused[2] == pytest.approx((1 - VECTOR_SHARE) * 0.4 + VECTOR_SHARE * 0.9)
    assert fused[3] == pytest.approx(VECTOR_SHARE * 0.8)
    assert fused[4] == 0.0
    assert fused[1] > fused[2] > fused[3]
    assert fused_relevance({}, {}) == {}
