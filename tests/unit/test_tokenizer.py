"""The tokenizer: jieba for Chinese, words for everything else, stop words out, 猫 kept."""

import hashlib
import json
import random
import subprocess
import sys
import time
from importlib import metadata

import jieba
import pytest
from jieba.posseg import char_state_tab_P

from shared.search import tokenizer
from shared.search.tokenizer import (
    MAX_TOKEN_CHARS,
    TOKENIZER_VERSION,
    keywords,
    matches_by_prefix,
    query_terms,
    search_stem,
    search_text,
    search_tokens,
    stop_words,
    tokenize,
)

RECORDED_INPUTS = {4: "7ab01fed694fed4178e46bc1fa22ded753d70dff0ed73e31b91acf96e3975075"}
"""``TOKENIZER_VERSION`` -> the fingerprint of what decided the stored tokens under it. When a stop-word
list, jieba (its version or dictionary), the Snowball stemmer or a rule below changes, bump
``TOKENIZER_VERSION``, so that rows tokenised the old way are re-indexed, and record the new
fingerprint here."""
STORED_TOKEN_RULES = ("MAX_TOKEN_CHARS", "MIN_NUMBER_DIGITS", "SINGLE_CHAR_POS", "HEAD_NOUN_POS",
                      "HEAD_NOUN_SKIPPED_WORD_POS", "GENERIC_HEADS", "SUBWORD_MIN_CHARS", "SUBWORD_LENGTHS",
                      "DROPPED_POS", "STEMMER_ALGORITHM")
"""The tokenizer's constants that shape stored tokens."""


def tokenizer_inputs_fingerprint() -> str:
    with jieba.dt.get_dict_file() as dictionary:
        jieba_dictionary = hashlib.sha256(dictionary.read()).hexdigest()
    rules = {name: getattr(tokenizer, name) for name in STORED_TOKEN_RULES}
    inputs = {"stop_words": sorted(stop_words()), "jieba": jieba.__version__, "jieba_dictionary": jieba_dictionary,
              "snowballstemmer": metadata.version("snowballstemmer"),
              "rules": {name: sorted(rule) if isinstance(rule, frozenset) else rule for name, rule in rules.items()}}
    return hashlib.sha256(json.dumps(inputs, ensure_ascii=False, sort_keys=True).encode()).hexdigest()


def test_the_seed_example_gives_python_code_and_like_without_stop_words():
    assert set(keywords("我喜欢用 Python 写代码")) == {"python", "代码", "喜欢"}


def test_stop_words_of_the_seed_are_dropped():
    words = keywords("我喜欢用 Python 写代码")
    assert not {"我", "用", "写"} & set(words)


def test_meaningful_one_character_chinese_nouns_survive():
    assert "猫" in keywords("我有一只猫")
    assert "狗" in keywords("我有一只猫和一条狗")
    assert keywords("茶") == ["茶"]


def test_numerals_with_classifiers_and_particles_are_not_tokens():
    words = keywords("我有一只猫和三个苹果啊")
    assert "一只" not in words
    assert "三个" not in words
    assert "啊" not in words
    assert "苹果" in words


def test_english_is_lower_cased_with_possessives_and_stop_words_removed():
    assert keywords("I moved to Berlin, and my cat's name is Luna!") == ["moved", "berlin", "cat", "name", "luna"]


def test_short_numbers_are_dropped_but_years_and_codes_stay():
    assert keywords("I ran 5 km on 12 June 2023, ticket 88123") == ["ran", "km", "june", "2023", "ticket", "88123"]


def test_mixed_chinese_and_english_keeps_both_scripts_in_order():
    assert keywords("我在 Google 做 SRE 工程师") == ["google", "sre", "工程师"]


def test_tokenize_keeps_repeats_for_term_frequency_and_keywords_do_not():
    assert tokenize("coffee coffee 咖啡 咖啡") == ["coffee", "coffee", "咖啡", "咖啡"]
    assert keywords("coffee coffee 咖啡 咖啡") == ["coffee", "咖啡"]


def test_other_scripts_become_words():
    assert keywords("Привет, мир") == ["привет", "мир"]


def test_punctuation_emoji_and_operators_never_become_tokens():
    assert keywords("🐱 & | ! ( ) : * \\ ' \" \x00 ——") == []


def test_overlong_runs_are_not_tokens():
    assert tokenize("a" * (MAX_TOKEN_CHARS + 1)) == []
    assert tokenize("b" * MAX_TOKEN_CHARS) == ["b" * MAX_TOKEN_CHARS]


def test_search_text_joins_the_tokens_of_every_part_and_skips_empty_parts():
    assert search_text(["用户", None, "likes green tea"]) == "用户 like green tea"


def test_stop_word_lists_cover_both_languages():
    assert {"the", "and", "我", "的", "了"} <= stop_words()


