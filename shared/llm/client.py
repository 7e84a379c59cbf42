"""The chat model behind every reply: one OpenAI-compatible endpoint, bounded retries, JSON turns.

What to send and how to react to each answer is written once, as a *plan*: a generator that
yields :class:`_Call` and :class:`_Sleep` steps and receives the SDK's answer (or has its error
thrown in). Two small drivers run a plan, one with ``openai.OpenAI`` and one with
``openai.AsyncOpenAI``, so the sync and async methods cannot drift apart.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import random
import time
from collections import Counter
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Literal, TypeVar

import openai
from openai.types.chat import ChatCompletion

from shared.errors import MnemoError
from shared.llm.turn_schema import (
    TURN_JSON_SCHEMA,
    InvalidTurnOutput,
    TurnOutput,
    first_json_object,
    parse_turn_output,
)
from shared.settings import Settings

MAX_TRANSIENT_RETRIES = 2
BACKOFF_BASE_SECONDS = 0.5
MAX_RETRY_AFTER_SECONDS = 10.0
TEXT_MAX_TOKENS = 800
NO_API_KEY = "no-key"  # local servers need none, but the SDK insists on one
JSON_SCHEMA_FORMAT = {"type": "json_schema",
                      "json_schema": {"name": "mnemo_turn", "strict": True, "schema": TURN_JSON_SCHEMA}}
SCHEMA_INSTRUCTION = ("Answer with one JSON object and nothing else. It must match this JSON schema:\n"
                      + json.dumps(TURN_JSON_SCHEMA, separators=(",", ":")))
CORRECTION = ("Your previous answer was not valid JSON for the schema: {error}. "
              "Answer again with only the JSON object.")
REFUSAL_HINTS = {401: "check LLM_API_KEY", 403: "check LLM_API_KEY and the model's access rights",
                 404: "check LLM_BASE_URL and LLM_MODEL"}

Mode = Literal["json_schema", "json_object"]
T = TypeVar("T")
log = logging.getLogger(__name__)


class LLMUnavailable(MnemoError):
    """The LLM endpoint cannot answer now (down, too slow, refusing the key or the model)."""


@dataclass(frozen=True)
class TurnCompletion:
    """A turn's answer: ``output`` is None when it stayed invalid, and ``raw_text`` is then the reply."""

    output: TurnOutput | None
    raw_text: str
    mode: Mode
    attempts: int  # chat requests sent, retries included
    usage: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class _Call:
    request: dict[str, Any]
    timeout: float


@dataclass(frozen=True)
class _Sleep:
    seconds: float


_Plan = Generator[_Call | _Sleep, Any, T]


class _JsonSchemaRefused(Exception):
    """The server does not support ``response_format: json_schema``."""


@dataclass
class _Tally:
    requests: int = 0
    usage: Counter[str] = field(default_factory=Counter)


