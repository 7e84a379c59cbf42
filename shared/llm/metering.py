"""What each model and embedding request cost, collected for the work that asked for it.

A service opens a meter around its model calls (``with metered("extraction") as meter:``); every
request made inside, in this task or in the threads and event loops it starts (contextvars are
copied into them, the meter is shared), is noted on it: the tokens as the server reported them, the
cached part of the prompt (``usage.prompt_tokens_details.cached_tokens``, DeepSeek's
``prompt_cache_hit_tokens``), the latency and the model. A server that reports no usage gets an
estimate from the text, marked as one. The service then writes ``meter.calls`` in the transaction of
the work they paid for (``uow.usage.record``). A request made with no meter open is not noted.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from shared.attachments.vision import IMAGE_TOKENS, content_text, image_count
from shared.text import estimate_tokens

USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")
CACHED = "cached_tokens"


@dataclass(frozen=True)
class CallUsage:
    """One request: what it was for, the model, its tokens and how long it took."""

    kind: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0
    estimated: bool = False
    latency_ms: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class UsageMeter:
    """The requests made while it was open."""

    kind: str
    calls: list[CallUsage] = field(default_factory=list)


_open: contextvars.ContextVar[UsageMeter | None] = contextvars.ContextVar("mnemo_usage_meter", default=None)


@contextmanager
def metered(kind: str) -> Iterator[UsageMeter]:
    """Note every request made inside the block (of ``kind``) on the meter it yields."""
    meter = UsageMeter(kind)
    token = _open.set(meter)
    try:
        yield meter
    finally:
        _open.reset(token)


def reported_usage(usage: Any) -> dict[str, int]:
    """The counts a server's ``usage`` object (or dict) reports, ``cached_tokens`` included when it says;
    empty when it reports none."""
    if usage is None:
        return {}
    counts = {name: int(_field(usage, name) or 0) for name in USAGE_FIELDS}
    details = _field(usage, "prompt_tokens_details")
    cached = _field(details, CACHED) if details is not None else None
    if cached is None:
        cached = _field(usage, "prompt_cache_hit_tokens")  # DeepSeek
    if cached is not None:
        counts[CACHED] = int(cached or 0)
    return counts


def note_chat(request: Mapping[str, Any], usage: Mapping[str, int], answer_text: str, seconds: float) -> None:
    """A chat request answered (``usage`` as :func:`reported_usage` read it), on the open meter if any."""
    meter = _open.get()
    if meter is None:
        return
    messages = request.get("messages") or ()
    prompt = " ".join(content_text(message.get("content")) for message in messages)
    meter.calls.append(_call(meter.kind, str(request.get("model") or ""), usage, prompt, answer_text, seconds,
                             image_tokens=IMAGE_TOKENS * image_count(messages)))


def note_embedding(model: str, usage: Any, texts: Sequence[str], seconds: float) -> None:
    """An embedding request answered, on the open meter if any."""
    meter = _open.get()
    if meter is not None:
        meter.calls.append(_call(meter.kind, model, reported_usage(usage), " ".join(texts), "", seconds))


def _call(kind: str, model: str, usage: Mapping[str, int], prompt: str, answer: str, seconds: float, *,
          image_tokens: int = 0) -> CallUsage:
    """One call's usage: the server's counts (an image is in its prompt tokens), else estimated (an image counted as
    ``image_tokens``)."""
    latency = max(0, round(seconds * 1000))
    if not usage or not any(usage.get(name) for name in USAGE_FIELDS):
        return CallUsage(kind, model, max(1, estimate_tokens(prompt)) + image_tokens,
                         estimate_tokens(answer) if answer else 0,
                         estimated=True, latency_ms=latency)
    prompt_tokens = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    if not completion and usage.get("total_tokens"):
        completion = max(0, int(usage["total_tokens"]) - prompt_tokens)
    cached = min(int(usage.get(CACHED) or 0), prompt_tokens)
    return CallUsage(kind, model, prompt_tokens, completion, cached, latency_ms=latency)


def _field(source: Any, name: str) -> Any:
    """``source.name`` of an SDK object (extra fields included), or ``source[name]`` of a dict."""
    if isinstance(source, Mapping):
        return source.get(name)
    value = getattr(source, name, None)
    if value is None:
        extra = getattr(source, "model_extra", None) or {}
        value = extra.get(name)
    return value


AUDIO_TOKENS_PER_SECOND = 10
"""What a second of audio is counted as where the transcriber reports no tokens (OpenAI's audio models take about one
token per 100 ms of input; whisper-1 reports only the duration)."""


def note_transcription(model: str, usage: Any, transcript: str, audio_seconds: float, seconds: float) -> None:
    """A transcription answered, on the open meter if any: its tokens as the server reports them (``input_tokens``,
    ``output_tokens``), else the audio counted by its duration."""
    meter = _open.get()
    if meter is None:
        return
    latency = max(0, round(seconds * 1000))
    heard, written = _field(usage, "input_tokens"), _field(usage, "output_tokens")
    if heard:
        meter.calls.append(CallUsage(meter.kind, model, int(heard), int(written or 0), latency_ms=latency))
        return
    duration = _field(usage, "seconds") or audio_seconds
    meter.calls.append(CallUsage(meter.kind, model, max(1, round(float(duration) * AUDIO_TOKENS_PER_SECOND)),
                                 estimate_tokens(transcript), estimated=True, latency_ms=latency))