def test_the_version_stored_with_the_tokens_changes_whenever_the_stop_words_dictionary_or_rules_do():
    fingerprint = tokenizer_inputs_fingerprint()
    version = TOKENIZER_VERSION if TOKENIZER_VERSION not in RECORDED_INPUTS else TOKENIZER_VERSION + 1
    assert RECORDED_INPUTS.get(TOKENIZER_VERSION) == fingerprint, (
        f"the stop words, jieba or the token rules changed: set TOKENIZER_VERSION = {version} and record "
        f"{version}: {fingerprint!r} in RECORDED_INPUTS")


def test_chinese_compounds_also_yield_their_head_noun_so_related_words_meet():
    assert tokenize("喜欢喝乌龙茶") == ["喜欢", "乌龙茶", "乌龙", "茶"]
    assert "茶" in query_terms("周末想找个地方喝茶")
    assert query_terms("我有一只小猫") == ["小猫", "猫"]


def test_place_names_and_generic_heads_are_not_split():
    assert query_terms("我住在上海") == ["上海"]
    assert query_terms("我们聊聊这个问题") == ["聊聊", "问题"]


def test_keywords_stay_unexpanded():
    assert keywords("喜欢喝乌龙茶") == ["喜欢", "乌龙茶"]


def test_long_chinese_words_also_yield_the_dictionary_words_inside_them_like_jiebas_search_mode():
    assert tokenize("篮球比赛") == ["篮球比赛", "篮球", "比赛"]
    assert {"元旦", "晚会"} <= set(query_terms("元旦晚会我要表演魔术"))
    assert tokenize("晚会") == ["晚会"]


def test_keywords_stay_whole_words_without_search_mode_pieces():
    assert keywords("篮球比赛") == ["篮球比赛"]


def test_search_mode_pieces_skip_stop_words():
    assert "没有" in stop_words()
    assert tokenize("有没有") == ["有没有"]


@pytest.mark.parametrize("word, stem", [
    ("dogs", "dog"), ("hiking", "hike"), ("hiked", "hike"), ("running", "run"), ("studies", "studi"),
    ("species", "speci"), ("painted", "paint"), ("classes", "class"), ("loved", "love"), ("uses", "use"),
])
def test_english_words_are_cut_to_their_snowball_stem(word, stem):
    assert search_stem(word) == stem


@pytest.mark.parametrize("one, other", [("dogs", "dog"), ("hiking", "hike"), ("running", "runs"),
                                        ("studies", "studying"), ("painted", "painting")])
def test_forms_of_one_word_meet_on_one_stem(one, other):
    assert search_stem(one) == search_stem(other)


@pytest.mark.parametrize("asked, stored", [("studies", "student"), ("species", "special"), ("dogs", "dogma")])
def test_an_english_stem_matches_whole_so_a_word_never_finds_another_that_merely_starts_like_it(asked, stored):
    [term] = query_terms(asked)
    assert not matches_by_prefix(term)
    assert term not in search_tokens(stored)


def test_chinese_words_numbers_and_other_scripts_still_match_as_prefixes():
    assert all(matches_by_prefix(term) for term in ("猫", "篮球", "2023", "привет", "mp3"))


def test_stored_and_searched_tokens_are_stems_while_keywords_stay_words_as_written():
    assert search_tokens("She painted sunsets while camping") == ["paint", "sunset", "camp"]
    assert search_text(["Dogs love hiking", None]) == "dog love hike"
    assert query_terms("dogs and more dogs") == ["dog"]
    assert keywords("She painted sunsets") == ["painted", "sunsets"] == tokenize("She painted sunsets")


def test_other_scripts_numbers_and_words_with_digits_are_not_stemmed():
    assert search_stem("привет") == "привет"
    assert search_stem("2023") == "2023"
    assert search_stem("mp3s") == "mp3s"
    assert search_stem("咖啡") == "咖啡"
    assert search_tokens("篮球比赛 games") == ["篮球比赛", "篮球", "比赛", "game"]


def test_warm_up_loads_the_chinese_dictionary_and_the_stemmer_before_any_message():
    """Front-ends call it in a thread at start; in a fresh process nothing is loaded until it runs."""
    script = ("import jieba; from shared.search import tokenizer; before = jieba.dt.initialized; "
              "tokenizer.warm_up(); print(before, jieba.dt.initialized, tokenizer.stop_words.cache_info().currsize, "
              "tokenizer._stemmer.cache_info().currsize)")
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert loaded.stdout.split() == ["False", "True", "1", "1"], loaded.stderr


@pytest.fixture
def uncached(monkeypatch):
    """Every Chinese run tagged anew: what a text costs the first time, and budgets that decide each time."""
    monkeypatch.setattr(tokenizer, "RUN_CACHE_MAX_CHARS", -1)
    monkeypatch.setattr(tokenizer, "_RUNS", tokenizer._RunCache(tokenizer.RUN_CACHE_ENTRIES))


def _cpu_ms(call, text: str, tries: int = 3) -> float:
    best = float("inf")
    for _ in range(tries):
        started = time.thread_time()
        call(text)
        best = min(best, time.thread_time() - started)
    return best * 1000


