"""No text a user can type makes a search query fail, on real PostgreSQL."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.db.memory_models import Memory
from shared.search.tokenizer import keywords

HOSTILE = [
    "'", "''", "\\", "\\'", "&|!():*", "a & b | !c", "foo:* & 'bar'", "(((", ")))", "!!!", "*:*",
    "\x00", "tea\x00time", "🐱🐶 emoji ☕", "‮right-to-left‬", "%_%", "%", "_", "\\%",
    "x" * 100_000, "猫" * 100_000, "我喜欢 " * 20_000, "DROP TABLE memories; --", "$1 $$ $tag$",
    "\ud800 lone surrogate", "tab\tnew\nline\r", "ｆｕｌｌｗｉｄｔｈ", "a' | 'b",
]


@pytest.fixture
def alice(uow_factory):
    with uow_factory() as uow:
        user = uow.users.identify("console", "alice").user_id
        uow.memories.add(Memory(user_id=user, type="fact", content="likes tea & cats: 猫 (a lot)",
                                source="user_stated"))
        uow.commit()
    return user


def _search_everything(uow, user_id: int, text: str) -> None:
    terms = keywords(text)
    uow.memories.text_candidates(user_id, terms)
    uow.memories.text_candidates(user_id, [text])
    uow.memories.ranked_candidates(user_id, [(term, 1.0) for term in [*terms, text]], contains=[text, *terms])
    uow.memories.page(user_id, search=text)
    uow.episodes.text_candidates(user_id, [text])


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_strings_never_make_a_query_fail(uow_factory, alice, text):
    with uow_factory() as uow:
        _search_everything(uow, alice, text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(min_size=0, max_size=300))
def test_generated_strings_never_make_a_query_fail(uow_factory, alice, text):
    with uow_factory() as uow:
        _search_everything(uow, alice, text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.sampled_from(list("&|!():*\\'\" %_<>-猫aB1\x00🐱")), max_size=80))
def test_operator_soup_never_makes_a_query_fail(uow_factory, alice, text):
    with uow_factory() as uow:
        _search_everything(uow, alice, text)


def test_a_hostile_string_can_be_stored_and_found_again(uow_factory, alice):
    with uow_factory() as uow:
        memory = uow.memories.add(Memory(user_id=alice, type="fact", source="manual",
                                         content="O'Brien said: a & b | !c (100%) \x00 猫"))
        uow.commit()
        found = uow.memories.text_candidates(alice, keywords("o'brien 猫"))
        assert memory.id in [m.id for m, _ in found]
        contained = uow.memories.ranked_candidates(alice, [(t, 1.0) for t in keywords("o'brien")],
                                                   contains=["(100%)"])
        assert [(m.id, score > 0) for m, score in contained] == [(memory.id, True)]
        only_contained = uow.memories.ranked_candidates(alice, [("zzz", 1.0)], contains=["(100%)"])
        assert [(m.id, score) for m, score in only_contained] == [(memory.id, 0.0)]
