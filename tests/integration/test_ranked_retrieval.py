"""Ranking on real PostgreSQL: BM25 with each user's own word statistics, conversation context,
memories of one sitting supporting each other, and the sweep that re-tokenises old rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import text

from shared.db.memory_models import Memory
from shared.recall.reindex import retokenize_all_stale
from shared.recall.retrieval import recall_for_turn
from shared.repositories.ranked_search import MEMORY_BM25_SQL, bm25_parameters
from shared.search.tokenizer import TOKENIZER_VERSION
from tests.builders import memory as memory_row

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def remember(uow, user_id, content, at=NOW):
    return uow.memories.add(memory_row(user_id, content, type_="event", confidence=0.9, created_at=at, updated_at=at,
                                       last_accessed=NOW))


def users(uow_factory, *names):
    with uow_factory() as uow:
        ids = [uow.users.identify("console", name).user_id for name in names]
        uow.commit()
    return ids


def ranked(uow, user_id, message, **kwargs):
    return [item.memory.id for item in recall_for_turn(uow, user_id, message, now=NOW, limit=10, **kwargs).memories]


def test_a_rare_word_outranks_a_word_the_user_says_all_the_time(uow_factory):
    [alice] = users(uow_factory, "alice")
    with uow_factory() as uow:
        lisbon = remember(uow, alice, "booked the flight to Lisbon")
        daily = [remember(uow, alice, f"coffee with the team, day {day}") for day in range(8)]
        uow.commit()
        found = ranked(uow, alice, "coffee in Lisbon")
    assert found[0] == lisbon.id
    assert set(found[1:]) <= {memory.id for memory in daily}


def test_word_statistics_are_the_speakers_own_not_everyones(uow_factory):
    alice, bob = users(uow_factory, "alice", "bob")
    with uow_factory() as uow:
        lisbon = remember(uow, alice, "booked the flight to Lisbon")
        for day in range(5):
            remember(uow, alice, f"coffee with the team, day {day}")
        for day in range(40):
            remember(uow, bob, f"Lisbon tram ride number {day}")
        uow.commit()
        found = ranked(uow, alice, "coffee in Lisbon")
    assert found[0] == lisbon.id
    assert len(found) == 6


def test_earlier_lines_of_the_conversation_find_what_a_short_follow_up_cannot(uow_factory):
    [alice] = users(uow_factory, "alice")
    with uow_factory() as uow:
        berlin = remember(uow, alice, "my sister Anna moved to Berlin for her new job")
        remember(uow, alice, "the new job at the bakery starts in March")
        uow.commit()
        alone = ranked(uow, alice, "how is her new job going?")
        in_context = ranked(uow, alice, "how is her new job going?", context=["I miss Anna so much"])
    assert alone[0] != berlin.id
    assert in_context[0] == berlin.id


def test_memories_noted_in_the_same_sitting_lend_each_other_support(uow_factory):
    [alice] = users(uow_factory, "alice")
    with uow_factory() as uow:
        remember(uow, alice, "ran my first marathon in Valencia", at=NOW - timedelta(days=20, minutes=5))
        proud_of_race = remember(uow, alice, "so proud of myself today", at=NOW - timedelta(days=20))
        proud_of_garden = remember(uow, alice, "so proud of my tomatoes", at=NOW - timedelta(days=2))
        uow.commit()
        recall = recall_for_turn(uow, alice, "the marathon, were you proud?", now=NOW, limit=10)
    scores = {item.memory.id: item.score for item in recall.memories}
    order = [item.memory.id for item in recall.memories]
    assert order.index(proud_of_race.id) < order.index(proud_of_garden.id)
    assert scores[proud_of_race.id].neighbours == 1.0
    assert scores[proud_of_garden.id].neighbours == 0.0
    assert scores[proud_of_race.id].keyword == scores[proud_of_garden.id].keyword


def test_the_line_noted_right_after_a_match_is_found_though_it_shares_no_word_with_the_question(uow_factory):
    alice, bob = users(uow_factory, "alice", "bob")
    with uow_factory() as uow:
        sitting = NOW - timedelta(days=30)
        made = remember(uow, alice, "I made coconut milk ice cream", at=sitting)
        remember(uow, bob, "an interleaved memory of someone else", at=sitting)
        answer = remember(uow, alice, "It was rich and creamy, a new favourite", at=sitting + timedelta(minutes=1))
        later = remember(uow, alice, "Then we watched a film", at=sitting + timedelta(hours=5))
        for day in range(5):
            remember(uow, alice, f"a walk by the river on day {day}", at=NOW - timedelta(days=day))
        uow.commit()
        recall = recall_for_turn(uow, alice, "What did she think of the coconut milk ice cream?", now=NOW, limit=10)
    found = [item.memory.id for item in recall.memories]
    assert found[:2] == [made.id, answer.id]
    assert later.id not in found
    assert all(item.memory.user_id == alice for item in recall.memories)


def test_memories_noted_in_the_time_the_question_names_come_first(uow_factory):
    [alice] = users(uow_factory, "alice")
    with uow_factory() as uow:
        in_may = remember(uow, alice, "went hiking with Sam in the hills", at=datetime(2026, 5, 10, 18, 0, tzinfo=UTC))
        recent = remember(uow, alice, "went hiking with Sam by the lake", at=NOW - timedelta(days=6))
        uow.commit()
        plain = ranked(uow, alice, "where did I go hiking with Sam?")
        cued = ranked(uow, alice, "where did I go hiking with Sam in May?")
        cued_zh = ranked(uow, alice, "我5月和Sam去哪徒步了", local_now=NOW)
    assert plain == [recent.id, in_may.id]
    assert cued == [in_may.id, recent.id]
    assert cued_zh[0] == in_may.id


def test_months_away_rank_what_the_user_said_as_the_day_after_they_left(uow_factory):
    [alice] = users(uow_factory, "alice")
    left = NOW - timedelta(days=200)
    with uow_factory() as uow:
        for content, used in (("violin lessons with Anna on Saturdays", left),
                              ("violin lessons used to be on Mondays", left - timedelta(days=9)),
                              ("the violin is a gift from grandma", left - timedelta(days=40))):
            uow.memories.add(Memory(user_id=alice, type="fact", content=content, source="user_stated",
                                    confidence=0.9, created_at=left - timedelta(days=60),
                                    updated_at=left - timedelta(days=60), last_accessed=used))
        uow.commit()

        def scores(now, last_active):
            recall = recall_for_turn(uow, alice, "when are my violin lessons?", now=now, limit=10,
                                     last_active=last_active)
            return [(item.memory.content, round(item.score.total, 9)) for item in recall.memories]

        next_day = scores(left + timedelta(days=1), left)
        back = scores(NOW, left)
        by_the_calendar = scores(NOW, None)
    assert back == next_day
    assert len(next_day) == 3
    assert next_day[0][0] == "violin lessons with Anna on Saturdays"
    assert by_the_calendar != next_day, "counted by the calendar, 200 days fade everything"


def test_rows_left_by_an_older_tokenizer_are_re_tokenised_and_found_again(uow_factory):
    [alice] = users(uow_factory, "alice")
    with uow_factory() as uow:
        memory = remember(uow, alice, "我们去看了篮球比赛")
        uow.commit()
        uow.session.execute(text("UPDATE memories SET search_tokens = '篮球比赛', tokenizer_version = 2 "
                                 "WHERE id = :id"), {"id": memory.id})
        uow.commit()
        assert uow.memories.ranked_candidates(alice, [("比赛", 1.0)]) == []
    assert retokenize_all_stale(uow_factory, batch_size=1) >= 1
    with uow_factory() as uow:
        stored = uow.memories.get(alice, memory.id)
        assert stored.tokenizer_version == TOKENIZER_VERSION
        assert "比赛" in stored.search_tokens.split()
        [(found, score)] = uow.memories.ranked_candidates(alice, [("比赛", 1.0)])
        assert found.id == memory.id
        assert score > 0


def test_a_word_in_most_of_a_users_memories_costs_in_proportion_to_them_not_their_square(uow_factory):
    """The per-query statistics are computed once, not again for every matching memory."""
    [alice] = users(uow_factory, "alice")
    with uow_factory() as uow:
        for day in range(300):
            remember(uow, alice, f"coffee with the team on day {day} and a walk in the park")
        uow.commit()
        parameters = bm25_parameters(alice, [("coffee", 1.0), ("park", 1.0)], 50)
        plan = uow.session.execute(text("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + MEMORY_BM25_SQL.text),
                                   parameters).scalar_one()[0]["Plan"]
    # 300 short memories fill a few dozen pages; statistics re-computed per matching row read thousands
    assert plan["Shared Hit Blocks"] + plan.get("Shared Read Blocks", 0) < 500


def test_a_question_with_nothing_to_look_for_inside_words_reads_none_of_the_users_memories_for_it(uow_factory):
    """English stems match whole, so the search inside words (LIKE, for Chinese and numbers) has no
    pattern: it must not read the user's memories one by one only to match them against nothing."""
    [alice] = users(uow_factory, "alice")
    with uow_factory() as uow:
        for day in range(30):
            remember(uow, alice, f"a walk in the park with the team on day {day}")
        uow.commit()
        looked_inside = {}
        for name, parameters in (("english", bm25_parameters(alice, [("dog", 1.0)], 50, contains=[])),
                                 ("chinese", bm25_parameters(alice, [("猫", 1.0)], 50, contains=["猫"]))):
            plan = uow.session.execute(text("EXPLAIN (ANALYZE, FORMAT JSON) " + MEMORY_BM25_SQL.text),
                                       parameters).scalar_one()[0]["Plan"]
            [contained] = [node for node in plan_nodes(plan) if node.get("Subplan Name") == "CTE contained"]
            looked_inside[name] = sum(node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)
                                      for node in plan_nodes(contained) if node.get("Relation Name") == "memories")
    assert looked_inside == {"english": 0, "chinese": 30}