ORDINARY = "我昨天和朋友去上海看了一场篮球比赛，晚上在外滩附近吃了小笼包。张伟说下个月想去成都吃火锅！"
RARE_CHARS = "".join(chr(code) for code in range(0x4E00, 0x9FA5) if chr(code) not in char_state_tab_P)
ADVERSARIAL_FACTOR = 4
"""100k adversarial characters may cost this many times the tokenising of MAX_TOKENISED_CHARS of ordinary text."""


def adversarial_texts(size: int) -> dict[str, str]:
    rng = random.Random(27)
    return {"run of 好": "好" * size, "哈哈…": "哈哈" * (size // 2), "好的好的…": "好的" * (size // 2),
            "Extension A": "".join(rng.choice("".join(map(chr, range(0x3400, 0x4DB6)))) for _ in range(size)),
            "rare common-block": "".join(rng.choice(RARE_CHARS) for _ in range(size)),
            "random common-block": "".join(chr(rng.randrange(0x4E00, 0x9FA5)) for _ in range(size)),
            "short rare runs": "，".join(rng.choice(RARE_CHARS) + rng.choice(RARE_CHARS) for _ in range(size // 3)),
            "mixed": "".join(rng.choice(RARE_CHARS) + rng.choice(" a1，哈") for _ in range(size // 2))}


def test_adversarial_chinese_costs_a_few_times_the_cap_of_ordinary_text(uncached):
    tokenize(ORDINARY)
    baseline = _cpu_ms(search_tokens, (ORDINARY * 400)[:tokenizer.MAX_TOKENISED_CHARS])
    slow = {name: round(took) for name, text in adversarial_texts(100_000).items()
            if (took := _cpu_ms(search_tokens, text)) > ADVERSARIAL_FACTOR * baseline}
    assert not slow, f"ms against {baseline:.0f} ms for ordinary text: {slow}"


def test_a_run_tagged_before_is_not_tagged_again(monkeypatch):
    monkeypatch.setattr(tokenizer, "_RUNS", tokenizer._RunCache(2))
    posseg = tokenizer._posseg()
    cuts = []
    real_cut = posseg.cut
    monkeypatch.setattr(posseg, "cut", lambda run, HMM=True: cuts.append(run) or real_cut(run, HMM=HMM))
    first = tokenize("我昨天去了博物馆看展览")
    tagged = len(cuts)
    assert tagged >= 1
    assert tokenize("我昨天去了博物馆看展览") == first
    assert len(cuts) == tagged
    tokenize("今天下雨")
    tokenize("明天出太阳")  # the cache holds two runs: the first one is dropped
    tokenize("我昨天去了博物馆看展览")
    assert cuts.count("我昨天去了博物馆看展览") == 2 * cuts[:tagged].count("我昨天去了博物馆看展览")


def test_a_run_cut_short_by_the_budget_is_tagged_again_when_it_fits(monkeypatch):
    monkeypatch.setattr(tokenizer, "_RUNS", tokenizer._RunCache(tokenizer.RUN_CACHE_ENTRIES))
    posseg = tokenizer._posseg()
    text = "张伟和王芳在苏州"
    plain = [p.word for p in posseg.cut(text, HMM=False)]
    guessed = [p.word for p in posseg.cut(text, HMM=True)]
    assert plain != guessed
    with tokenizer.shared_budget(0):
        assert set(tokenize(text, expand=False)) <= set(plain)
    with tokenizer.shared_budget(10**9):
        kept = tokenize(text, expand=False)
    assert kept == tokenize(text, expand=False)
    assert set(kept) - set(plain)


def test_runs_of_a_repeated_unit_are_cut_to_a_few_repetitions():
    assert tokenize("哈" * 500) == tokenize("哈" * tokenizer.REPEATS_KEPT)
    assert tokenize("好的" * 300 + "猫") == tokenize("好的" * tokenizer.REPEATS_KEPT + "猫")
    assert tokenize("2000000000 haaaaaaaaa") == ["2000000000", "haaaaaaaaa"]


def test_only_the_first_max_tokenised_chars_give_keys():
    assert keywords("猫" + "。" * tokenizer.MAX_TOKENISED_CHARS + "狗") == ["猫"]


def test_guesses_at_unknown_words_stop_when_the_shared_budget_is_spent(uncached):
    posseg = tokenizer._posseg()
    text = "张伟和王芳在苏州"
    with tokenizer.shared_budget(0):
        without = tokenize(text, expand=False)
    with tokenizer.shared_budget(10**9) as budget:
        guessed = tokenize(text, expand=False)
    assert guessed == tokenize(text, expand=False)
    assert budget.left < 10**9
    plain = [p.word for p in posseg.cut(text, HMM=False)]
    assert set(without) <= set(plain)


def test_a_run_of_characters_jieba_has_no_statistics_for_is_over_one_texts_budget():
    posseg = tokenizer._posseg()
    plain = list(posseg.cut(RARE_CHARS[:300], HMM=False))
    assert tokenizer._guess_cost(plain, posseg.dt.tokenizer.FREQ) > tokenizer.HMM_STATE_PAIRS_PER_TEXT
