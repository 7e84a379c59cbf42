"""The chat model behind every reply: one OpenAI-compatible endpoint, bounded retries, JSON turns.

What to send and how to react to each answer is written once, as a *plan*: a generator that
yields :class:`_Call` and :class:`_Sleep` steps and receives the streamed answer (or has its error
thrown in). One async driver runs a plan; the blocking methods run it on an event loop of their
own, so the bots and the workers share every rule, and every request has a total deadline.

Per endpoint and process, :class:`EndpointState` remembers which output format the server
accepted (:mod:`shared.llm.modes`) and which optional parameters it refused. Every request is
capped (``LLM_MAX_OUTPUT_TOKENS`` for turns) and carries ``LLM_EXTRA_BODY`` unchanged. Every answered
request is noted on the caller's usage meter, if one is open (:mod:`shared.llm.metering`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Generator, Mapping
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, TypeVar

from shared.attachments.vision import image_count, refuses_image, with_image
from shared.llm import metering
from shared.llm.answers import strip_reasoning
from shared.llm.context_window import DEFAULT_WINDOW, ContextWindow, context_refusal, estimate_chat
from shared.llm.gate import GatedCalls, ModelGate
from shared.llm.live_text import ResponseReader, shown_so_far
from shared.llm.modes import (
    JSON_LADDER,
    OutputFormat,
    ladder_for,
    refused_parameter,
    refuses_format,
    response_format,
)
from shared.llm.retries import LLMUnavailable, describe, request_status, retry_delay, status_and_body
from shared.llm.sdk import ClientOptions, openai
from shared.llm.transport import RawAnswer, send_chat
from shared.llm.turn_answer import (
    EXAMPLE_INSTRUCTION,
    SCHEMA_INSTRUCTION,
    SCHEMA_NAME,
    TURN_BOUNDED_SCHEMA,
    TurnReading,
    read_turn_answer,
)
from shared.llm.turn_schema import (
    NOTE_MARKS,
    TURN_JSON_SCHEMA,
    InvalidTurnOutput,
    TurnOutput,
    first_json_object,
)
from shared.llm.window_probe import ProbeFailed, probe_window
from shared.metrics import record
from shared.settings import Settings
from shared.text import estimate_tokens

MAX_TRANSIENT_RETRIES = 2
MAX_PARAMETER_FIXES = 2
UNDESCRIBED_LIMIT = 2
"""Answers in a row to an image part that do not describe it, after which ``LLM_VISION=auto`` sends no more images:
the server takes image parts but the model never sees them."""
TEXT_MAX_TOKENS = 800
DEFAULT_MAX_OUTPUT_TOKENS = 1024
NO_API_KEY = "no-key"  # local servers need none, but the SDK insists on one
CORRECTION = ("Your previous answer was not valid JSON: {error}. "
              "Answer again with only the JSON object.")

T = TypeVar("T")
OnText = Callable[[str], None]
"""Hears a turn's reply while it streams: the words that may be shown so far, each time they change."""
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TurnCompletion:
    """A turn's answer: ``output`` when valid; otherwise ``reply`` holds what may be shown (maybe empty)."""

    output: TurnOutput | None
    reply: str
    mode: str  # the output format that answered, e.g. json_schema or json_object+schema
    attempts: int  # chat requests sent, retries included
    usage: dict[str, int] = field(default_factory=dict)
    finish_reason: str | None = None
    problem: str | None = None  # see TurnReading.problem
    image_seen: bool = False  # the image went to the model in an image part (and was not refused)


@dataclass(frozen=True)
class _Call:
    request: dict[str, Any]
    timeout: float
    kind: str = "turn"  # the plan's kind and the output format asked for, as the metrics count them
    mode: str = "text"

    @property
    def cut_at(self) -> tuple[str, ...]:
        """A turn's answer stops where it starts to copy the app note back: the rest would be the prompt."""
        return NOTE_MARKS if self.kind == "turn" else ()


@dataclass(frozen=True)
class _Sleep:
    seconds: float


_Plan = Generator[_Call | _Sleep, Any, T]


class ContextOverflow(LLMUnavailable):
    """The server refused the prompt as too long for its context window (what it said of the window is kept:
    :meth:`ChatModel.aprompt_budget` is smaller now)."""


