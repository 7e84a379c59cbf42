"""How real OpenAI-compatible servers and models differ, reproduced for the fake OpenAI server.

Each :class:`Personality` is a documented behaviour, not a wish: which ``response_format`` types a
server refuses and with what status and words, whether JSON mode needs the word "json" in the
prompt, how reasoning comes back, and what a small or chatty model does to the JSON. The fake
first computes the ideal answer (queue or responder), then lets the personality shape it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

REASONING = "The user wrote to me. I should think about it and then answer with the JSON object."
RAMBLE = " And there is one more thing I wanted to add about that,"


@dataclass(frozen=True)
class Refusal:
    status: int
    message: str
    param: str | None = "response_format"


@dataclass(frozen=True)
class Personality:
    name: str
    json_schema: Refusal | None = None  # None: accepted
    json_object_with_schema: Refusal | None = None
    json_object: Refusal | None = None
    needs_json_word: bool = False
    thinking: str | None = None  # "tags", "reasoning_content" or "reasoning" (vLLM's newer name)
    thinking_refuses_json_mode: bool = False  # Qwen on DashScope while enable_thinking is on
    wrap: str | None = None  # "prose" or "fence"
    echo_schema: bool = False  # answers a schema *definition* in the prompt by writing it back
    blank_first: bool = False  # the first answer has empty content
    empty_object: bool = False  # answers "{}"
    ramble: bool = False  # never closes the reply string; only max_tokens stops it
    interrupts_streams: bool = False  # a new request cuts a running stream short (no finish reason)
    stops_after: int | None = None
    """The model ends its answer (end of sequence, ``finish_reason: "stop"``) after this many characters, wherever
    that falls: mid-JSON, often inside the reply (a small model's early stop, a server that fails mid-answer)."""
    window_report: str | None = None
    """Where the server says how big its context window is (when the fake has one): "props" (llama.cpp's
    ``GET /props``), "models" (vLLM's ``max_model_len`` in ``GET /v1/models``) or None (only in a refusal)."""
    window_refusal: str = "openai"
    """How a prompt too long for the window is refused: "openai" (400, "…your messages resulted in N tokens…"),
    "requested" (vLLM, llama-cpp-python: 400, "…you requested N tokens (P in the messages, C in the completion)…")
    or "llama.cpp" (400, ``exceed_context_size_error`` with ``n_ctx`` and ``n_prompt_tokens``)."""
    window_silent_stream: bool = False
    """A streamed request too long for the window is answered 200 with an empty body, no error at all
    (llama-cpp-python 0.3: the error is raised inside the stream and lost); a whole request gets the refusal."""
    window_counts_reply: bool = True
    """The reply's ``max_tokens`` must fit the window beside the prompt (OpenAI, vLLM); llama.cpp and
    llama-cpp-python refuse only a prompt that fills it, and shorten the reply to what is left."""
    images: str = "seen"
    """What the server does with an image part: "seen" (a vision model), "dropped" (Ollama with a text-only model:
    taken, left out of the prompt, answered without it), "message dropped" (llama-cpp-python 0.3 without a
    multimodal chat handler: ``_map_roles`` turns a content list into no content at all, so the caption goes too)
    or "refused" (:meth:`image_refusal`, the server's words)."""
    image_error: str = "openai"
    """How an image part is refused: "openai" (400, "Invalid content type…"), "llama.cpp" (500, "image input is not
    supported - hint: … mmproj") or "vllm" (400, "<model> is not a multimodal model")."""
    usage: str = "plain"
    """How the server reports usage: "openai" (``prompt_tokens_details.cached_tokens`` from its prompt cache),
    "deepseek" (``prompt_cache_hit_tokens`` / ``prompt_cache_miss_tokens``), "plain" (the three counts) or
    "none" (no usage at all, not even when a stream asks for it)."""

    def usage_body(self, prompt_tokens: int, completion_tokens: int, cached_tokens: int) -> dict[str, Any] | None:
        """The ``usage`` object this server sends (None: it sends none)."""
        if self.usage == "none":
            return None
        counts: dict[str, Any] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                                  "total_tokens": prompt_tokens + completion_tokens}
        if self.usage == "openai":
            counts["prompt_tokens_details"] = {"cached_tokens": cached_tokens, "audio_tokens": 0}
            counts["completion_tokens_details"] = {"reasoning_tokens": 0, "audio_tokens": 0,
                                                   "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
        elif self.usage == "deepseek":
            counts["prompt_cache_hit_tokens"] = cached_tokens
            counts["prompt_cache_miss_tokens"] = prompt_tokens - cached_tokens
        return counts

    def window_error(self, window: int, prompt_tokens: int, max_tokens: int) -> tuple[int, dict[str, Any]] | None:
        """The status and body with which this server refuses a prompt of ``prompt_tokens`` (asking for up to
        ``max_tokens`` more) in a ``window``-token context (None: it fits)."""
        if (prompt_tokens + max_tokens <= window) if self.window_counts_reply else (prompt_tokens < window):
            return None
        if self.window_refusal == "llama.cpp":
            return 400, {"error": {"code": 400, "message": f"request ({prompt_tokens} tokens) exceeds the available "
                                   f"context size ({window} tokens), try increasing it",
                                   "type": "exceed_context_size_error", "n_prompt_tokens": prompt_tokens,
                                   "n_ctx": window}}
        if self.window_refusal == "requested":
            message = (f"This model's maximum context length is {window} tokens. However, you requested "
                       f"{prompt_tokens + max_tokens} tokens ({prompt_tokens} in the messages, {max_tokens} in the "
                       "completion). Please reduce the length of the messages or completion.")
        else:
            message = (f"This model's maximum context length is {window} tokens. However, your messages resulted in "
                       f"{prompt_tokens + max_tokens} tokens. Please reduce the length of the messages.")
        return 400, {"error": {"message": message, "type": "invalid_request_error", "param": "messages",
                               "code": "context_length_exceeded"}}

    def image_refusal(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        """The status and body with which this server refuses ``body``'s image part (None: it takes it)."""
        if self.images != "refused" or not has_images(body):
            return None
        if self.image_error == "llama.cpp":  # tools/server/utils.hpp, no multimodal projector loaded (--mmproj)
            return 500, {"error": {"code": 500, "message": "image input is not supported - hint: if this is "
                                   "unexpected, you may need to provide the mmproj", "type": "server_error"}}
        if self.image_error == "vllm":  # vLLM's ErrorResponse for a text-only model, at the top level
            return 400, {"object": "error", "message": f"{body.get('model')} is not a multimodal model None",
                         "type": "BadRequestError", "param": None, "code": 400}
        messages = body.get("messages") or ()
        message_index = next((i for i, m in enumerate(messages) if isinstance(m.get("content"), list)), 0)
        return 400, {"error": {"message": "Invalid content type. image_url is only supported by certain models.",
                               "type": "invalid_request_error",
                               "param": f"messages.[{message_index}].content.[1].type", "code": None}}

    def refusal(self, body: dict[str, Any], prompt: str) -> Refusal | None:
        """Why this server refuses ``body`` (None: it accepts it)."""
        fmt = _response_format(body)
        kind = fmt.get("type")
        if kind in ("json_schema", "json_object") and self.thinking_refuses_json_mode \
                and body.get("enable_thinking", True) is not False:
            return Refusal(400, "Json mode response is not supported when enable_thinking is true", None)
        if kind == "json_schema":
            return self.json_schema
        if kind == "json_object" and "schema" in fmt and self.json_object_with_schema is not None:
            return self.json_object_with_schema
        if kind == "json_object":
            if self.json_object is not None:
                return self.json_object
            if self.needs_json_word and "json" not in prompt.lower():
                return Refusal(400, "Prompt must contain the word 'json' in some form to use 'response_format' "
                                    "of type 'json_object'.", "messages")
        return None

    def shape(self, body: dict[str, Any], prompt: str, content: str, request_number: int) -> tuple[str, str | None]:
        """(content, reasoning) as this model would write them for the ideal ``content``."""
        fmt = _response_format(body)
        if self.blank_first and request_number == 1:
            return "", None
        if self.empty_object:
            return "{}", None
        if self.echo_schema and fmt.get("type") == "json_object" and '"properties"' in prompt:
            content = _first_schema(prompt) or content
        if self.ramble:
            content = _unclosed(content) + RAMBLE * 2000
        if self.wrap == "prose":
            content = f"Sure! Here is my answer:\n{content}\nI hope this helps."
        elif self.wrap == "fence":
            content = f"```json\n{content}\n```"
        if self.stops_after is not None:
            content = content[: self.stops_after]
        if self.thinking == "tags":
            return f"<think>{REASONING}</think>\n{content}", None
        return content, REASONING if self.thinking else None


def has_images(body: dict[str, Any]) -> bool:
    """Whether a chat request carries an image part."""
    return any(isinstance(part, dict) and part.get("type") == "image_url"
               for message in body.get("messages") or () if isinstance(message, dict)
               and isinstance(message.get("content"), list) for part in message["content"])


def without_images(body: dict[str, Any], *, whole_message: bool = False) -> dict[str, Any]:
    """``body`` as a server that drops image parts passes it on: each content list down to its text (with
    ``whole_message``, to nothing, as llama-cpp-python's fallback chat formats do)."""
    messages = [{**m, "content": "" if whole_message else "\n".join(
                    str(p.get("text") or "") for p in m["content"] if isinstance(p, dict) and p.get("type") == "text")}
                if isinstance(m, dict) and isinstance(m.get("content"), list) else m
                for m in body.get("messages") or ()]
    return {**body, "messages": messages}


def _response_format(body: dict[str, Any]) -> dict[str, Any]:
    """The request's ``response_format`` object ({} when absent or not an object)."""
    fmt = body.get("response_format")
    return fmt if isinstance(fmt, dict) else {}


def _first_schema(prompt: str) -> str | None:
    start = prompt.find('{"type":"object","properties"')
    if start < 0:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(prompt, start)
    except ValueError:
        return None
    return json.dumps(value)


def _unclosed(content: str) -> str:
    """The answer cut open inside its ``response`` string, so only the token cap ends it."""
    marker = content.find('"response"')
    if marker < 0:
        return content
    quote = content.find('"', content.find(":", marker) + 1)
    end = content.find('"', quote + 1)
    while end > 0 and content[end - 1] == "\\":
        end = content.find('"', end + 1)
    return content[:end] if end > 0 else content


_LLAMA_CPP_SCHEMA_500 = Refusal(
    500, 'response_format type must be one of "text" or "json_object", but got: json_schema', None)
_LLAMA_CPP_PYTHON_500 = Refusal(
    500, "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n  Input should be 'text' or "
         "'json_object' [type=literal_error, input_value='json_schema', input_type=str]")

PERSONALITIES: dict[str, Personality] = {p.name: p for p in (
    Personality("openai", usage="openai"),
    Personality("deepseek", json_schema=Refusal(400, "This response_format type is unavailable now"),
                needs_json_word=True, blank_first=True, usage="deepseek"),
    Personality("deepseek-cache", usage="deepseek"),  # DeepSeek's usage fields on a plain JSON answer
    Personality("no-usage", usage="none"),  # a proxy or an old server that never reports usage
    Personality("qwen-thinking", thinking="reasoning_content", thinking_refuses_json_mode=True,
                needs_json_word=True, wrap="fence"),
    Personality("qwen", needs_json_word=True,
                json_schema=Refusal(400, "<400> InternalError.Algo.InvalidParameter: 'response_format.type' "
                                         "json_schema is not supported")),
    Personality("llama.cpp", json_schema=_LLAMA_CPP_SCHEMA_500, window_report="props", window_refusal="llama.cpp",
                window_counts_reply=False),
    Personality("llama-cpp-python", json_schema=_LLAMA_CPP_PYTHON_500, interrupts_streams=True,
                window_refusal="requested", window_counts_reply=False, window_silent_stream=True),
    Personality("ollama", json_schema=Refusal(400, "invalid response_format: json_schema"),
                json_object_with_schema=Refusal(400, "invalid response_format: unknown field \"schema\""),
                echo_schema=True),
    Personality("vllm", thinking="reasoning", window_report="models", window_refusal="requested"),
    Personality("reasoning-tags", thinking="tags"),
    Personality("rambler", ramble=True),
    Personality("prose", wrap="prose"),
    Personality("fenced", wrap="fence"),
    Personality("empty-object", empty_object=True),
    Personality("stops-mid-json", stops_after=24),  # '{"response": "' and the reply's first ten characters
)}
_TEXT_ONLY = {"openai": ("openai", "refused"), "llama.cpp": ("llama.cpp", "refused"), "vllm": ("vllm", "refused"),
              "ollama": ("openai", "dropped"), "llama-cpp-python": ("openai", "message dropped")}
PERSONALITIES.update({f"{name}-text-only": replace(PERSONALITIES[name], name=f"{name}-text-only", images=images,
                                                    image_error=error)
                      for name, (error, images) in _TEXT_ONLY.items()})
"""The same servers with a text-only model (no projector for llama.cpp): what each answers to an image part."""
