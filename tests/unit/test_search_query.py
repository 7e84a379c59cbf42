"""Safe tsquery and LIKE expressions from anything a user types (pure string rules)."""

from shared.search.tsquery import (
    MAX_LIKE_CHARS,
    MAX_QUERY_TERMS,
    like_pattern,
    prefix_tsquery,
    tsquery_for_text,
    weighted_prefix_queries,
)


def test_each_search_token_becomes_a_quoted_term_joined_by_or_chinese_ones_as_prefixes():
    assert tsquery_for_text("我喜欢用 Python 写代码") == "'喜欢':* | 'python' | '代码':*"


def test_english_words_are_searched_as_whole_snowball_stems_so_every_form_meets_and_no_other_word_does():
    assert tsquery_for_text("dogs hiking running") == "'dog' | 'hike' | 'run'"
    assert tsquery_for_text("studies species") == "'studi' | 'speci'"


def test_text_without_keywords_gives_no_query():
    assert tsquery_for_text("!!! ??? 🐱") is None
    assert prefix_tsquery([]) is None


def test_operators_quotes_and_spaces_inside_a_term_never_reach_the_parser_as_syntax():
    assert prefix_tsquery(["it's", "a\\b", "x & !y:*", "猫:*"]) == "'it' | 's' | 'a' | 'b' | 'x' | 'y' | '猫':*"


def test_overlong_terms_are_left_out():
    assert prefix_tsquery(["a" * 65, "ok"]) == "'ok'"


def test_nul_bytes_are_removed_and_duplicates_collapsed():
    assert prefix_tsquery(["x\x00y", "xy", "  "]) == "'xy'"


def test_the_number_of_terms_is_capped():
    query = prefix_tsquery([f"w{i}" for i in range(100)])
    assert query.count(" | ") + 1 == MAX_QUERY_TERMS


def test_like_wildcards_are_escaped_and_long_terms_cut():
    assert like_pattern("50%_off\\") == "%50\\%\\_off\\\\%"
    assert like_pattern("x" * 1000) == "%" + "x" * MAX_LIKE_CHARS + "%"


def test_weighted_queries_give_one_safe_prefix_query_per_lexeme_with_its_weight():
    assert weighted_prefix_queries([("it's", 1.0), ("咖啡", 0.5)]) == [("'it'", 1.0), ("'s'", 1.0),
                                                                      ("'咖啡':*", 0.5)]


def test_a_lexeme_met_twice_keeps_its_highest_weight_and_its_first_place():
    assert weighted_prefix_queries([("tea", 0.3), ("cake", 1.0), ("tea", 0.9)]) == [("'tea'", 0.9),
                                                                                   ("'cake'", 1.0)]


def test_weighted_queries_are_capped_and_keep_the_first_terms():
    queries = weighted_prefix_queries([(f"w{i}", 1.0) for i in range(100)])
    assert len(queries) == MAX_QUERY_TERMS
    assert queries[0] == ("'w0':*", 1.0)
    assert weighted_prefix_queries([("!!! 🙂", 1.0), ("a" * 65, 1.0)]) == []
