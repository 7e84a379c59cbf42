"""Emotions: the taxonomy, the fixed strategy table, tolerant JSON, and the offline lexicon detector."""

import math

import pytest

from shared.emotion import (
    ALL_EMOTIONS,
    CONFIDENCE_THRESHOLD,
    EMOTION_CATEGORIES,
    MAX_INDICATOR_CHARS,
    MAX_INDICATORS,
    NEUTRAL,
    PLAIN_STRATEGY,
    STRATEGY_TABLE,
    TONE_GUIDANCE,
    UNKNOWN,
    Emotion,
    ResponseStrategy,
    category_of,
    detect_emotion_offline,
    strategy_for,
)


def emotion(primary: str, confidence: float = 0.9) -> Emotion:
    return Emotion(primary, category_of(primary), confidence)


# --- taxonomy ---------------------------------------------------------------------------------


def test_the_taxonomy_has_twelve_emotions_in_four_categories():
    assert set(EMOTION_CATEGORIES) == {"neutral", "positive", "negative", "seeking"}
    assert len(ALL_EMOTIONS) == len(set(ALL_EMOTIONS)) == 12
    assert EMOTION_CATEGORIES["negative"] == ("sad", "anxious", "frustrated", "confused")


def test_category_of_names_the_taxonomy_category_and_neutral_for_strangers():
    assert category_of("curious") == "positive"
    assert category_of("help_seeking") == "seeking"
    assert category_of("angry") == "neutral"


# --- the strategy table -----------------------------------------------------------------------


def test_every_emotion_in_the_taxonomy_has_a_strategy_and_nothing_else_does():
    assert set(STRATEGY_TABLE) == set(ALL_EMOTIONS)
    assert all(strategy.emotion == name for name, strategy in STRATEGY_TABLE.items())


@pytest.mark.parametrize(
    ("name", "tone", "max_length", "question"),
    [
        ("neutral", "professional", 300, False),
        ("happy", "warm", 250, True),
        ("sad", "empathetic", 400, False),
        ("anxious", "calm_reassuring", 350, False),
        ("confused", "clear_explanatory", 500, True),
        ("help_seeking", "helpful", 600, True),
    ],
)
def test_the_seed_mappings_are_kept_exactly(name, tone, max_length, question):
    strategy = strategy_for(emotion(name))
    assert (strategy.tone, strategy.max_length, strategy.proactive_question) == (tone, max_length, question)
    assert strategy.use_memory


def test_only_positive_emotions_allow_emoji():
    assert {name for name, s in STRATEGY_TABLE.items() if s.emoji_allowed} == set(EMOTION_CATEGORIES["positive"])


def test_every_tone_in_the_table_and_the_plain_mode_has_guidance():
    tones = {s.tone for s in STRATEGY_TABLE.values()} | {PLAIN_STRATEGY.tone}
    assert tones <= set(TONE_GUIDANCE)
    assert all(TONE_GUIDANCE[tone].strip() for tone in tones)


def test_the_table_cannot_be_changed_at_run_time():
    with pytest.raises(TypeError):
        STRATEGY_TABLE["sad"] = STRATEGY_TABLE["happy"]  # type: ignore[index]


# --- strategy_for -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL_EMOTIONS)
def test_the_same_emotion_always_gives_the_same_strategy(name):
    assert strategy_for(emotion(name)) == strategy_for(emotion(name))
    assert strategy_for(emotion(name)) is STRATEGY_TABLE[name]


def test_none_unknown_and_low_confidence_emotions_get_the_neutral_strategy():
    neutral = STRATEGY_TABLE["neutral"]
    assert strategy_for(None) == neutral
    assert strategy_for(UNKNOWN) == neutral
    assert strategy_for(Emotion("unknown", "neutral", 0.99)) == neutral
    assert strategy_for(Emotion("angry", "negative", 0.99)) == neutral
    assert strategy_for(emotion("sad", CONFIDENCE_THRESHOLD - 0.01)) == neutral


def test_an_emotion_at_the_threshold_counts():
    assert strategy_for(emotion("sad", CONFIDENCE_THRESHOLD)).tone == "empathetic"


def test_effective_emotion_is_neutral_below_the_threshold_and_itself_above():
    confident = emotion("sad", 0.8)
    assert confident.effective() is confident
    assert emotion("sad", 0.2).effective() == NEUTRAL
    assert UNKNOWN.effective() == NEUTRAL


