"""Time one streamed turn request: the product's own request (prompt, output format, extra body), cut
to a few tokens and to a deadline of its own, so a slow model is measured in seconds, not waited for.

The output-format ladder is walked as a turn walks it (a refusal comes at once, before any token), so the
reading also says which format the server takes; the endpoint remembers it for a whole turn after.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from shared.llm.client import MAX_PARAMETER_FIXES, ChatModel
from shared.llm.metering import reported_usage
from shared.llm.modes import refused_parameter, refuses_format
from shared.llm.retries import LLMUnavailable, describe, status_and_body
from shared.llm.sdk import openai
from shared.llm.speed import SpeedReading
from shared.llm.transport import sdk_arguments

PROBE_TOKENS = 32
"""Enough tokens to time the writing speed; the server stops there (``max_tokens``)."""


async def measure_turn_speed(model: ChatModel, messages: list[dict[str, Any]], seconds: float,
                             tokens: int = PROBE_TOKENS) -> SpeedReading:
    """Send ``messages`` as a turn, streamed and capped at ``tokens``, and time it; what arrived by the
    deadline (``seconds`` from now) is the reading. Raises :class:`LLMUnavailable` when the server
    refuses the request for another reason than its output format, or cannot be reached."""
    deadline = time.monotonic() + seconds
    client = model.new_client()
    fixes = 0
    try:
        while (rung := model.endpoint.rung(model.endpoint.turn_ladder)) is not None:
            request = {**model.turn_request(messages, rung), model.endpoint.token_parameter: tokens}
            try:
                return await _timed(client, request, rung.label, deadline, tokens)
            except openai.APIStatusError as exc:
                status, body = exc.status_code, status_and_body(exc)[1]
                if refuses_format(status, body, rung):
                    model.endpoint.refuse(rung, describe(exc), model.endpoint.turn_ladder)
                    continue
                parameter = refused_parameter(status, body, request)
                if parameter is None or fixes == MAX_PARAMETER_FIXES:
                    raise LLMUnavailable(f"the LLM endpoint refused the request ({describe(exc)})") from exc
                model.endpoint.fix(parameter)
                fixes += 1
            except openai.OpenAIError as exc:
                raise LLMUnavailable(f"the LLM did not answer ({describe(exc)})") from exc
        raise LLMUnavailable("the LLM endpoint refuses every output format allowed by LLM_OUTPUT_MODE")
    finally:
        await client.close()


async def _timed(client: openai.AsyncOpenAI, request: dict[str, Any], mode: str, deadline: float,
                 tokens: int) -> SpeedReading:
    sent = time.monotonic()
    arrivals: list[float] = []
    usage: dict[str, int] = {}

    async def read() -> None:
        arguments = sdk_arguments({name: value for name, value in request.items() if name != "stream"})
        stream = await client.chat.completions.create(**arguments, stream=True, timeout=deadline - sent)
        try:
            async for chunk in stream:
                if chunk.usage is not None:
                    usage.update(reported_usage(chunk.usage))
                delta = chunk.choices[0].delta if chunk.choices else None
                if delta is not None and delta.content:
                    arrivals.append(time.monotonic() - sent)
                    if len(arrivals) >= tokens:
                        break
        finally:
            await stream.close()  # the server stops writing

    with contextlib.suppress(TimeoutError, openai.APITimeoutError):  # the deadline: what arrived is the reading
        await asyncio.wait_for(read(), timeout=max(0.0, deadline - sent))
    written = usage.get("completion_tokens") or len(arrivals)
    return SpeedReading(mode=mode, first_token_seconds=arrivals[0] if arrivals else None, tokens=written,
                        last_token_seconds=arrivals[-1] if arrivals else None, pieces=len(arrivals))