class ChatModel:
    """One OpenAI-compatible chat endpoint and model; build one per process (see :meth:`from_settings`)."""

    def __init__(self, base_url: str, api_key: str | None, model: str, timeout_seconds: float = 30.0) -> None:
        self.model = model
        self.timeout_seconds = timeout_seconds
        self.mode: Mode = "json_schema"  # becomes json_object for good once the server refuses schemas
        options = {"base_url": base_url, "api_key": api_key or NO_API_KEY, "timeout": timeout_seconds,
                   "max_retries": 0}
        self._client = openai.OpenAI(**options)
        self._async_client = openai.AsyncOpenAI(**options)

    @classmethod
    def from_settings(cls, settings: Settings) -> ChatModel | None:
        """The configured model, or None in offline mode (``LLM_BASE_URL`` unset)."""
        if settings.llm_base_url is None:
            return None
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
        return cls(settings.llm_base_url, key, settings.llm_model, settings.llm_timeout_seconds)

    def complete_turn(self, messages: list[dict[str, Any]]) -> TurnCompletion:
        """The structured answer to one user message; raises :class:`LLMUnavailable`."""
        return self._run(self._turn_plan(messages))

    async def acomplete_turn(self, messages: list[dict[str, Any]]) -> TurnCompletion:
        """:meth:`complete_turn` for the bots' event loop."""
        return await self._arun(self._turn_plan(messages))

    def complete_text(self, messages: list[dict[str, Any]], max_tokens: int = TEXT_MAX_TOKENS) -> str:
        """A plain text answer, for background jobs (summaries, reviews); raises :class:`LLMUnavailable`."""
        request = {"model": self.model, "messages": messages, "max_tokens": max_tokens}
        return self._run(self._text_plan(request))

    def complete_json(self, messages: list[dict[str, Any]], max_tokens: int = TEXT_MAX_TOKENS) -> dict[str, Any] | None:
        """One JSON object for background jobs (JSON mode, one corrective retry); None when the model
        keeps answering something else. The messages must ask for JSON; raises :class:`LLMUnavailable`."""
        request = {"model": self.model, "messages": messages, "max_tokens": max_tokens,
                   "response_format": {"type": "json_object"}}
        return self._run(self._json_plan(request))

    def close(self) -> None:
        self._client.close()

    async def aclose(self) -> None:
        await self._async_client.close()

    def _turn_plan(self, messages: list[dict[str, Any]]) -> _Plan[TurnCompletion]:
        deadline, tally = time.monotonic() + self.timeout_seconds, _Tally()
        mode, response = yield from self._first_answer(messages, deadline, tally)
        text = _answer_text(response)
        try:
            return TurnCompletion(parse_turn_output(text), text, mode, tally.requests, dict(tally.usage))
        except InvalidTurnOutput as exc:
            problem = str(exc)
        log.info("invalid turn JSON (%s); asking once more", problem)
        retried = yield from self._corrected_answer(messages, text, problem, mode, deadline, tally)
        output = _parsed_or_none(retried)
        raw_text = retried if retried.strip() else text
        if output is None and not raw_text.strip():
            raise LLMUnavailable("the LLM gave no usable answer, twice")
        return TurnCompletion(output, raw_text, mode, tally.requests, dict(tally.usage))

    def _first_answer(self, messages: list[dict[str, Any]], deadline: float,
                      tally: _Tally) -> _Plan[tuple[Mode, ChatCompletion]]:
        mode = self.mode
        try:
            response = yield from _send(self._turn_request(messages, mode), deadline, tally)
        except _JsonSchemaRefused:
            log.warning("%s refuses json_schema output: using JSON mode from now on", self.model)
            self.mode = mode = "json_object"
            response = yield from _send(self._turn_request(messages, mode), deadline, tally)
        return mode, response

    def _corrected_answer(self, messages: list[dict[str, Any]], text: str, problem: str, mode: Mode,
                          deadline: float, tally: _Tally) -> _Plan[str]:
        """The answer to one corrective message; empty when that request failed."""
        correction = [*messages, {"role": "assistant", "content": text},
                      {"role": "user", "content": CORRECTION.format(error=problem)}]
        try:
            response = yield from _send(self._turn_request(correction, mode), deadline, tally)
        except (LLMUnavailable, _JsonSchemaRefused) as exc:
            log.warning("the corrective LLM request failed: %s", exc)
            return ""
        return _answer_text(response)

    def _turn_request(self, messages: list[dict[str, Any]], mode: Mode) -> dict[str, Any]:
        if mode == "json_schema":
            return {"model": self.model, "messages": messages, "response_format": JSON_SCHEMA_FORMAT}
        leading = next((i for i, m in enumerate(messages) if m.get("role") != "system"), len(messages))
        instructed = [*messages[:leading], {"role": "system", "content": SCHEMA_INSTRUCTION}, *messages[leading:]]
        return {"model": self.model, "messages": instructed, "response_format": {"type": "json_object"}}

    def _json_plan(self, request: dict[str, Any]) -> _Plan[dict[str, Any] | None]:
        deadline, tally = time.monotonic() + self.timeout_seconds, _Tally()
        text = _answer_text((yield from _send(request, deadline, tally)))
        try:
            return first_json_object(text)
        except InvalidTurnOutput as exc:
            problem = str(exc)
        retry = {**request, "messages": [*request["messages"], {"role": "assistant", "content": text},
                                         {"role": "user", "content": CORRECTION.format(error=problem)}]}
        try:
            return first_json_object(_answer_text((yield from _send(retry, deadline, tally))))
        except (InvalidTurnOutput, _JsonSchemaRefused):
            return None

    def _text_plan(self, request: dict[str, Any]) -> _Plan[str]:
        response = yield from _send(request, time.monotonic() + self.timeout_seconds, _Tally())
        return _answer_text(response)

    def _run(self, plan: _Plan[T]) -> T:
        """Drive ``plan`` with the blocking client."""
        answer: Any = None
        failure: openai.OpenAIError | None = None
        while True:
            try:
                step = plan.throw(failure) if failure else plan.send(answer)
            except StopIteration as done:
                return done.value
            answer, failure = None, None
            if isinstance(step, _Sleep):
                time.sleep(step.seconds)
                continue
            try:
                answer = self._client.chat.completions.create(**_sdk_arguments(step.request), timeout=step.timeout)
            except openai.OpenAIError as exc:
                failure = exc

    async def _arun(self, plan: _Plan[T]) -> T:
        """Drive ``plan`` with the async client."""
        answer: Any = None
        failure: openai.OpenAIError | None = None
        while True:
            try:
                step = plan.throw(failure) if failure else plan.send(answer)
            except StopIteration as done:
                return done.value
            answer, failure = None, None
            if isinstance(step, _Sleep):
                await asyncio.sleep(step.seconds)
                continue
            try:
                answer = await self._async_client.chat.completions.create(
                    **_sdk_arguments(step.request), timeout=step.timeout)
            except openai.OpenAIError as exc:
                failure = exc


