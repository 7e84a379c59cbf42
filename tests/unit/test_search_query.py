"""Safe tsquery and LIKE expressions from anything a user types (pure string rules)."""

from shared.search_query import MAX_LIKE_CHARS, MAX_QUERY_TERMS, like_pattern, prefix_tsquery, tsquery_for_text


def test_each_keyword_becomes_a_quoted_prefix_term_joined_by_or():
    assert tsquery_for_text("我喜欢用 Python 写代码") == "'喜欢':* | 'python':* | '代码':*"


def test_text_without_keywords_gives_no_query():
    assert tsquery_for_text("!!! ??? 🐱") is None
    assert prefix_tsquery([]) is None


def test_operators_quotes_and_spaces_inside_a_term_never_reach_the_parser_as_syntax():
    assert prefix_tsquery(["it's", "a\\b", "x & !y:*"]) == "'it':* | 's':* | 'a':* | 'b':* | 'x':* | 'y':*"


def test_overlong_terms_are_left_out():
    assert prefix_tsquery(["a" * 65, "ok"]) == "'ok':*"


def test_nul_bytes_are_removed_and_duplicates_collapsed():
    assert prefix_tsquery(["x\x00y", "xy", "  "]) == "'xy':*"


def test_the_number_of_terms_is_capped():
    query = prefix_tsquery([f"w{i}" for i in range(100)])
    assert query.count(":*") == MAX_QUERY_TERMS


def test_like_wildcards_are_escaped_and_long_terms_cut():
    assert like_pattern("50%_off\\") == "%50\\%\\_off\\\\%"
    assert like_pattern("x" * 1000) == "%" + "x" * MAX_LIKE_CHARS + "%"
