"""The pure steps of dedup: blocking keys, candidate pairs, similarity, clusters and the survivor."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared.lifecycle.dedup import (
    MAX_BLOCK,
    WINDOW,
    blocking_keys,
    candidate_pairs,
    connected_groups,
    dedup_item,
    find_clusters,
    read_groups,
    similarity,
    survivor_rank,
)
from shared.search.tokenizer import search_text


def item(memory_id: int, content: str, **fields):
    return dedup_item(memory_id, content, search_text([content]), **fields)


def test_blocking_keys_are_the_rarest_tokens_that_another_memory_shares():
    sets = [frozenset(s.split()) for s in ("tea green like", "tea green", "tea coffee", "tea solo")]
    keys = blocking_keys(sets, per_item=2)
    assert keys[0] == ("green", "tea")  # green: 2 holders, tea: 4; "like" is held by no one else
    assert keys[2] == ("tea",)  # coffee is its own alone
    assert keys[3] == ("tea",)


def test_near_duplicates_meet_even_when_their_own_keys_differ():
    items = [item(1, "I like green tea"), item(2, "I really like green tea!"),
             item(3, "My sister Anna lives in Berlin")]
    assert (0, 1) in candidate_pairs(items)
    assert all(2 not in pair for pair in candidate_pairs(items))


def test_the_same_text_without_any_token_is_still_a_candidate():
    items = [item(1, "嗯嗯!"), item(2, "嗯嗯"), item(3, "哈哈")]
    assert candidate_pairs(items) == {(0, 1)}


def test_a_crowded_block_yields_only_a_window_of_neighbours():
    items = [item(i, f"tea number{i:05d}") for i in range(2_000)]
    pairs = candidate_pairs(items)
    assert len(pairs) <= len(items) * (2 * WINDOW + 1)
    assert len(items) > MAX_BLOCK


@pytest.mark.parametrize("left, right", [
    ("I like green tea.", "i like green tea"),
    ("我喜欢喝乌龙茶", "我很喜欢喝乌龙茶。"),
])
def test_the_same_statement_in_other_words_or_punctuation_is_a_clear_duplicate(left, right):
    assert similarity(item(1, left), item(2, right)) >= 0.8


@pytest.mark.parametrize("left, right", [
    ("I like green tea", "I don't like green tea"),
    ("我喜欢喝乌龙茶", "我不喜欢喝乌龙茶"),
    ("My meeting is at 3pm", "My meeting is at 5pm"),
    ("明天下午三点开会", "明天下午五点开会"),
    ("每周三去游泳", "每周五去游泳"),
])
def test_a_negation_or_another_number_is_never_a_duplicate(left, right):
    assert similarity(item(1, left), item(2, right)) == 0.0


def test_unrelated_memories_are_not_similar():
    assert similarity(item(1, "User likes oolong tea"), item(2, "User dislikes oolong tea")) < 0.8
    assert similarity(item(1, "我养了一只猫"), item(2, "我在上海工作")) == 0.0


def test_union_find_joins_chains_into_one_group_and_leaves_singletons_out():
    assert connected_groups(6, [(0, 1), (1, 2), (4, 5)]) == [(0, 1, 2), (4, 5)]
    assert connected_groups(3, []) == []


def test_without_a_model_only_clear_duplicates_cluster():
    items = [item(1, "I like green tea"), item(2, "I really like green tea"),
             item(3, "User likes oolong tea"), item(4, "User likes oolong tea in winter evenings")]
    clusters = find_clusters(items)
    assert [(c.members, c.sure) for c in clusters] == [((0, 1), True)]


def test_with_a_model_looser_pairs_form_an_unsure_cluster_to_confirm():
    items = [item(1, "I like green tea"), item(2, "I really like green tea"),
             item(3, "User likes oolong tea"), item(4, "User likes oolong tea in winter evenings")]
    clusters = {c.members: c for c in find_clusters(items, include_unsure=True)}
    assert clusters[(0, 1)].sure
    assert not clusters[(2, 3)].sure
    assert clusters[(2, 3)].sure_parts == ()


def test_an_oversized_unsure_cluster_falls_back_to_its_clear_parts():
    items = [item(i, f"User likes oolong tea {word}") for i, word in enumerate(
        ["hot", "iced", "strong", "weak", "sweet", "plain", "daily", "often", "mornings", "evenings"])]
    items.append(item(99, "User likes oolong tea hot!"))
    clusters = find_clusters(items, include_unsure=True)
    assert [(c.members, c.sure) for c in clusters] == [((0, 10), True)]


def test_the_survivor_is_core_then_most_confident_then_most_used_then_newest():
    old, new = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 6, 1, tzinfo=UTC)
    ranks = {
        "core": survivor_rank("core", 0.5, 0, old, 1),
        "confident": survivor_rank("long", 0.9, 0, old, 2),
        "used": survivor_rank("long", 0.5, 7, old, 3),
        "newest": survivor_rank("long", 0.5, 0, new, 4),
        "oldest": survivor_rank("long", 0.5, 0, old, 5),
    }
    assert sorted(ranks, key=ranks.get, reverse=True) == ["core", "confident", "used", "newest", "oldest"]


def test_the_models_groups_keep_only_known_ids_once():
    answer = {"groups": [[1, "2", 99], [2, 3], ["x"], [4]], "reason": "same"}
    assert read_groups(answer, {1, 2, 3, 4}) == [[1, 2]]
    assert read_groups({"groups": "no"}, {1}) is None
    assert read_groups(None, {1}) is None
