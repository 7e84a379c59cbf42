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
from collections.abc import Callable
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
    stream = await client.chat.completions.create(**sdk_arguments(request), stream=True, timeout=seconds)
    parts: list[str] = []
    size, finish, usage = 0, None, {}
    recent, keep = "", max(map(len, cut_at), default=0)
    try:
        async for chunk in stream:
            if chunk.usage is not None:
                usage = reported_usage(chunk.usage)
            if not chunk.choices:
                continue
            choice = chunk.choices[0]
            piece = choice.delta.content if choice.delta is not None else None
            if piece:
                if on_piece is not None:
                    on_piece(piece)
                parts.append(piece)
                size += len(piece)
                recent = (recent + piece.lower())[-(keep + len(piece)):] if keep else ""
                if any(mark in recent for mark in cut_at):
                    finish = CUT_AT_MARK
                    break
            finish = choice.finish_reason or finish
            if size > MAX_ANSWER_CHARS:
                finish = "length"
                break
    finally:
        await stream.close()  # also on timeout and cancellation: the server can stop generating
    return RawAnswer("".join(parts), finish, usage)


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
