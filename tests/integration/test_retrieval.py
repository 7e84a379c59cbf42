"""Retrieval on real PostgreSQL: candidates, the LIKE fallback, boosts, episodes, and vector fusion."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from shared.db.memory_models import Episode
from shared.recall.retrieval import recall_for_turn
from shared.repositories.vectors import VectorIndex
from tests.builders import memory as memory_row

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def remember(uow, user_id, content, type_="fact", **fields):
    return uow.memories.add(memory_row(user_id, content, type_=type_, confidence=fields.pop("confidence", 0.9),
                                       created_at=fields.pop("created_at", NOW), updated_at=NOW, **fields))


@pytest.fixture
def alice(uow_factory):
    with uow_factory() as uow:
        user_id = uow.users.identify("console", "alice").user_id
        uow.commit()
    return user_id


def test_the_like_fallback_finds_a_word_inside_a_longer_chinese_token(uow_factory, alice):
    with uow_factory() as uow:
        memory = remember(uow, alice, "我喜欢看科幻电影")
        uow.commit()
        recall = recall_for_turn(uow, alice, "周末去看电影吗", now=NOW, limit=5)
    assert [item.memory.id for item in recall.memories] == [memory.id]


def test_preferences_outrank_facts_and_the_topic_multiplies_by_1_3(uow_factory, alice):
    with uow_factory() as uow:
        fact = remember(uow, alice, "coffee every morning at work")
        preference = remember(uow, alice, "loves coffee with oat milk", type_="preference")
        uow.commit()
        plain = recall_for_turn(uow, alice, "coffee", now=NOW, limit=5)
        topical = recall_for_turn(uow, alice, "coffee", now=NOW, limit=5, topic="work")
    assert [item.memory.id for item in plain.memories] == [preference.id, fact.id]
    boosted = {item.memory.id: item.score for item in topical.memories}
    assert boosted[fact.id].topic_boost == 1.3
    assert boosted[preference.id].topic_boost == 1.0


def test_recency_and_use_count_shape_the_score(uow_factory, alice):
    with uow_factory() as uow:
        stale = remember(uow, alice, "plays tennis", last_accessed=NOW - timedelta(days=28))
        fresh = remember(uow, alice, "plays tennis on sundays", last_accessed=NOW, access_count=5)
        uow.commit()
        scores = {item.memory.id: item.score for item in recall_for_turn(uow, alice, "tennis", now=NOW,
                                                                          limit=5).memories}
    assert scores[stale.id].recency == pytest.approx(1 / 16)
    assert scores[fresh.id].recency == pytest.approx(1.0)
    assert scores[fresh.id].frequency == 1.0
    assert scores[fresh.id].total > scores[stale.id].total


def test_no_keywords_means_no_memories_and_nothing_breaks(uow_factory, alice):
    with uow_factory() as uow:
        remember(uow, alice, "likes tea")
        uow.commit()
        recall = recall_for_turn(uow, alice, "?!? 🙂", now=NOW, limit=5)
    assert recall.memories == ()
    assert recall.mode == "lexical"


def test_episodes_that_match_come_back_and_otherwise_the_latest_one(uow_factory, alice):
    with uow_factory() as uow:
        interview = uow.episodes.add(Episode(user_id=alice, summary="[2026-11-20 18:00] 聊了面试和游戏",
                                             started_at=NOW, ended_at=NOW - timedelta(days=2)))
        latest = uow.episodes.add(Episode(user_id=alice, summary="[2026-11-21 18:00] talked about cooking",
                                          started_at=NOW, ended_at=NOW - timedelta(days=1)))
        uow.commit()
        matched = recall_for_turn(uow, alice, "面试怎么样了", now=NOW, limit=5)
        continuity = recall_for_turn(uow, alice, "hello", now=NOW, limit=5)
    assert [e.id for e in matched.episodes] == [interview.id]
    assert matched.episodes_matched
    assert [e.id for e in continuity.episodes] == [latest.id]
    assert not continuity.episodes_matched


def unit_vector(index: int, dims: int = 384) -> list[float]:
    vector = [0.0] * dims
    vector[index] = 1.0
    return vector


@pytest.mark.pgvector
def test_vector_neighbours_are_fused_with_lexical_results_and_stay_within_the_user(uow_factory, alice):
    vectors = VectorIndex()
    with uow_factory() as uow:
        bob = uow.users.identify("console", "bob").user_id
        lexical = remember(uow, alice, "my dog is called Rex")
        semantic = remember(uow, alice, "adopted a puppy from the shelter last spring",
                            created_at=NOW - timedelta(days=40))  # another sitting: not the dog line's neighbour
        bobs = remember(uow, bob, "bob's secret puppy")
        enabled = vectors.enabled(uow)
        for memory, index in ((lexical, 1), (semantic, 0), (bobs, 0)):
            vectors.store_memory_embedding(uow, memory.user_id, memory.id, unit_vector(index), "test")
        uow.commit()
        recall = recall_for_turn(uow, alice, "how is my dog", now=NOW, limit=5, query_vector=unit_vector(0),
                                 vectors=vectors)
    found = {item.memory.id: item.score for item in recall.memories}
    assert bobs.id not in found
    if not enabled:  # PostgreSQL without pgvector: lexical only, same interface
        assert recall.mode == "lexical"
        assert set(found) == {lexical.id}
        return
    assert recall.mode == "hybrid"
    assert set(found) == {lexical.id, semantic.id}
    assert found[semantic.id].vector_similarity == pytest.approx(1.0)
    assert found[lexical.id].keyword > 0
    assert math.isclose(found[lexical.id].vector_similarity, 0.0, abs_tol=1e-6)


def test_a_chinese_word_finds_the_longer_words_it_begins_like_the_seeds_prefix_star(uow_factory, alice):
    with uow_factory() as uow:
        memory = remember(uow, alice, "我有一只猫咪", type_="fact")
        uow.commit()
        recall = recall_for_turn(uow, alice, "猫", now=NOW, limit=5)
    assert [item.memory.id for item in recall.memories] == [memory.id]
    assert recall.memories[0].score.keyword > 0.5


def test_an_english_word_finds_every_form_of_itself_and_no_word_that_merely_starts_like_it(uow_factory, alice):
    with uow_factory() as uow:
        walk = remember(uow, alice, "I went hiking with my dogs", type_="event")
        remember(uow, alice, "A special offer on dogma books", type_="event", created_at=NOW - timedelta(days=1))
        uow.commit()
        hike = recall_for_turn(uow, alice, "shall we hike with the dog?", now=NOW, limit=5)
        species = recall_for_turn(uow, alice, "which species?", now=NOW, limit=5)
    assert [item.memory.id for item in hike.memories] == [walk.id]
    assert species.memories == ()