def plan_nodes(node: dict) -> list[dict]:
    return [node, *(found for child in node.get("Plans", []) for found in plan_nodes(child))]


def test_inside_words_a_pattern_with_a_case_folds_it_and_one_without_is_matched_as_written(uow_factory):
    """Chinese words and numbers are looked for with LIKE (bytes), a word with a case with ILIKE."""
    [alice] = users(uow_factory, "alice")
    with uow_factory() as uow:
        console = remember(uow, alice, "won a PS5 and a Ärztekammer mug")
        cat = remember(uow, alice, "给猫咪买了玩具，花了1280元")
        remember(uow, alice, "a walk in the park")
        uow.commit()

        def inside(*terms):
            return {memory.id for memory, _ in uow.memories.ranked_candidates(alice, [("nothing", 1.0)],
                                                                            contains=terms)}

        assert inside("ps5") == inside("äRZTE") == {console.id}
        assert inside("猫") == inside("128") == {cat.id}
        assert inside("猫", "Ps5") == {console.id, cat.id}
        assert inside("狗", "xbox") == set()
    parameters = bm25_parameters(alice, [("x", 1.0)], 10, contains=["猫", "128", "ps5", "äbc", "猫"])
    assert parameters["exact_patterns"] == ["%猫%", "%128%"]
    assert parameters["folded_patterns"] == ["%ps5%", "%äbc%"]
