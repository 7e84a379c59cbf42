"""How many tokens the model's context window holds, as the server says it, and how a prompt's size is told.

Servers say it in different places, when they say it at all: llama.cpp's ``GET /props`` (the window of one
slot, ``n_ctx``), some model lists (vLLM's ``max_model_len``, others' ``context_length``; llama.cpp's own
``meta.n_ctx_train`` is the size the model was trained for, not the server's window, and is not read), and
every refusal of a prompt that is too long (OpenAI, vLLM, llama-cpp-python: "maximum context length is 2048
tokens … (2100 in the messages …)"; llama.cpp: ``exceed_context_size_error`` with ``n_ctx`` and
``n_prompt_tokens``). OpenAI's own API says it only in that refusal. Pure: parsing only, no HTTP.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shared.attachments.vision import IMAGE_TOKENS, content_text, image_count
from shared.text import estimate_tokens

DEFAULT_WINDOW = 8192
"""``LLM_CONTEXT_TOKENS``' default: llama.cpp's usual ``--ctx-size`` for small local models."""
PROMPT_HEADROOM = 0.9
"""The share of the prompt's room the estimate may fill: text unlike what calibrated it (figures, code) counts
more tokens than estimated."""
MAX_REPLY_SHARE = 0.25
"""The reply's room takes at most this share of a window (llama.cpp shortens a reply to the room left, so a small
window holds the prompt first)."""
MIN_RATIO, MAX_RATIO = 0.5, 4.0
"""A server's tokens per estimated token are believed within these bounds."""
MIN_WINDOW = 256
"""A smaller figure is not believed to be a context window."""
MAX_WINDOW = 10_000_000
TEMPLATE_TOKENS_PER_MESSAGE = 8
"""What a chat template adds around each message (role markers, turn ends), at most, in tokens."""
WINDOW_KEYS = ("n_ctx", "max_model_len", "context_length", "context_window", "max_context_length")

_WINDOW_WORDS = re.compile(r"maximum context length is (\d+)|context size \((\d+) tokens\)|"
                           r"context window of (\d+)|context length of (\d+)", re.IGNORECASE)
_PROMPT_WORDS = re.compile(r"\((\d+) in the messages|messages resulted in (\d+) tokens|request \((\d+) tokens\)|"
                           r"has (\d+) input tokens|requested tokens \((\d+)\)", re.IGNORECASE)


@dataclass(frozen=True)
class ContextRefusal:
    """A server's refusal of a prompt too long for its window: the window, and the prompt's size in the
    server's own tokens (when it says)."""

    window: int
    prompt_tokens: int | None = None


@dataclass
class ContextWindow:
    """What a process knows of one endpoint's window: ``LLM_CONTEXT_TOKENS``, what the server reported, and how
    many of the server's tokens one estimated token turned out to be (the largest seen)."""

    configured: int = DEFAULT_WINDOW
    reported: int | None = None
    ratio: float | None = None

    @property
    def tokens(self) -> int:
        """The window a prompt and its reply must fit in: the setting, or the server's when it is smaller."""
        return self.configured if self.reported is None else min(self.configured, self.reported)

    def prompt_budget(self, max_output_tokens: int, instruction_tokens: int = 0) -> int:
        """The estimated tokens (:func:`estimate_chat`) a prompt may take: the window less the reply's room (at
        most ``MAX_REPLY_SHARE`` of it), in estimated tokens, with headroom, less an instruction the client may
        add to it."""
        reply = min(max_output_tokens, int(self.tokens * MAX_REPLY_SHARE))
        ratio = self.ratio or 1.0
        return max(int((self.tokens - reply) * PROMPT_HEADROOM / ratio) - instruction_tokens, 0)

    def observe(self, prompt_tokens: int, estimated: int) -> None:
        """A prompt of ``estimated`` tokens (:func:`estimate_chat`) was ``prompt_tokens`` of the server's."""
        if prompt_tokens > 0 and estimated > 0:
            seen = min(max(prompt_tokens / estimated, MIN_RATIO), MAX_RATIO)
            self.ratio = seen if self.ratio is None else max(self.ratio, seen)

    def refused(self, refusal: ContextRefusal, estimated: int) -> None:
        """The server refused a prompt of ``estimated`` tokens as too long for its window."""
        self.reported = refusal.window
        if refusal.prompt_tokens is not None:
            self.observe(refusal.prompt_tokens, estimated)


def window_from_props(data: Any) -> int | None:
    """The window llama.cpp's ``GET /props`` reports (one slot's ``n_ctx``), or None."""
    if not isinstance(data, Mapping):
        return None
    settings = data.get("default_generation_settings")
    found = _figure(settings.get("n_ctx")) if isinstance(settings, Mapping) else None
    return found if found is not None else _figure(data.get("n_ctx"))


def window_from_models(data: Any, model: str) -> int | None:
    """The window a ``GET /models`` answer reports for ``model`` (or for its only model), or None."""
    entries = data.get("data") if isinstance(data, Mapping) else None
    if not isinstance(entries, list):
        return None
    entries = [entry for entry in entries if isinstance(entry, Mapping)]
    chosen = [entry for entry in entries if entry.get("id") == model] or (entries if len(entries) == 1 else [])
    for entry in chosen:
        for place in (entry, entry.get("meta")):
            if isinstance(place, Mapping):
                for key in WINDOW_KEYS:
                    if (found := _figure(place.get(key))) is not None:
                        return found
    return None


def context_refusal(body: Any, message: str) -> ContextRefusal | None:
    """The window and prompt size a refusal names (``body``: its JSON error object, ``message``: its words),
    or None when it is not about the context window."""
    fields = body if isinstance(body, Mapping) else {}
    window = _figure(fields.get("n_ctx"))
    if window is None and (match := _WINDOW_WORDS.search(message)) is not None:
        window = _figure(next(group for group in match.groups() if group))
    if window is None:
        return None
    prompt = fields.get("n_prompt_tokens")
    if not isinstance(prompt, int) and (match := _PROMPT_WORDS.search(message)) is not None:
        prompt = int(next(group for group in match.groups() if group))
    return ContextRefusal(window, prompt if isinstance(prompt, int) and prompt > 0 else None)


def estimate_chat(messages: list[dict[str, Any]]) -> int:
    """The estimated tokens of chat ``messages`` as a template lays them out (:func:`shared.text.estimate_tokens`
    of each, and the template's marks)."""
    return sum(estimate_tokens(content_text(message.get("content"))) + TEMPLATE_TOKENS_PER_MESSAGE
               for message in messages) + IMAGE_TOKENS * image_count(messages)


def _figure(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    try:
        number = int(value)
    except ValueError:
        return None
    return number if MIN_WINDOW <= number <= MAX_WINDOW else None
