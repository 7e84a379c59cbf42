"""How fast the real server answers a turn, measured the way ``mnemo doctor`` measures it, and against whole
turns: README's advice for small local models (``LLM_TIMEOUT_SECONDS``, ``LLM_MAX_OUTPUT_TOKENS``) is these
figures, written to ``tests/artifacts/real-llm-speed.json`` and printed.

It checks that the doctor's method holds on a real server: a short streamed probe (time to first token,
tokens per second) predicts a whole turn's time, a typical turn is about :data:`TYPICAL_TURN_TOKENS` long,
and the timeout the doctor advises from the probe keeps every measured turn online.
"""

from __future__ import annotations

import asyncio
import json
import statistics
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from shared.conversation.prompt import PromptInputs, build_turn_prompt
from shared.llm.client import ChatModel
from shared.llm.speed import TYPICAL_TURN_TOKENS, advised_timeout
from shared.llm.speed_probe import measure_turn_speed
from tests.real_llm.conftest import MODEL_ALIAS, SYSTEM_ROLE
from tests.real_llm.test_real_server import MAX_OUTPUT_TOKENS

pytestmark = pytest.mark.real_llm

PROBED = ("Hi! My name is Lin and I live in Lisbon.", "我很喜欢喝茉莉花茶，每天早上都喝一杯。",
          "My cat Miso is three years old and loves boxes.")
TURNS = ("Remind me to call my sister tomorrow at 6pm.", "I had a rough day at work, my boss yelled at me.",
         "周末我想去爬山，你有什么建议吗？")
"""Each probe and turn has a message of its own, as consecutive turns do: the server reuses the shared start of
the prompt (the system part), never a whole prompt it has just read."""
MEASURE_SECONDS = 600  # a measurement, not a limit: the busiest machine still finishes
ARTIFACT = Path(__file__).resolve().parents[1] / "artifacts" / "real-llm-speed.json"


def turn_messages(text: str) -> list[dict]:
    inputs = PromptInputs(bot_name="Mnemo", personality="a warm, curious companion", strategy=None, user_name="Lin",
                          user_message=text, local_now=datetime.now(ZoneInfo("Europe/Lisbon")),
                          timezone="Europe/Lisbon", is_group=False, profile=None, memories=(), episodes=(), history=(),
                          memory_budget_tokens=700)
    return build_turn_prompt(inputs).messages


def test_the_real_servers_speed_predicts_a_turns_time_and_gives_the_advised_timeout(real_llm_url):
    model = ChatModel(f"{real_llm_url}/v1", None, MODEL_ALIAS, MEASURE_SECONDS, max_output_tokens=MAX_OUTPUT_TOKENS,
                      system_role=SYSTEM_ROLE)
    probes, answers = [], []
    for probed, text in zip(PROBED, TURNS, strict=True):
        probes.append(asyncio.run(measure_turn_speed(model, turn_messages(probed), MEASURE_SECONDS)))
        answers.append(asyncio.run(measure_turn_speed(model, turn_messages(text), MEASURE_SECONDS,
                                                      tokens=MAX_OUTPUT_TOKENS)))  # a whole turn's answer
    first = max(p.first_token_seconds for p in probes)  # the first probe reads its whole prompt, as the doctor's does
    speed = statistics.median(p.tokens_per_second for p in probes)
    seconds = [round(a.last_token_seconds, 1) for a in answers]
    tokens = [a.tokens for a in answers]
    predicted = [round(p.turn_seconds(a.tokens), 1) for p, a in zip(probes, answers, strict=True)]
    typical = first + min(TYPICAL_TURN_TOKENS, MAX_OUTPUT_TOKENS) / speed
    figures = {"output_mode": probes[0].mode, "first_token_seconds": round(first, 1),
               "probe_first_token_seconds": [round(p.first_token_seconds, 1) for p in probes],
               "probe_tokens_per_second": [round(p.tokens_per_second, 1) for p in probes],
               "tokens_per_second": round(speed, 1), "turn_seconds": seconds, "turn_tokens": tokens,
               "turn_first_token_seconds": [round(a.first_token_seconds, 1) for a in answers],
               "predicted_turn_seconds": predicted, "max_output_tokens": MAX_OUTPUT_TOKENS,
               "typical_turn_seconds": round(typical, 1), "advised_timeout_seconds": advised_timeout(typical)}
    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    ARTIFACT.write_text(json.dumps(figures, ensure_ascii=False, indent=2))
    print(json.dumps(figures, ensure_ascii=False))

    for took, guess in zip(seconds, predicted, strict=True):  # the probe's figures tell a whole answer's time
        assert guess / 2 <= took <= guess * 2, figures
    assert TYPICAL_TURN_TOKENS / 2 <= statistics.median(tokens) <= TYPICAL_TURN_TOKENS * 2, figures
    assert max(seconds) <= advised_timeout(typical), figures  # the doctor's advice would have kept every turn