class _FormatRefused(Exception):
    """The server does not produce the requested output format."""


class _ImageRefused(Exception):
    """The server does not take image parts (a text-only model)."""


@dataclass
class _Tally:
    kind: str = "turn"  # turn, json or text: which plan the requests belong to
    requests: int = 0
    usage: Counter[str] = field(default_factory=Counter)


@dataclass
class EndpointState:
    """What this process has learnt about the endpoint: refused formats and parameters."""

    turn_ladder: tuple[OutputFormat, ...]
    json_ladder: tuple[OutputFormat, ...] = JSON_LADDER
    refused: set[str] = field(default_factory=set)
    token_parameter: str = "max_tokens"
    stream_usage: bool = True
    streaming: bool = True  # False once the server cut a streamed answer short for another request
    example_instruction: bool = False  # the model wrote the schema back: show it an example instead
    vision: str = "auto"  # LLM_VISION: auto, on or off
    images_refused: bool = False  # auto: the server refused an image part once; none is sent again
    undescribed: int = 0  # answers in a row to an image that did not describe it

    def note_description(self, described: bool) -> None:
        """An answer to an image part: ``auto`` stops sending images once :data:`UNDESCRIBED_LIMIT` answers in a
        row did not describe one (a server that takes the part and drops it: Ollama, llama-cpp-python)."""
        self.undescribed = 0 if described else self.undescribed + 1
        if self.vision == "auto" and self.undescribed >= UNDESCRIBED_LIMIT and not self.images_refused:
            self.images_refused = True
            log.info("the model answered %d images without describing them; sending no image from now on",
                     self.undescribed)

    @property
    def sends_images(self) -> bool:
        return self.vision == "on" or (self.vision == "auto" and not self.images_refused)

    def rung(self, ladder: tuple[OutputFormat, ...]) -> OutputFormat | None:
        return next((rung for rung in ladder if rung.label not in self.refused), None)

    def refuse(self, rung: OutputFormat, reason: str, ladder: tuple[OutputFormat, ...]) -> None:
        self.refused.add(rung.label)
        following = self.rung(ladder)
        log.info("the LLM endpoint refuses %s output (%s); using %s from now on", rung.label, reason,
                 following.label if following else "nothing")

    def fix(self, parameter: str) -> None:
        if parameter == "max_tokens":
            self.token_parameter = "max_completion_tokens"
        elif parameter == "stream_options":
            self.stream_usage = False


