"""One chat request on the wire: streamed, within a total deadline, and closed when nobody waits.

Requests are streamed (``stream: true``), because that is what lets a server notice that the
client went away: llama-cpp-python, vLLM and llama.cpp stop generating when the stream's
connection closes. A server that cuts a stream short when another request arrives
(llama-cpp-python's default ``interrupt_requests``) is sent whole requests instead, which it
queues. The whole request — headers, every chunk — must finish within its time; when it does not,
or when the answer grows past :data:`MAX_ANSWER_CHARS`, or writes one of the caller's ``cut_at`` marks
(the model has begun to copy the prompt back), the stream is closed there and then. Only
``content`` is kept: ``reasoning_content`` (DeepSeek-R1, Qwen3) and ``reasoning`` (vLLM) are never
read. A caller's ``on_piece`` hears each piece of content as it arrives (a live reply, :mod:`shared.llm.live_text`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from shared.llm.metering import reported_usage
from shared.llm.sdk import deadline_passed, openai

MAX_ANSWER_CHARS = 64_000
CUT_AT_MARK = "cut_at_mark"
"""The finish reason of a stream closed because the answer wrote one of ``cut_at``'s marks."""


@dataclass(frozen=True)
class RawAnswer:
    """What the server streamed: the content, why it stopped, and the token counts it reported
    (:func:`shared.llm.metering.reported_usage`; empty when it reported none)."""

    text: str
    finish_reason: str | None
    usage: dict[str, int] = field(default_factory=dict)


async def send_chat(client: openai.AsyncOpenAI, request: dict[str, Any], seconds: float, *,
                    stream: bool = True, cut_at: tuple[str, ...] = (),
                    on_piece: Callable[[str], None] | None = None) -> RawAnswer:
    """Send ``request`` and collect the answer (streamed, or whole when ``stream`` is False), all within
    ``seconds``. A streamed answer that ends without a finish reason was interrupted by the server
    (``finish_reason`` None); one that wrote a mark of ``cut_at`` (lower case; any case matches) is
    closed there, with :data:`CUT_AT_MARK`. ``on_piece`` is called with each piece of a streamed answer's content.

    Raises ``openai`` errors as the SDK does, and :class:`openai.APITimeoutError` when the deadline
    passes; in every case the connection is closed before this returns."""
    collect = _collect(client, request, seconds, cut_at, on_piece) if stream else _whole(client, request, seconds)
    try:
        return await asyncio.wait_for(collect, timeout=seconds)
    except TimeoutError:
        raise deadline_passed(client, "chat/completions") from None


async def _whole(client: openai.AsyncOpenAI, request: dict[str, Any], seconds: float) -> RawAnswer:
    """One answer in one piece (for servers that interrupt streams); a timeout still closes the connection,
    and the token cap bounds what the server goes on generating."""
    response = await client.chat.completions.create(**sdk_arguments(request), timeout=seconds)
    usage = reported_usage(response.usage)
    if not response.choices:
        return RawAnswer("", None, usage)
    choice = response.choices[0]
    return RawAnswer(choice.message.content or "", choice.finish_reason or "stop", usage)


async def _collect(client: openai.AsyncOpenAI, request: dict[str, Any], seconds: float,
                   cut_at: tuple[str, ...], on_piece: Callable[[str], None] | None) -> RawAnswer:
    """The streamed answer, read as JSON from the server-sent events. The SDK's own stream builds a typed model of
    every chunk and walks the request's messages against its types: 13 ms of CPU a call (a reply of 60 chunks),
    against 6 ms read as plain JSON, on the bots' one call a message. The SDK still sends the request: its
    headers, retries and status errors are the same as for ``chat.completions.create``."""
    import httpx  # with the SDK, on first use

    response = await client.post("/chat/completions", cast_to=httpx.Response, body={**request, "stream": True},
                                 options={"timeout": seconds}, stream=True)
    parts: list[str] = []
    size, finish, usage = 0, None, {}
    recent, keep = "", max(map(len, cut_at), default=0)
    try:
        async for chunk in _sse_chunks(response):
            if chunk.get("usage") is not None:
                usage = reported_usage(chunk["usage"])
            choices = chunk.get("choices")
            if not choices or not isinstance(choices[0], dict):
                continue
            choice = choices[0]
            delta = choice.get("delta")
            piece = delta.get("content") if isinstance(delta, dict) else None
            if piece and isinstance(piece, str):
                if on_piece is not None:
                    on_piece(piece)
                parts.append(piece)
                size += len(piece)
                recent = (recent + piece.lower())[-(keep + len(piece)):] if keep else ""
                if any(mark in recent for mark in cut_at):
                    finish = CUT_AT_MARK
                    break
            finish = choice.get("finish_reason") or finish
            if size > MAX_ANSWER_CHARS:
                finish = "length"
                break
    finally:
        await response.aclose()  # also on timeout and cancellation: the server can stop generating
    return RawAnswer("".join(parts), finish, usage)


async def _sse_chunks(response: Any) -> AsyncIterator[dict[str, Any]]:
    """The JSON objects of a chat stream's server-sent events, until ``[DONE]``. An event naming an error (an
    ``error`` event, or data holding ``error``) raises :class:`openai.APIError`, as the SDK's stream does."""
    event: str | None = None
    data: list[str] = []
    async for line in response.aiter_lines():
        if line:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "data":
                data.append(value)
            elif field == "event":
                event = value
            continue
        if data and (chunk := _event_chunk(response, event, "\n".join(data))) is not None:
            if chunk is _DONE:
                return
            yield chunk
        event, data = None, []
    if data and (chunk := _event_chunk(response, event, "\n".join(data))) is not None and chunk is not _DONE:
        yield chunk  # the last event, with no blank line after it


_DONE: dict[str, Any] = {}
"""What :func:`_event_chunk` returns for ``[DONE]``: the end of the stream."""


def _event_chunk(response: Any, event: str | None, text: str) -> dict[str, Any] | None:
    """One event's chunk (None: an event of another kind), :data:`_DONE` at the end; an error raises."""
    if text.startswith("[DONE]"):
        return _DONE
    chunk = json.loads(text)
    if not isinstance(chunk, dict):
        return None
    if chunk.get("error") and event in (None, "error"):
        error = chunk["error"]
        message = error.get("message") if isinstance(error, dict) else None
        raise openai.APIError(message if isinstance(message, str) and message else "An error occurred during streaming",
                              response.request, body=error)
    return chunk if event is None else None


def sdk_arguments(request: dict[str, Any]) -> dict[str, Any]:
    """The request as SDK arguments: everything but model, messages and the token cap travels in
    ``extra_body`` untouched (the SDK would otherwise walk the turn's schema for milliseconds, and it
    does not know the servers' own fields such as ``enable_thinking`` or ``cache_prompt``)."""
    typed = ("model", "messages", "max_tokens", "max_completion_tokens")
    arguments = {name: request[name] for name in typed if name in request}
    extra = {name: value for name, value in request.items() if name not in typed}
    if extra:
        arguments["extra_body"] = extra
    return arguments
