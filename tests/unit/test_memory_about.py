"""What a model says a memory is about: a few short names, and a past day or month."""

from datetime import UTC, datetime

from shared.memory.about import MAX_ENTITIES, MAX_ENTITY_CHARS, read_entities, read_when

NOW = datetime(2026, 1, 3, tzinfo=UTC)


def test_entities_are_short_distinct_names_and_anything_else_is_ignored():
    dog, biscuit, long_name = read_entities(["dog", "Biscuit", "dog", " ", 7, None, "x" * 500])
    assert (dog, biscuit, len(long_name)) == ("dog", "Biscuit", MAX_ENTITY_CHARS)
    assert len(read_entities([f"name {i}" for i in range(50)])) == MAX_ENTITIES
    assert read_entities("dog") == ()
    assert read_entities(None) == ()


def test_when_is_a_past_day_or_month():
    assert read_when("2025-12-28", NOW) == datetime(2025, 12, 28, tzinfo=UTC)
    assert read_when("2025-12", NOW) == datetime(2025, 12, 1, tzinfo=UTC)
    assert read_when("2025-12-28T18:00:00+08:00", NOW) == datetime(2025, 12, 28, tzinfo=UTC)
    for bad in ("2099-01", "2025-13-01", "2025-02-30", "last week", "", 2025, None):
        assert read_when(bad, NOW) is None