class ChatModel:
    """One OpenAI-compatible chat endpoint and model; build one per process (see :meth:`from_settings`)."""

    def __init__(self, base_url: str, api_key: str | None, model: str, timeout_seconds: float = 30.0, *,
                 output_mode: str = "auto", max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
                 extra_body: Mapping[str, Any] | None = None, context_tokens: int = DEFAULT_WINDOW,
                 vision: str = "auto", gate: GatedCalls | None = None, system_role: str = "system") -> None:
        self.model = model
        self.system_role = system_role
        """``user``: the instructions open the first user message (``LLM_SYSTEM_ROLE``), for a server that drops
        system messages."""
        self.gate = gate
        """Where background calls yield to live turns on a shared model server (None: every call goes at once)."""
        self.timeout_seconds = timeout_seconds
        self.max_output_tokens = max_output_tokens
        self.window = ContextWindow(configured=context_tokens)
        """The context window a turn's prompt and reply must fit in (``LLM_CONTEXT_TOKENS``, or the server's)."""
        self._window_asked = False
        self.extra_body = dict(extra_body or {})
        json_ladder = JSON_LADDER[1:] if output_mode == "text" else JSON_LADDER
        self.endpoint = EndpointState(ladder_for(output_mode), json_ladder, vision=vision)
        self._options: ClientOptions = {"base_url": base_url, "api_key": api_key or NO_API_KEY,
                                        "timeout": timeout_seconds, "max_retries": 0}
        self._async_client = openai.AsyncOpenAI(**self._options)

    @classmethod
    def from_settings(cls, settings: Settings, gate: ModelGate | None = None) -> ChatModel | None:
        """The configured model, or None in offline mode (``LLM_BASE_URL`` unset); its calls pass ``gate`` (the
        deployment's shared model gate, :func:`shared.db.model_gate.model_gate`) when there is one."""
        if settings.llm_base_url is None:
            return None
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
        return cls(settings.llm_base_url, key, settings.llm_model, settings.llm_timeout_seconds,
                   output_mode=settings.llm_output_mode, max_output_tokens=settings.llm_max_output_tokens,
                   extra_body=settings.llm_extra_body, context_tokens=settings.llm_context_tokens,
                   vision=settings.llm_vision, gate=GatedCalls(gate) if gate is not None else None,
                   system_role=settings.llm_system_role)

    @property
    def mode(self) -> str:
        """The output format turns are asked in now."""
        rung = self.endpoint.rung(self.endpoint.turn_ladder)
        return rung.label if rung else "none"

    async def aprompt_budget(self) -> int:
        """The estimated tokens (:func:`~shared.llm.context_window.estimate_chat`) a turn's prompt may take: the
        context window less the reply's room (``LLM_MAX_OUTPUT_TOKENS``) and the instruction this client may add.
        The first call asks the server how big its window is (again later while it cannot be reached)."""
        if not self._window_asked:
            try:
                reported = await probe_window(self._options["base_url"], self._options["api_key"], self.model)
            except ProbeFailed as exc:
                log.info("could not ask the LLM server for its context window (%s); asking again next turn", exc)
            else:
                self._window_asked = True
                if reported is not None and self.window.reported is None:
                    self.window.reported = reported
        return self.window.prompt_budget(self.max_output_tokens, self._instruction_tokens())

    def _instruction_tokens(self) -> int:
        """The most a turn request adds to the prompt in the output format turns are asked in now (an example
        when the first answer is blank, the schema in plain JSON mode)."""
        rung = self.endpoint.rung(self.endpoint.turn_ladder)
        schema = rung is not None and rung.mode == "json_object" and not rung.with_schema
        return max(estimate_tokens(EXAMPLE_INSTRUCTION), estimate_tokens(SCHEMA_INSTRUCTION) if schema else 0)

    def complete_turn(self, messages: list[dict[str, Any]], seconds: float | None = None) -> TurnCompletion:
        """The structured answer to one user message, within ``seconds`` (default ``LLM_TIMEOUT_SECONDS``);
        raises :class:`LLMUnavailable`."""
        return self._run(self._turn_plan(messages, seconds))

    async def acomplete_turn(self, messages: list[dict[str, Any]], image: str | None = None, *,
                             on_text: OnText | None = None) -> TurnCompletion:
        """:meth:`complete_turn` for the bots' event loop; ``image`` (a ``data:`` URL) goes with the last user
        message when the model takes images (``LLM_VISION``), else the turn is asked without it. ``on_text`` hears
        the reply as it streams (:func:`~shared.llm.live_text.shown_so_far`), each request's from its start; the
        completion decides what the reply is."""
        return await self._drive(self._turn_plan(messages, image=image), self._async_client, on_text)

    def complete_text(self, messages: list[dict[str, Any]], max_tokens: int = TEXT_MAX_TOKENS) -> str:
        """A plain text answer without reasoning, for background jobs; raises :class:`LLMUnavailable`."""
        return self._run(self._text_plan(messages, max_tokens))

    def complete_json(self, messages: list[dict[str, Any]], max_tokens: int = TEXT_MAX_TOKENS) -> dict[str, Any] | None:
        """One JSON object for background jobs (JSON mode where the server has it, one corrective retry);
        None when the model keeps answering something else. The messages must ask for JSON (some
        servers refuse JSON mode otherwise); raises :class:`LLMUnavailable`."""
        return self._run(self._json_plan(messages, max_tokens))

    def turn_request(self, messages: list[dict[str, Any]], rung: OutputFormat) -> dict[str, Any]:
        """The request a turn sends in output format ``rung``, as :meth:`complete_turn` would send it."""
        return self._turn_request(messages, rung, example=False)

    def new_client(self) -> openai.AsyncOpenAI:
        """An SDK client of this endpoint for the caller's own event loop (the caller closes it)."""
        return openai.AsyncOpenAI(**self._options)

    def close(self) -> None:
        """Nothing to close for the blocking methods: each runs on a client of its own."""

    async def aclose(self) -> None:
        await self._async_client.close()

    # -- plans -------------------------------------------------------------------------------------

    def _turn_plan(self, messages: list[dict[str, Any]], seconds: float | None = None,
                   image: str | None = None) -> _Plan[TurnCompletion]:
        deadline, tally = time.monotonic() + (seconds or self.timeout_seconds), _Tally()
        image = image if image is not None and self.endpoint.sends_images else None
        try:
            rung, answer = yield from self._turn_answer(messages, deadline, tally, example=False, image=image)
        except _ImageRefused as refusal:
            if self.endpoint.vision == "auto":
                self.endpoint.images_refused = True
                log.info("the LLM endpoint refuses image parts (%s); sending no image from now on", refusal)
            else:
                log.warning("the LLM endpoint refused an image part although LLM_VISION=on (%s)", refusal)
            image = None
            rung, answer = yield from self._turn_answer(messages, deadline, tally, example=False)
        reading = read_turn_answer(answer.text, answer.finish_reason)
        if reading.problem == "schema_echo":
            self.endpoint.example_instruction = True
        if reading.worth_asking_again and deadline - time.monotonic() > 1:
            log.info("the model's answer was %s; asking once more with an example", reading.problem)
            rung, answer = yield from self._turn_answer(messages, deadline, tally, example=True, image=image)
            reading = read_turn_answer(answer.text, answer.finish_reason)
        if image is not None and reading.output is not None:
            self.endpoint.note_description(bool(reading.output.image_description))
        if reading.problem:
            log.info("the model's turn answer was %s (finish_reason %s, %s)", reading.problem,
                     answer.finish_reason, rung.label)
        return replace(_completion(reading, rung, tally, answer.finish_reason), image_seen=image is not None)

    def _turn_answer(self, messages: list[dict[str, Any]], deadline: float, tally: _Tally,
                     example: bool, image: str | None = None) -> _Plan[tuple[OutputFormat, RawAnswer]]:
        """The answer in the best format the server accepts, walking down the ladder on refusals."""
        return (yield from self._down_the_ladder(
            self.endpoint.turn_ladder, lambda rung: self._turn_request(messages, rung, example, image), deadline,
            tally,
            "the LLM endpoint refuses every output format allowed by LLM_OUTPUT_MODE; try LLM_OUTPUT_MODE=auto"))

    def _down_the_ladder(self, ladder: tuple[OutputFormat, ...], build: Callable[[OutputFormat], dict[str, Any]],
                         deadline: float, tally: _Tally, refused_all: str) -> _Plan[tuple[OutputFormat, RawAnswer]]:
        """Ask on the highest rung not refused yet; a refusal is remembered and the next rung asked."""
        while (rung := self.endpoint.rung(ladder)) is not None:
            try:
                answer = yield from self._send(partial(build, rung), rung, deadline, tally)
            except _FormatRefused as refusal:
                self.endpoint.refuse(rung, str(refusal), ladder)
                continue
            return rung, answer
        raise LLMUnavailable(f"{refused_all} (refused: {', '.join(sorted(self.endpoint.refused))})")

    def _json_plan(self, messages: list[dict[str, Any]], max_tokens: int) -> _Plan[dict[str, Any] | None]:
        deadline, tally = time.monotonic() + self.timeout_seconds, _Tally(kind="json")
        text = yield from self._json_answer(messages, max_tokens, deadline, tally)
        try:
            return first_json_object(text)
        except InvalidTurnOutput as exc:
            problem = str(exc)
        corrected = [*messages, {"role": "assistant", "content": text[:2000] or "(empty)"},
                     {"role": "user", "content": CORRECTION.format(error=problem)}]
        try:
            return first_json_object((yield from self._json_answer(corrected, max_tokens, deadline, tally)))
        except (InvalidTurnOutput, LLMUnavailable):
            return None

    def _json_answer(self, messages: list[dict[str, Any]], max_tokens: int, deadline: float,
                     tally: _Tally) -> _Plan[str]:
        _rung, answer = yield from self._down_the_ladder(
            self.endpoint.json_ladder, lambda rung: self._request(messages, rung, max_tokens), deadline, tally,
            "the LLM endpoint refuses JSON output and plain text alike")
        return strip_reasoning(answer.text)

    def _text_plan(self, messages: list[dict[str, Any]], max_tokens: int) -> _Plan[str]:
        rung = OutputFormat("text")
        deadline = time.monotonic() + self.timeout_seconds
        answer = yield from self._send(lambda: self._request(messages, rung, max_tokens), rung, deadline,
                                       _Tally(kind="text"))
        return strip_reasoning(answer.text)

    # -- requests ----------------------------------------------------------------------------------

    def _turn_request(self, messages: list[dict[str, Any]], rung: OutputFormat, example: bool,
                      image: str | None = None) -> dict[str, Any]:
        if example or rung.mode == "text" or self.endpoint.example_instruction:
            messages = _with_instruction(messages, EXAMPLE_INSTRUCTION)
        elif rung.mode == "json_object" and not rung.with_schema:
            messages = _with_instruction(messages, SCHEMA_INSTRUCTION)
        request = self._request(messages, rung, self.max_output_tokens)
        if image is not None:
            request["messages"] = with_image(request["messages"], image)
        return request

    def _request(self, messages: list[dict[str, Any]], rung: OutputFormat, max_tokens: int) -> dict[str, Any]:
        request: dict[str, Any] = {**self.extra_body, "model": self.model,
                                   "messages": alternating(messages, self.system_role),
                                   self.endpoint.token_parameter: max_tokens}
        request.pop("response_format", None)
        fmt = response_format(rung, SCHEMA_NAME, TURN_JSON_SCHEMA, TURN_BOUNDED_SCHEMA)
        if fmt is not None:
            request["response_format"] = fmt
        request["stream"] = self.endpoint.streaming
        if self.endpoint.streaming and self.endpoint.stream_usage:
            request["stream_options"] = {"include_usage": True}
        return request

    def _send(self, build: Callable[[], dict[str, Any]], rung: OutputFormat, deadline: float,
              tally: _Tally) -> _Plan[RawAnswer]:
        """One chat request, retried on transient errors with backoff, never past ``deadline``; a
        refused optional parameter is fixed and the request sent again."""
        retry = fixes = 0
        while (remaining := deadline - time.monotonic()) > 0:
            request = build()
            tally.requests += 1
            try:
                answer: RawAnswer = yield _Call(request, remaining, tally.kind, rung.label)
            except openai.OpenAIError as exc:
                status, body = status_and_body(exc)
                if status is not None and (refusal := context_refusal(_error_object(exc), body)) is not None:
                    self.window.refused(refusal, estimate_chat(request["messages"]))
                    raise ContextOverflow(f"the prompt did not fit the model's context window ({describe(exc)}); "
                                          f"now fitting prompts to {self.window.tokens} tokens") from exc
                if image_count(request["messages"]) and refuses_image(status, body):
                    raise _ImageRefused(describe(exc)) from exc
                if status is not None and refuses_format(status, body, rung):
                    raise _FormatRefused(describe(exc)) from exc
                parameter = refused_parameter(status, body, request) if status is not None else None
                if parameter is not None and fixes < MAX_PARAMETER_FIXES:
                    log.info("the LLM endpoint refuses %s; adapting (%s)", parameter, describe(exc))
                    self.endpoint.fix(parameter)
                    fixes += 1
                    continue
                delay = retry_delay(exc, retry)
                if retry == MAX_TRANSIENT_RETRIES or time.monotonic() + delay >= deadline:
                    raise LLMUnavailable(f"the LLM did not answer ({describe(exc)}); "
                                         f"gave up after {retry + 1} attempts") from exc
                log.warning("LLM request failed (%s); retrying in %.1f s", describe(exc), delay)
                retry += 1
                yield _Sleep(delay)
            else:
                tally.usage.update(answer.usage)
                self.window.observe(answer.usage.get("prompt_tokens", 0), estimate_chat(request["messages"]))
                if answer.finish_reason is not None or not request.get("stream"):
                    return answer
                log.info("the LLM server cut a streamed answer short (another request arrived?); "
                            "sending whole requests to this endpoint from now on")
                self.endpoint.streaming = False
        raise LLMUnavailable("the LLM did not answer within LLM_TIMEOUT_SECONDS")

    # -- drivers -----------------------------------------------------------------------------------

    def _run(self, plan: _Plan[T]) -> T:
        """Drive ``plan`` from blocking code (a worker), on an event loop and client of its own."""
        async def drive() -> T:
            client = self.new_client()
            try:
                return await self._drive(plan, client)
            finally:
                await client.close()
        return asyncio.run(drive())

    async def _drive(self, plan: _Plan[T], client: openai.AsyncOpenAI, on_text: OnText | None = None) -> T:
        answer: Any = None
        failure: openai.OpenAIError | None = None
        while True:
            try:
                step = plan.throw(failure) if failure else plan.send(answer)
            except StopIteration as done:
                result: T = done.value  # what the plan returned
                return result
            answer, failure = None, None
            if isinstance(step, _Sleep):
                await asyncio.sleep(step.seconds)
                continue
            started = time.perf_counter()
            try:
                async with self._turn_on_the_server(step):
                    sent_at = time.perf_counter()
                    answer = await send_chat(client, _without_stream(step.request), step.timeout,
                                             stream=bool(step.request.get("stream")), cut_at=step.cut_at,
                                             on_piece=_live_reading(step, on_text))
                metering.note_chat(step.request, answer.usage, answer.text, time.perf_counter() - sent_at)
            except openai.OpenAIError as exc:
                failure = exc
            record.llm_request(step.kind, step.mode, request_status(failure), time.perf_counter() - started,
                               answer.usage if failure is None else None)

    def _turn_on_the_server(self, step: _Call) -> AbstractAsyncContextManager[object]:
        """A user's turn goes at once (the gate knows it is there); a background call waits for its turn."""
        if self.gate is None:
            return nullcontext()
        return self.gate.live(step.timeout) if step.kind == "turn" else self.gate.background(step.timeout)


