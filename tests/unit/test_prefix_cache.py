"""What a prefix cache can reuse: the measure, and the background prompts' fixed openings."""

from datetime import UTC, datetime

from bench.prefix_cache import reusable_shares, reusable_tokens
from shared.lifecycle.dedup import CONFIRM_RULES
from shared.lifecycle.episodes import SUMMARY_RULES, SessionWork, summary_messages
from shared.lifecycle.extraction import MONITOR_RULES, BatchTurn, build_extraction_messages

NOW = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)


def chat(*contents: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": contents[0]},
            *({"role": "user" if i % 2 == 0 else "assistant", "content": c} for i, c in enumerate(contents[1:]))]


def test_a_prompt_that_extends_the_previous_one_is_reusable_up_to_where_they_part():
    first = chat("rules " * 50, "hello there")
    second = chat("rules " * 50, "hello there", "hi!", "how are you")
    reused, total = reusable_tokens(first, second)
    assert 0 < reused < total
    assert reusable_tokens(None, second) == (0, total)
    assert reusable_tokens(second, second) == (total, total)


def test_a_changed_system_message_leaves_nothing_to_reuse_after_it():
    shares = reusable_shares([chat("rules at 10:00", "hi"), chat("rules at 10:01", "hi"), chat("rules at 10:01", "hi")])
    assert shares[0] < 0.5
    assert shares[1] == 1.0


def test_every_background_prompt_opens_with_its_fixed_rules_and_puts_the_data_after_them():
    one = build_extraction_messages([BatchTurn(1, "I moved to Lisbon", "Nice!", NOW)], [])
    two = build_extraction_messages([BatchTurn(2, "我养了一只猫", "好可爱", NOW)], [])
    assert one[0] == two[0] == {"role": "system", "content": MONITOR_RULES}
    work = SessionWork(session_id=1, user_id=1, chat_id=1, turns=((1, "user", "I moved to Lisbon", NOW),),
                       topic=None, timezone="UTC", core_summary="", scratchpad={})
    assert summary_messages(work)[0] == {"role": "system", "content": SUMMARY_RULES}
    assert "Lisbon" not in MONITOR_RULES + SUMMARY_RULES + CONFIRM_RULES