def test_the_plain_mode_ignores_the_emotion():
    assert strategy_for(emotion("sad"), enabled=False) == PLAIN_STRATEGY
    assert strategy_for(None, enabled=False) == PLAIN_STRATEGY
    assert PLAIN_STRATEGY.use_memory
    assert not PLAIN_STRATEGY.proactive_question


# --- Emotion JSON -----------------------------------------------------------------------------


def test_an_emotion_survives_a_json_round_trip():
    original = Emotion("curious", "positive", 0.85, ("question mark", "exploratory language"))
    assert original.to_json() == {
        "primary": "curious",
        "category": "positive",
        "confidence": 0.85,
        "indicators": ["question mark", "exploratory language"],
    }
    assert Emotion.from_json(original.to_json()) == original


@pytest.mark.parametrize("garbage", [None, [], ["sad"], 42, 3.5, True, {}, {"primary": None}, {"primary": ["sad"]}])
def test_garbage_emotions_become_unknown(garbage):
    parsed = Emotion.from_json(garbage)
    assert (parsed.primary, parsed.category, parsed.confidence) == ("unknown", "neutral", 0.0)


def test_an_unknown_primary_becomes_unknown_in_the_neutral_category():
    parsed = Emotion.from_json({"primary": "angry", "category": "negative", "confidence": 0.9})
    assert (parsed.primary, parsed.category) == ("unknown", "neutral")
    assert strategy_for(parsed) == STRATEGY_TABLE["neutral"]


def test_an_inconsistent_category_is_replaced_by_the_taxonomy_one():
    assert Emotion.from_json({"primary": "sad", "category": "positive", "confidence": 0.7}).category == "negative"


def test_primary_names_are_normalised():
    assert Emotion.from_json({"primary": " Help-Seeking ", "confidence": 0.7}).primary == "help_seeking"


def test_a_bare_string_is_taken_as_the_primary_with_moderate_confidence():
    assert Emotion.from_json("sad") == Emotion("sad", "negative", 0.6)
    assert Emotion.from_json("furious").primary == "unknown"


@pytest.mark.parametrize(
    ("confidence", "expected"),
    [
        (0.7, 0.7),
        (85, 1.0),
        (1e308, 1.0),
        (-3, 0.0),
        (math.nan, 0.0),
        (math.inf, 1.0),
        (-math.inf, 0.0),
        ("0.8", 0.8),
        ("high", 0.0),
        ("nan", 0.0),
        (None, 0.0),
        (True, 0.0),
        ([0.9], 0.0),
        ({"v": 1}, 0.0),
    ],
)
def test_confidence_is_clamped_to_zero_and_one_and_non_numbers_are_zero(confidence, expected):
    assert Emotion.from_json({"primary": "happy", "confidence": confidence}).confidence == expected


def test_indicators_are_at_most_five_short_strings():
    parsed = Emotion.from_json(
        {
            "primary": "sad",
            "confidence": 0.9,
            "indicators": ["x" * 500, 7, None, "", "  ", "a", "b", "c", "d", "e", "f"],
        }
    )
    assert len(parsed.indicators) == MAX_INDICATORS
    assert parsed.indicators[0] == "x" * MAX_INDICATOR_CHARS
    assert parsed.indicators[1:] == ("a", "b", "c", "d")


def test_a_single_indicator_string_or_junk_indicators_are_tolerated():
    assert Emotion.from_json({"primary": "sad", "indicators": "sigh"}).indicators == ("sigh",)
    assert Emotion.from_json({"primary": "sad", "indicators": {"a": 1}}).indicators == ()


# --- ResponseStrategy JSON --------------------------------------------------------------------


@pytest.mark.parametrize("strategy", [*STRATEGY_TABLE.values(), PLAIN_STRATEGY])
def test_a_strategy_survives_a_json_round_trip(strategy):
    assert ResponseStrategy.from_json(strategy.to_json()) == strategy


@pytest.mark.parametrize("garbage", [None, "sad", 3, [], ["sad"], {}, {"emotion": "angry"}])
def test_garbage_strategies_become_the_neutral_strategy(garbage):
    assert ResponseStrategy.from_json(garbage) == STRATEGY_TABLE["neutral"]