def _live_reading(step: _Call, on_text: OnText | None) -> Callable[[str], None] | None:
    """What hears a streamed turn request's pieces and tells ``on_text`` the reply so far (None: nobody listens)."""
    if on_text is None or step.kind != "turn" or not step.request.get("stream"):
        return None
    reader, shown = ResponseReader(plain_words=step.mode == "text"), ""

    def heard(piece: str) -> None:
        nonlocal shown
        visible = shown_so_far(reader.feed(piece))
        if visible and visible != shown:
            shown = visible
            on_text(visible)

    return heard


def _error_object(exc: openai.OpenAIError) -> Mapping[str, Any]:
    """The ``error`` object of a refusal's JSON body (empty when there is none)."""
    body = getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, Mapping) else None
    return error if isinstance(error, Mapping) else {}


def _without_stream(request: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in request.items() if name != "stream"}


def alternating(messages: list[dict[str, Any]], system_role: str = "system") -> list[dict[str, Any]]:
    """System messages first (merged into one), then user and assistant turns strictly alternating,
    starting with the user: several chat templates (Gemma, Mistral) refuse anything else. With ``system_role``
    ``user`` the merged system message opens the first user message instead, as Gemma 3's own template does: some
    servers' templates drop system messages without a word (llama-cpp-python's ``gemma`` format)."""
    system = "\n\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "system")
    turns: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "system":
            continue
        if not turns and role != "user":
            continue  # a conversation opened by the assistant: its first words add nothing
        if turns and turns[-1]["role"] == role:
            turns[-1] = {"role": role, "content": f"{turns[-1]['content']}\n\n{message.get('content') or ''}"}
        else:
            turns.append({"role": role, "content": message.get("content") or ""})
    if not system:
        return turns
    if system_role != "user":
        return [{"role": "system", "content": system}, *turns]
    if turns:  # the first turn is the user's (above)
        return [{"role": "user", "content": f"{system}\n\n{turns[0]['content']}"}, *turns[1:]]
    return [{"role": "user", "content": system}]


def _with_instruction(messages: list[dict[str, Any]], instruction: str) -> list[dict[str, Any]]:
    """``messages`` with ``instruction`` after the system messages (:func:`alternating` joins them into one,
    which suits every chat template)."""
    leading = next((i for i, m in enumerate(messages) if m.get("role") != "system"), len(messages))
    return [*messages[:leading], {"role": "system", "content": instruction}, *messages[leading:]]


def _completion(reading: TurnReading, rung: OutputFormat, tally: _Tally, finish_reason: str | None) -> TurnCompletion:
    return TurnCompletion(output=reading.output, reply=reading.reply, mode=rung.label, attempts=tally.requests,
                          usage=dict(tally.usage), finish_reason=finish_reason, problem=reading.problem)
