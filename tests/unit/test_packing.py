"""Packing the memory budget: the base count, more short memories while they fit and match, fewer when
one is decisive, no near-duplicates, episodes only when they earn their tokens, compact lines."""

from datetime import UTC, datetime, timedelta

from shared.conversation.packing import (
    EXTRA_FACTOR,
    MemoryLine,
    candidate_count,
    pack_memories,
    similarity,
    word_set,
)
from shared.text import estimate_tokens

DAY = datetime(2026, 5, 8, 13, 56, tzinfo=UTC)


def line(memory_id: int, content: str, relevance: float = 1.0, *, days: int = 0, type_: str = "event",
         decisive: bool = False) -> MemoryLine:
    return MemoryLine(memory_id, type_, content, DAY + timedelta(days=days), relevance, decisive)


def short_lines(count: int, relevance: float = 0.8) -> list[MemoryLine]:
    return [line(i, f"went hiking near lake number {i} with a friend", relevance) for i in range(count)]


def test_short_memories_beyond_the_base_count_fill_the_budget_while_they_match():
    packed = pack_memories(short_lines(20), [], 700, base=5)
    assert len(packed.memory_ids) == 5 * EXTRA_FACTOR == candidate_count(5)
    assert packed.left_out == 0
    assert packed.tokens <= 700


def test_no_more_than_the_budget_is_spent_and_base_memories_that_did_not_fit_are_counted():
    packed = pack_memories(short_lines(20), [], 60, base=5)
    assert 0 < len(packed.memory_ids) < 5
    assert packed.left_out == 5 - len(packed.memory_ids)
    assert estimate_tokens("\n".join(packed.blocks)) <= packed.tokens <= 60


def test_a_weak_match_beyond_the_base_count_is_left_out_but_a_base_one_is_kept():
    memories = [line(100, "my sister lives in Lisbon", 1.0), *short_lines(4, 0.05)[1:],
                line(10, "we talked about the weather", 0.05), line(11, "the sister moved to Porto", 0.5)]
    packed = pack_memories(memories, [], 700, base=4)
    assert packed.memory_ids == (100, 1, 2, 3)  # the walk stops at the first weak extra: the rest rank lower


def test_a_decisive_memory_keeps_the_count_at_the_base():
    decisive = [line(1, "the dog is called Biscuit", 1.0, decisive=True), *short_lines(19)]
    assert len(pack_memories(decisive, [], 700, base=5).memory_ids) == 5
    clear_winner = [line(1, "the dog is called Biscuit", 1.0), *short_lines(19, relevance=0.3)]
    assert len(pack_memories(clear_winner, [], 700, base=5).memory_ids) == 5


def test_a_long_memory_that_does_not_fit_lets_a_shorter_one_after_it_in():
    memories = [line(1, "short one"), line(2, "long " * 200), line(3, "another short one")]
    assert pack_memories(memories, [], 80, base=3).memory_ids == (1, 3)


def test_near_identical_memories_are_packed_once_and_a_changed_number_or_negation_is_not_identical():
    memories = [line(1, "I have two cats called Tom and Jerry."), line(2, "i have two cats called tom and jerry"),
                line(3, "I have three cats called Tom and Jerry."), line(4, "我养了一只猫叫咪咪"),
                line(5, "我养了一只猫叫咪咪。")]
    packed = pack_memories(memories, [], 700, base=5)
    assert packed.memory_ids == (1, 3, 4)  # nothing was lost to the budget
    assert packed.left_out == 0
    assert similarity(word_set("I like coffee"), word_set("I don't like coffee")) < 0.85


def test_memories_are_grouped_under_their_day_oldest_first_and_only_telling_types_are_named():
    memories = [line(1, "moved to Lisbon", days=3), line(2, "likes oolong tea", type_="preference"),
                line(3, "started a new job", days=3)]
    block = pack_memories(memories, [], 700).blocks[0]
    assert block == ("<memories>\n2026-05-08:\n- (preference) likes oolong tea\n"
                     "2026-05-11:\n- moved to Lisbon\n- started a new job\n</memories>")


def test_a_matching_episode_follows_the_base_memories_before_the_extras():
    summary = "[2026-05-08 14:00] talked about the hike and the lake"
    with_episode = pack_memories(short_lines(20), [summary], 100, base=2)
    without = pack_memories(short_lines(20), [], 100, base=2)
    assert with_episode.blocks[1] == f"<earlier_conversations>\n- {summary}\n</earlier_conversations>"
    assert 2 <= len(with_episode.memory_ids) < len(without.memory_ids)


def test_the_latest_episode_offered_for_continuity_shows_only_when_few_memories_were_found():
    summary = "[2026-05-08 14:00] talked about work"
    assert len(pack_memories(short_lines(5), [summary], 700, base=5, episodes_matched=False).blocks) == 1
    few = pack_memories(short_lines(2), [summary], 700, base=5, episodes_matched=False)
    assert few.blocks[-1] == f"<earlier_conversations>\n- {summary}\n</earlier_conversations>"


def test_nothing_to_pack_costs_nothing():
    assert pack_memories([], [], 700, base=5).tokens == 0
    assert pack_memories([], [], 700, base=5).blocks == ()