def _sdk_arguments(request: dict[str, Any]) -> dict[str, Any]:
    """The request as SDK arguments, with ``response_format`` passed through untouched.

    The SDK walks typed parameters recursively before sending; for the turn's JSON schema that
    costs several milliseconds of event-loop time per call, so the schema goes in ``extra_body``.
    """
    arguments = dict(request)
    response_format = arguments.pop("response_format", None)
    if response_format is not None:
        arguments["extra_body"] = {"response_format": response_format}
    return arguments


def _send(request: dict[str, Any], deadline: float, tally: _Tally) -> _Plan[ChatCompletion]:
    """One chat request, retried on transient errors with backoff, never past ``deadline``."""
    for retry in range(MAX_TRANSIENT_RETRIES + 1):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        tally.requests += 1
        try:
            response = yield _Call(request, remaining)
        except openai.OpenAIError as exc:
            delay = _retry_delay(exc, retry, request)
            if retry == MAX_TRANSIENT_RETRIES or time.monotonic() + delay >= deadline:
                raise LLMUnavailable(f"the LLM did not answer ({_describe(exc)}); "
                                     f"gave up after {retry + 1} attempts") from exc
            log.warning("LLM request failed (%s); retrying in %.1f s", _describe(exc), delay)
            yield _Sleep(delay)
        else:
            if response.usage is not None:
                tally.usage.update({name: int(getattr(response.usage, name) or 0)
                                    for name in ("prompt_tokens", "completion_tokens", "total_tokens")})
            return response
    raise LLMUnavailable("the LLM did not answer within LLM_TIMEOUT_SECONDS")


def _retry_delay(exc: openai.OpenAIError, retry: int, request: Mapping[str, Any]) -> float:
    """Seconds to wait before trying again; raises when trying again cannot help."""
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if _refuses_json_schema(exc, request):
            raise _JsonSchemaRefused(_describe(exc))
        if status < 500 and status not in (408, 409, 429):
            hint = REFUSAL_HINTS.get(status, "check LLM_MODEL and what the endpoint supports")
            raise LLMUnavailable(f"the LLM endpoint refused the request ({_describe(exc)}); {hint}") from exc
        retry_after = _retry_after_seconds(exc.response.headers)
        if retry_after is not None:
            return retry_after
    elif not isinstance(exc, openai.APIConnectionError):  # e.g. an answer the SDK could not read
        raise LLMUnavailable(f"the LLM endpoint answered unexpectedly ({_describe(exc)})") from exc
    return BACKOFF_BASE_SECONDS * 2**retry + random.uniform(0, BACKOFF_BASE_SECONDS)


def _refuses_json_schema(exc: openai.APIStatusError, request: Mapping[str, Any]) -> bool:
    if exc.status_code not in (400, 422) or request.get("response_format", {}).get("type") != "json_schema":
        return False
    text = f"{exc} {exc.body}".lower()
    return "response_format" in text or "json_schema" in text


def _retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The server's Retry-After (milliseconds, seconds or an HTTP date), capped; None when absent."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = headers.get(name)
        if not raw:
            continue
        try:
            seconds: float | None = float(raw) * scale
        except ValueError:
            seconds = _seconds_until(raw)
        if seconds is not None and math.isfinite(seconds):
            return min(max(seconds, 0.0), MAX_RETRY_AFTER_SECONDS)
    return None


def _seconds_until(http_date: str) -> float | None:
    try:
        return (parsedate_to_datetime(http_date) - datetime.now(UTC)).total_seconds()
    except (TypeError, ValueError):
        return None


def _answer_text(response: ChatCompletion) -> str:
    return (response.choices[0].message.content or "") if response.choices else ""


def _parsed_or_none(text: str) -> TurnOutput | None:
    try:
        return parse_turn_output(text)
    except InvalidTurnOutput:
        return None


def _describe(exc: openai.OpenAIError) -> str:
    if isinstance(exc, openai.APIStatusError):
        body = exc.body.get("error", exc.body) if isinstance(exc.body, dict) else exc.body
        message = body.get("message") if isinstance(body, dict) else body
        return f"HTTP {exc.status_code}: {str(message or exc.message)[:200]}"
    if isinstance(exc, openai.APITimeoutError):
        return "timed out"
    return f"{type(exc).__name__}: {str(exc)[:200]}"
