"""What a turn searches for: the message first, then the topic and the user's earlier lines, weighted."""

from shared.search.recall_query import (
    CONTEXT_DECAY,
    CONTEXT_WEIGHT,
    MAX_CONTEXT_LINES,
    MESSAGE_WEIGHT,
    TOPIC_WEIGHT,
    build_recall_query,
)


def test_a_message_alone_gives_its_terms_at_full_weight():
    query = build_recall_query("I adopted a puppy")
    assert query.weighted_terms == (("adopt", MESSAGE_WEIGHT), ("puppi", MESSAGE_WEIGHT))
    assert query.message_terms == ("adopt", "puppi")
    assert query.topic_terms == ()


def test_english_words_are_searched_by_their_snowball_stems():
    query = build_recall_query("Are the dogs still running?", context=["I love hiking"])
    assert query.message_terms == ("dog", "run")
    assert query.terms == ("dog", "run", "love", "hike")


def test_the_earlier_suffix_cut_errors_are_gone():
    """``studies`` was ``stud`` (matching student), ``species`` was ``spec`` (matching special)."""
    assert build_recall_query("my studies on species").message_terms == ("studi", "speci")


def test_earlier_lines_count_less_the_further_back_they_are():
    query = build_recall_query("what did she say?", context=["my sister Anna called", "she moved to Berlin"])
    weights = dict(query.weighted_terms)
    assert weights["berlin"] == CONTEXT_WEIGHT
    assert weights["anna"] == CONTEXT_WEIGHT * CONTEXT_DECAY
    assert weights["anna"] < weights["berlin"] < MESSAGE_WEIGHT


def test_a_term_of_the_message_keeps_full_weight_when_the_context_repeats_it():
    query = build_recall_query("berlin again", topic="berlin trip", context=["berlin was great"])
    assert dict(query.weighted_terms)["berlin"] == MESSAGE_WEIGHT
    assert dict(query.weighted_terms)["trip"] == TOPIC_WEIGHT


def test_the_message_terms_come_first_so_a_term_cap_drops_context_not_the_message():
    query = build_recall_query("puppy", context=["sushi tonight"])
    assert query.terms == ("puppi", "sushi", "tonight")


def test_only_the_latest_context_lines_are_used():
    lines = [f"word{i}x" for i in range(MAX_CONTEXT_LINES + 3)]
    terms = build_recall_query("puppy", context=lines).terms
    assert "word0x" not in terms
    assert f"word{MAX_CONTEXT_LINES + 2}x" in terms
    assert len(terms) == 1 + MAX_CONTEXT_LINES


def test_chinese_context_is_tokenised_like_the_message():
    query = build_recall_query("我该穿什么？", context=["元旦晚会我要表演魔术"])
    assert {"元旦晚会", "晚会", "魔术"} <= set(query.terms)
