"""Promotion and decay reviews on real PostgreSQL with a fake OpenAI-compatible server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from shared.db.memory_models import Memory
from shared.lifecycle.decay import run_decay
from shared.lifecycle.reviews import run_reviews
from tests import builders
from tests.builders import audit_actions, stored_memory

NOW = datetime(2026, 11, 22, 3, 20, tzinfo=UTC)
DAY = timedelta(days=1)


def person(uow, platform_id: str = "1001") -> int:
    return uow.users.identify("telegram", platform_id).user_id


def remember(uow_factory, content: str, *, user: str = "1001", **fields) -> tuple[int, int]:
    fields.setdefault("created_at", NOW - 40 * DAY)
    return builders.remember(uow_factory, user, content, type_=fields.pop("type", "fact"), **fields)


load, events = stored_memory, audit_actions


def prompts(llm) -> str:
    return "\n".join(m["content"] for body in llm.chat_requests() for m in body["messages"])


def test_a_memory_that_reached_2_5_becomes_core_when_the_model_says_so(uow_factory, llm, model):
    alice, name = remember(uow_factory, "My name is Alice and I was born in Hangzhou", importance=2.5)
    llm.queue_reply({"decision": "core", "reason": "identity"})
    report = run_reviews(uow_factory, model, NOW)
    assert (report.promoted, report.llm_calls) == (1, 1)
    assert load(uow_factory, name).tier == "core"
    assert events(uow_factory, alice, name) == [("promote", "llm")]
    assert "My name is Alice" in prompts(llm)


def test_a_promotion_kept_is_marked_reviewed_and_not_asked_again(uow_factory, llm, model):
    alice, busy = remember(uow_factory, "Talked a lot about the interview", importance=3.1)
    llm.queue_reply({"decision": "keep", "reason": "a passing topic"})
    assert run_reviews(uow_factory, model, NOW).kept == 1
    assert run_reviews(uow_factory, model, NOW).llm_calls == 0
    memory = load(uow_factory, busy)
    assert (memory.tier, memory.importance, memory.promotion_reviewed_at) == ("long", 3.1, NOW)
    assert events(uow_factory, alice, busy) == [("update", "llm")]


def test_the_decay_review_bins_a_memory_the_model_lets_go(uow_factory, llm, model):
    alice, faded = remember(uow_factory, "Watched a film last spring", importance=0.45, base_importance=0.6)
    llm.queue_reply({"decision": "delete", "reason": "no longer matters"})
    assert run_reviews(uow_factory, model, NOW).deleted == 1
    assert load(uow_factory, faded).deleted_at == NOW  # in the recycle bin, restorable for 30 days
    assert events(uow_factory, alice, faded) == [("bin", "llm")]


def test_what_the_user_stated_is_never_put_to_the_decay_review_however_far_it_faded(uow_factory, llm, model):
    _, sister = remember(uow_factory, "My sister Anna lives in Berlin", importance=0.05)
    _, remembered = remember(uow_factory, "Passport number ends in 42", importance=0.05, base_importance=0.6,
                             verified=True)
    report = run_reviews(uow_factory, model, NOW)
    assert (report.deleted, report.kept, report.llm_calls) == (0, 0, 0)
    assert load(uow_factory, sister).deleted_at is None
    assert load(uow_factory, remembered).deleted_at is None


def test_the_decay_review_keeps_a_memory_at_0_5_and_does_not_ask_again_as_it_fades(uow_factory, llm, model):
    _, sister = remember(uow_factory, "Seems close to her sister Anna", importance=0.45, source="inferred",
                         last_accessed=NOW - 30 * DAY)
    llm.queue_reply({"decision": "keep", "reason": "family"})
    assert run_reviews(uow_factory, model, NOW).kept == 1
    assert load(uow_factory, sister).importance == 0.5
    run_decay(uow_factory, NOW + DAY, eviction_threshold=None)
    assert load(uow_factory, sister).importance < 0.5
    assert run_reviews(uow_factory, model, NOW + DAY).llm_calls == 0


def test_the_model_may_search_the_users_memories_then_decide(uow_factory, llm, model):
    remember(uow_factory, "Moved to Berlin in 2025", importance=1.0)
    _, old = remember(uow_factory, "Looking for a flat in Shanghai", importance=0.4, base_importance=0.6)
    llm.queue_reply({"action": "search", "query": "Berlin"})
    llm.queue_reply({"decision": "delete", "reason": "moved to Berlin since"})
    report = run_reviews(uow_factory, model, NOW)
    assert (report.deleted, report.llm_calls) == (1, 2)
    assert load(uow_factory, old).deleted_at is not None
    second = "\n".join(m["content"] for m in llm.chat_requests()[1]["messages"])
    assert "<search>" in second
    assert "Moved to Berlin in 2025" in second


def test_three_rounds_without_a_decision_keep_the_memory(uow_factory, llm, model):
    alice, hobby = remember(uow_factory, "Tried pottery once", importance=0.4, base_importance=0.6)
    llm.set_responder(lambda _request: {"action": "search", "query": "pottery"})
    report = run_reviews(uow_factory, model, NOW)
    assert (report.kept, report.llm_calls) == (1, 3)
    assert load(uow_factory, hobby).importance == 0.5
    assert events(uow_factory, alice, hobby) == [("update", "rule")]


def test_without_a_model_promotions_are_kept_and_only_unused_inferred_memories_are_binned(uow_factory):
    alice, big = remember(uow_factory, "Loves hiking", importance=2.7)
    _, guessed = remember(uow_factory, "Might like jazz", importance=0.4, source="inferred")
    _, used = remember(uow_factory, "Might like opera", importance=0.4, source="inferred",
                       last_accessed=NOW - 20 * DAY, access_count=2)
    _, stated = remember(uow_factory, "Plays the piano", importance=0.4, base_importance=0.6)
    report = run_reviews(uow_factory, None, NOW)
    assert (report.promoted, report.kept, report.deleted) == (0, 3, 1)
    assert load(uow_factory, big).tier == "long"
    assert load(uow_factory, guessed).deleted_at is not None
    assert load(uow_factory, used).importance == load(uow_factory, stated).importance == 0.5
    assert events(uow_factory, alice, big) == [("update", "rule")]


def test_a_memory_of_another_user_never_appears_in_the_prompt(uow_factory, llm, model):
    remember(uow_factory, "Bob drinks green tea every morning", user="2002")
    remember(uow_factory, "Bob's tea secret: matcha", user="2002", importance=0.4, base_importance=0.6)
    remember(uow_factory, "Alice likes green tea with milk", importance=0.4, base_importance=0.6)
    llm.set_responder(lambda request: (
        {"decision": "keep", "reason": "ok"} if len(request["messages"]) > 2 else {"action": "search", "query": "tea"}))
    run_reviews(uow_factory, model, NOW)
    alice_prompts = [body for body in llm.chat_requests() if "Alice likes green tea" in body["messages"][1]["content"]]
    assert len(alice_prompts) == 2
    assert all("Bob" not in m["content"] for body in alice_prompts for m in body["messages"])


def test_a_memory_that_changed_during_the_call_is_left_as_it_now_is(uow_factory, llm, model):
    _, fact = remember(uow_factory, "Collects stamps", importance=0.4, base_importance=0.6)

    def used_meanwhile(_request):
        with uow_factory() as uow:
            uow.session.get(Memory, fact).importance = 1.3
            uow.commit()
        return {"decision": "delete", "reason": "unused"}

    llm.set_responder(used_meanwhile)
    report = run_reviews(uow_factory, model, NOW)
    assert (report.deleted, report.skipped) == (0, 1)
    assert load(uow_factory, fact).importance == 1.3


def test_an_unreachable_model_leaves_the_reviews_for_the_next_run(uow_factory, llm, model):
    remember(uow_factory, "Loves hiking", importance=2.7)
    remember(uow_factory, "Tried pottery once", importance=0.4, base_importance=0.6)
    llm.queue_error(401)
    report = run_reviews(uow_factory, model, NOW)
    assert (report.deferred, report.promoted, report.kept, report.deleted) == (2, 0, 0, 0)
    llm.set_responder(lambda _request: {"decision": "keep", "reason": "ok"})
    assert run_reviews(uow_factory, model, NOW).kept == 2
