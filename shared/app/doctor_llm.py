"""``mnemo doctor``'s model check, within a deadline of its own (``--llm-seconds``), however slow the model.

It asks the endpoint for its models, times one streamed turn request (the product's own prompt and
output format, cut after a few tokens: time to first token, tokens per second), sends one whole turn
when the measured speed says it fits the deadline, and says which ``LLM_TIMEOUT_SECONDS`` suits that
speed: a slow model is usable with a longer one.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import httpx

from shared.app.check import Check, first_line
from shared.app.container import loopback_hint
from shared.conversation.prompt import PromptInputs, build_turn_prompt
from shared.llm.client import ChatModel, TurnCompletion
from shared.llm.retries import LLMUnavailable
from shared.llm.speed import TYPICAL_TURN_TOKENS, SpeedReading, advised_timeout
from shared.llm.speed_probe import measure_turn_speed
from shared.llm.turn_answer import PROBLEM_TEXTS
from shared.settings import Settings

DOCTOR_LLM_SECONDS = 30.0
LIST_TIMEOUT_SECONDS = 5.0
DEADLINE_SLACK_SECONDS = 0.5
PROBE_MESSAGE = "Hi! I just moved to Lisbon and I love the ocean."


def llm_check(settings: Settings, seconds: float = DOCTOR_LLM_SECONDS) -> Check:
    """The verdict on ``LLM_BASE_URL`` and ``LLM_MODEL``, reached within ``seconds``."""
    if settings.llm_base_url is None:
        return Check("llm", "info", "LLM_BASE_URL unset: offline mode (rule-based replies and extraction)")
    deadline = time.monotonic() + seconds
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    models = list_models(settings.llm_base_url, key, "LLM_BASE_URL", min(LIST_TIMEOUT_SECONDS, seconds))
    if isinstance(models, Check):
        return models
    if models and settings.llm_model not in models:
        return Check("llm", "warn", f"endpoint answers, but LLM_MODEL={settings.llm_model!r} is not among "
                     f"its models ({', '.join(sorted(models)[:8])})")
    return _timed_turn(settings, deadline, seconds)


def _timed_turn(settings: Settings, deadline: float, seconds: float) -> Check:
    model = ChatModel.from_settings(settings)
    assert model is not None  # LLM_BASE_URL is set
    messages = build_turn_prompt(_probe_inputs(settings)).messages
    try:
        reading = asyncio.run(measure_turn_speed(model, messages, deadline - time.monotonic()))
    except LLMUnavailable as exc:
        return Check("llm", "fail", f"{settings.llm_base_url} lists the model but a turn request failed: {exc}")
    refused = f", refused: {', '.join(sorted(model.endpoint.refused))}" if model.endpoint.refused else ""
    head = (f"{settings.llm_base_url} answers; model {settings.llm_model}; output mode {reading.mode}{refused}; "
            f"{reading.describe()}")
    if reading.tokens_per_second is None and time.monotonic() >= deadline - DEADLINE_SLACK_SECONDS:
        return Check("llm", "warn", f"{head} within the doctor's {seconds:.0f} s, too few to time: the model "
                     f"reads a turn's prompt slower than that here. A slow model is usable with a longer "
                     f"LLM_TIMEOUT_SECONDS (now {settings.llm_timeout_seconds:g}); `mnemo doctor --llm-seconds 300` "
                     "waits long enough to measure it")
    typical = reading.turn_seconds(min(TYPICAL_TURN_TOKENS, settings.llm_max_output_tokens))
    whole = _whole_turn(model, messages, deadline, typical)
    if isinstance(whole, Check):
        return whole
    return _verdict(settings, head, reading, typical, whole, seconds)


def _verdict(settings: Settings, head: str, reading: SpeedReading, typical: float | None,
             whole: tuple[TurnCompletion, float] | None, seconds: float) -> Check:
    """What was measured, what to set, and whether the whole turn (if one was sent) was usable."""
    measured = whole[1] if whole is not None else None
    verdict, advice, timeout = _timeout_advice(settings, max((t for t in (typical, measured) if t is not None),
                                                             default=None))
    parts = [head]
    if typical is not None:
        tokens = min(TYPICAL_TURN_TOKENS, settings.llm_max_output_tokens)
        parts.append(f"a typical turn (about {tokens} tokens) takes about {typical:.0f} s here")
    if whole is None:
        parts.append(f"a whole turn was not waited for (the doctor's limit is {seconds:.0f} s; "
                     "`mnemo doctor --llm-seconds N` waits longer)")
    else:
        parts.append(f"one turn took {measured:.1f} s ({whole[0].attempts} request(s), "
                     f"finish {whole[0].finish_reason})")
    parts.append(advice + _cap_note(settings, reading, timeout))
    output = whole[0].output if whole is not None else None
    if whole is not None and output is None:
        said = f"salvaged reply {whole[0].reply[:60]!r}" if whole[0].reply else "nothing usable: offline replies"
        problem = PROBLEM_TEXTS.get(whole[0].problem or "", whole[0].problem)
        return Check("llm", "warn", "; ".join(parts) + f"; the answer was {problem} ({said}); try a larger model "
                     "or LLM_MAX_OUTPUT_TOKENS")
    if reading.mode != "json_schema":
        parts.append(f"set LLM_OUTPUT_MODE={reading.mode.split('+')[0]} to skip the probing at start")
    if output is not None:
        parts.append(f"reply {output.response[:60]!r}")
    return Check("llm", verdict, "; ".join(parts))


def _whole_turn(model: ChatModel, messages: list[dict[str, Any]], deadline: float,
                typical: float | None) -> tuple[TurnCompletion, float] | Check | None:
    """One real turn, when the measured speed says it ends before ``deadline`` (or the speed is unknown):
    its completion and time; None when not sent or not finished in time; a failing verdict."""
    seconds = deadline - time.monotonic()
    if seconds <= DEADLINE_SLACK_SECONDS or (typical is not None and typical > seconds):
        return None
    started = time.monotonic()
    try:
        completion = model.complete_turn(messages, seconds=seconds)
    except LLMUnavailable as exc:
        if time.monotonic() >= deadline - DEADLINE_SLACK_SECONDS:
            return None  # slower than measured: out of time, not broken
        return Check("llm", "fail", f"the endpoint answered a short request but a whole turn failed: {exc}")
    return completion, time.monotonic() - started


def _timeout_advice(settings: Settings, turn_seconds: float | None) -> tuple[str, str, float]:
    """(verdict, what to set, the timeout then in force) for turns that take ``turn_seconds`` here."""
    current = settings.llm_timeout_seconds
    if turn_seconds is None:
        return "ok", f"LLM_TIMEOUT_SECONDS={current:g}", current
    advised = advised_timeout(turn_seconds)
    if advised > current:
        return "warn", (f"LLM_TIMEOUT_SECONDS={current:g} is too short for this model here: set "
                        f"LLM_TIMEOUT_SECONDS={advised} (a slow model is usable with a longer timeout; a turn "
                        "past it is answered offline)"), advised
    return "ok", f"LLM_TIMEOUT_SECONDS={current:g} is enough here ({advised} would do)", current


def _cap_note(settings: Settings, reading: SpeedReading, timeout: float) -> str:
    """A small model often writes until the cap: what an answer that long takes, when ``timeout`` is too short."""
    cap = settings.llm_max_output_tokens
    capped = reading.turn_seconds(cap)
    if capped is None or cap <= TYPICAL_TURN_TOKENS or advised_timeout(capped) <= timeout:
        return ""
    return (f"; an answer that runs to LLM_MAX_OUTPUT_TOKENS={cap} (small models often do) takes about "
            f"{capped:.0f} s: set LLM_MAX_OUTPUT_TOKENS={TYPICAL_TURN_TOKENS} beside it")


def _probe_inputs(settings: Settings) -> PromptInputs:
    now = datetime.now(ZoneInfo(settings.default_timezone))
    return PromptInputs(bot_name=settings.bot_name, personality=settings.bot_personality, strategy=None,
                        user_name="Doctor", user_message=PROBE_MESSAGE, local_now=now,
                        timezone=settings.default_timezone, is_group=False, profile=None, memories=(), episodes=(),
                        history=(), memory_budget_tokens=settings.memory_context_tokens)


def list_models(base_url: str, api_key: str | None, variable: str,
                seconds: float = LIST_TIMEOUT_SECONDS) -> set[str] | Check:
    """The model ids ``base_url`` serves, or the failing verdict (named after ``variable``)."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        response = httpx.get(f"{base_url}/models", headers=headers, timeout=seconds)
    except httpx.HTTPError as exc:
        return Check("llm", "fail", f"{variable}={base_url} does not answer: {first_line(exc)}"
                     f"{loopback_hint(base_url, variable)}")
    if response.status_code in (401, 403):
        return Check("llm", "fail", f"{variable}={base_url} refused the API key (HTTP {response.status_code})")
    if response.status_code >= 400:
        return Check("llm", "fail", f"{variable}={base_url}/models answered HTTP {response.status_code}")
    try:
        return {str(model.get("id")) for model in response.json().get("data", [])}
    except (ValueError, AttributeError):
        return Check("llm", "fail", f"{variable}={base_url}/models did not answer like an OpenAI-compatible API")