def test_invalid_strategy_fields_fall_back_to_the_table_entry():
    parsed = ResponseStrategy.from_json(
        {
            "emotion": "sad",
            "tone": ["x"],
            "max_length": -5,
            "use_memory": "yes",
            "formality": "shouty",
            "emoji_allowed": None,
        }
    )
    assert parsed == STRATEGY_TABLE["sad"]


# --- offline detector -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我今天好难过，想哭", "sad"),
        ("I feel so depressed", "sad"),
        ("明天面试，我好紧张", "anxious"),
        ("I'm really worried about my exam", "anxious"),
        ("气死我了，受不了", "frustrated"),
        ("This is so annoying, I'm fed up", "frustrated"),
        ("我不明白你的意思", "confused"),
        ("What do you mean?", "confused"),
        ("太好了，我好开心", "happy"),
        ("I'm so happy today", "happy"),
        ("好兴奋，终于要去旅行了", "excited"),
        ("I can't wait for the concert", "excited"),
        ("谢谢你", "grateful"),
        ("Thank you so much!", "grateful"),
        ("为什么天空是蓝色的", "curious"),
        ("How does a rainbow form?", "curious"),
        ("帮我想想该怎么办", "help_seeking"),
        ("Can you help me with my resume?", "help_seeking"),
        ("量子计算是什么", "info_seeking"),
        ("Tell me about Kyoto", "info_seeking"),
        ("你觉得我这样做对吗", "validation_seeking"),
        ("I quit my job. Am I right?", "validation_seeking"),
    ],
)
def test_the_offline_detector_reads_chinese_and_english_cues(text, expected):
    detected = detect_emotion_offline(text)
    assert detected.primary == expected
    assert detected.category == category_of(expected)
    assert detected.confidence >= CONFIDENCE_THRESHOLD
    assert detected.indicators


@pytest.mark.parametrize("text", ["我今天不开心", "一点也不高兴", "I'm not happy", "I don't feel very happy"])
def test_a_negated_positive_cue_reads_as_sad(text):
    assert detect_emotion_offline(text).primary == "sad"


@pytest.mark.parametrize("text", ["别担心", "I'm not worried at all", "我不难过"])
def test_a_negated_negative_cue_is_no_emotion(text):
    assert detect_emotion_offline(text).primary == "neutral"


def test_the_indicator_of_a_negated_cue_includes_the_negation():
    assert detect_emotion_offline("我今天不开心").indicators == ("不开心",)
    assert detect_emotion_offline("I'm not happy").indicators == ("not happy",)


def test_intensity_raises_the_confidence():
    plain = detect_emotion_offline("我难过").confidence
    assert detect_emotion_offline("我非常难过").confidence > plain
    assert detect_emotion_offline("我难过!!").confidence > plain
    assert detect_emotion_offline("I am very sad").confidence > detect_emotion_offline("I am sad").confidence


def test_english_cues_match_whole_words_in_any_case():
    assert detect_emotion_offline("SAD news").primary == "sad"
    assert detect_emotion_offline("I ate a sadly small sandwich").primary == "neutral"
    assert detect_emotion_offline("The greatest hits").primary == "neutral"


def test_a_longer_cue_wins_over_a_shorter_one_inside_it():
    assert detect_emotion_offline("怎么办").primary == "help_seeking"


def test_a_feeling_wins_a_tie_with_a_question():
    assert detect_emotion_offline("我很担心，怎么办").primary == "anxious"


def test_no_cue_gives_neutral_with_moderate_confidence():
    for text in ["今天天气不错的样子", "The meeting is at 3pm", "", "   "]:
        detected = detect_emotion_offline(text)
        assert (detected.primary, detected.confidence, detected.indicators) == ("neutral", 0.6, ())


def test_the_detector_is_deterministic_and_feeds_the_strategy_table():
    first, second = detect_emotion_offline("我好焦虑!!"), detect_emotion_offline("我好焦虑!!")
    assert first == second
    assert strategy_for(first).tone == "calm_reassuring"


def test_a_negation_long_before_the_cue_does_not_count():
    assert detect_emotion_offline("I'm not sure why, but today I am happy").primary == "happy"


def test_a_negation_deep_inside_a_long_message_is_still_found():
    assert detect_emotion_offline("x" * 5000 + " I'm not happy").indicators == ("not happy",)
