"""The junk judges of `mnemo bench memories` catch what the issue reported, independently of the product's guard."""

from bench.memories import report
from bench.memory_judges import Said, is_question, judge, similar


def said(text: str, reply: str = "", recalled: tuple[str, ...] = ()) -> Said:
    return Said("u", text, reply, recalled)


def test_a_question_stored_as_a_memory_is_junk_in_either_language():
    assert judge("我叫什么名字", said("我叫什么名字？"), [], []) == ["question"]
    assert judge("I live in which city, do you remember", said("I live in which city, do you remember?"), [], []) == [
        "question"]
    assert is_question("I live in which city", "I live in which city, do you remember?")
    assert not is_question("I live in Paris", "I live in Paris. Where do you live?")


def test_the_bots_words_a_near_duplicate_and_a_recalled_restatement_are_junk():
    bot = ["说起来，我最喜欢吃火锅——现在还是这样吗？"]
    assert judge("我最喜欢吃火锅", said("说起来，我最喜欢吃火锅"), bot, []) == ["bot_words"]
    assert judge("我住在北京。", said("我住在北京。"), [], ["我住在北京"]) == ["near_duplicate"]
    assert judge("我最喜欢吃火锅!", said("我最喜欢吃火锅!", recalled=("我最喜欢吃火锅",)), [], []) == [
        "recalled_restatement"]


def test_a_plain_new_fact_is_not_junk_and_a_changed_number_is_not_a_duplicate():
    assert judge("我住在上海", said("不对，我住在上海"), ["好的，我记住了：你住在北京。"], ["我住在北京"]) == []
    assert not similar("I'm 25 years old", "I'm 26 years old")


def test_the_report_prints_the_junk_rate_and_the_coverage():
    part = {"messages": 10, "stored": 4, "junk": 1, "junk_rate": 0.25, "coverage": 0.5, "covered": 1,
            "observations": 2, "junk_by_kind": {"question": 1, "bot_words": 0, "near_duplicate": 0,
                                                "recalled_restatement": 0},
            "junk_examples": [{"memory": "我叫什么名字", "said": "我叫什么名字？", "kinds": ["question"]}]}
    text = report({"goal_junk_rate": 0.02, "locomo": part, "madial": {**part, "coverage": None},
                   "all": {**part, "goal_met": False}})
    assert "25.0%" in text
    assert "50.0%" in text
    assert "NOT met" in text
    assert "我叫什么名字" in text
