"""A fake OpenAI-compatible HTTP server for the benchmarks and the tests.

It speaks the real HTTP API (``GET /v1/models``, ``POST /v1/chat/completions``,
``POST /v1/embeddings``, and llama.cpp's ``GET /props`` where the personality has it), so the real ``openai``
SDK pointed at ``base_url`` is exercised end to end. With a ``context_window``, a prompt too long for it is
refused the way the personality's server refuses it. Standard library only; it binds 127.0.0.1 on an
ephemeral port and serves from a daemon thread::

    with FakeOpenAI() as llm:
        llm.queue_reply({"response": "hi"})
        client = openai.OpenAI(base_url=llm.base_url, api_key="x", max_retries=0)
        client.chat.completions.create(model="fake-chat", messages=[...])

Chat replies come from a script: queued replies/errors first (in order), then
the responder; a :class:`~bench.fakes.llm_personalities.Personality` then shapes
them the way a real server and model would (refusals, reasoning, fences, cuts).
``max_tokens`` is honoured (``finish_reason: "length"``), and ``stream: true``
answers as server-sent events, chunk by chunk, noticing a client that leaves
(:attr:`FakeOpenAI.abandoned_streams`). A reply queued with ``trickle`` sends its whole response,
status line and headers included, one byte at a time (:attr:`FakeOpenAI.trickled_bytes`,
:attr:`FakeOpenAI.abandoned_trickles`): the peer that keeps every per-read timeout happy
(``embedding_trickle`` does the same to every embeddings answer). Connections are HTTP/1.0 (one
request each) unless ``keep_alive`` (:mod:`bench.fakes.loopback`); nothing lingers once ``stop()`` returns.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import math
import re
import select
import socket
import struct
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler
from typing import Any

from bench.fakes.llm_personalities import PERSONALITIES, Personality, has_images, without_images
from bench.fakes.loopback import LoopbackFake, LoopbackServer

Content = str | dict[str, Any]
Responder = Callable[[dict[str, Any]], Content]

_log = logging.getLogger(__name__)
STREAM_PIECE_CHARS = 16
STOP_CHECK_SECONDS = 0.05
"""How often a trickle between two bytes looks whether the fake is stopping."""
CHARS_PER_TOKEN = 4
PROMPT_CACHE_ENTRIES = 64
PROMPT_CACHE_BLOCK_TOKENS = 16
"""The fake's prompt cache serves prefixes in blocks of this many tokens (OpenAI's: 128, from 1,024 on)."""
_WORD = re.compile(r"\w+")
IMAGE_TOKENS = 765
"""What a seeing server counts an image part as in ``prompt_tokens`` (OpenAI: a 1024-pixel image in high detail)."""
_ERROR_KINDS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Bad request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    404: ("invalid_request_error", "unknown_url", "Unknown request URL."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached. Please try again later."),
    500: ("server_error", None, "The server had an error while processing your request."),
}


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received: header names are lower-cased; ``json`` is None if absent/invalid."""

    method: str
    path: str
    headers: dict[str, str]
    json: Any


@dataclass(frozen=True)
class ServedChat:
    """A chat request on a server with :attr:`FakeOpenAI.slots`: when it arrived, got a slot, and was answered
    (``time.monotonic()``)."""

    body: Any
    arrived: float
    started: float
    finished: float


class _Slots:
    """A server's parallel slots, taken in the order requests arrived (llama.cpp's queue)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._busy = 0
        self._queue: deque[object] = deque()
        self._changed = threading.Condition()

    def take(self, stopping: threading.Event) -> None:
        ticket = object()
        with self._changed:
            self._queue.append(ticket)
            while not (self._queue[0] is ticket and self._busy < self.count) and not stopping.is_set():
                self._changed.wait(0.1)
            self._queue.remove(ticket)
            self._busy += 1
            self._changed.notify_all()

    def give_back(self) -> None:
        with self._changed:
            self._busy -= 1
            self._changed.notify_all()


@dataclass(frozen=True)
class _Reply:
    content: Content
    delay: float = 0.0
    trickle: float = 0.0


@dataclass(frozen=True)
class _Failure:
    status: int
    body: dict[str, Any]
    retry_after: float | None = None
    delay: float = 0.0


@dataclass(frozen=True)
class _Response:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    events: Iterable[dict[str, Any]] | None = None  # a stream of server-sent events instead of ``body``
    event_delay: float = 0.0
    interrupted: threading.Event | None = None  # set: the stream ends at once, "[DONE]" without a finish
    trickle: float = 0.0  # seconds between single bytes of the whole response, status line included
    done: bool = True  # a stream ends with "data: [DONE]" (False: the body just ends)


def error_body(status: int, message: str | None = None, *, param: str | None = None) -> dict[str, Any]:
    """An OpenAI-style ``{"error": {...}}`` body for ``status``."""
    kind, code, default = _ERROR_KINDS.get(status, ("api_error", None, f"HTTP {status}."))
    return {"error": {"message": message or default, "type": kind, "param": param, "code": code}}


def _fail(status: int, message: str, *, param: str | None = None) -> _Response:
    return _Response(status, error_body(status, message, param=param))


def default_responder(_request: dict[str, Any]) -> Content:
    """The reply used when nothing is queued: a fixed, valid JSON string."""
    return '{"response": "ok"}'


def image_parts(body: dict[str, Any]) -> int:
    """How many image parts a chat request carries."""
    return sum(1 for message in body.get("messages") or () if isinstance(message, dict)
               and isinstance(message.get("content"), list) for part in message["content"]
               if isinstance(part, dict) and part.get("type") == "image_url") if has_images(body) else 0


def estimate_tokens(text: str) -> int:
    """A rough token count (about four characters a token)."""
    return math.ceil(len(text) / 4)


def _messages_text(messages: list[Any]) -> str:
    parts: list[str] = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(p.get("text", "") for p in content if isinstance(p, dict))
    return "\n".join(parts)


def _features(text: str) -> Iterator[tuple[str, float]]:
    words = _WORD.findall(text.lower())
    if not words:
        yield "<empty>", 1.0
    for word in words:
        yield f"w:{word}", 1.0
        padded = f" {word} "
        for i in range(len(padded) - 2):
            yield f"t:{padded[i : i + 3]}", 0.25


def fake_embedding(text: str, dim: int) -> list[float]:
    """A deterministic, L2-normalised signed-hash embedding of words and character trigrams."""
    vector = [0.0] * dim
    for feature, weight in _features(text):
        n = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
        vector[n % dim] += weight if n >> 63 else -weight
    norm = math.sqrt(sum(v * v for v in vector))
    return [v / norm for v in vector] if norm else [1.0] + [0.0] * (dim - 1)


def _common_prefix(text: str, other: str) -> int:
    """How many characters the two begin with alike (by halving: slices compare at C speed, where a loop over
    characters made the fake's prompt cache a core's worth of the load bench's CPU)."""
    low, high = 0, min(len(text), len(other))
    while low < high:
        middle = (low + high + 1) // 2
        if text[low:middle] == other[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _encode_vector(vector: list[float], encoding_format: str) -> list[float] | str:
    if encoding_format == "base64":
        return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")
    return vector


def _completion(request: dict[str, Any], content: str, finish_reason: str = "stop",
                reasoning: str | None = None, usage: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    answer = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request["model"],
        "system_fingerprint": "fp_fake",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}],
    }
    return answer if usage is None else {**answer, "usage": usage}


def _chunk(request: dict[str, Any], delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": request["model"], "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}


def _events(request: dict[str, Any], content: str, finish_reason: str, reasoning: str | None,
            reasoning_field: str, endless: bool, usage: dict[str, Any] | None,
            piece_chars: int = STREAM_PIECE_CHARS) -> Iterator[dict[str, Any]]:
    """The answer as streamed chunks: reasoning first, the content in small pieces, the finish reason,
    then the usage when the client asked for it (``stream_options.include_usage``)."""
    if reasoning:
        yield _chunk(request, {"role": "assistant", reasoning_field: reasoning, "content": None})
    for start in range(0, len(content), piece_chars):
        yield _chunk(request, {"content": content[start:start + piece_chars]})
    while endless:  # a server generating with no cap: only the client leaving stops it
        yield _chunk(request, {"content": " and so on"})
    yield _chunk(request, {}, finish_reason)
    options = request.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage") and usage is not None:
        yield {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()),
               "model": request["model"], "choices": [], "usage": usage}


def _failure_response(failure: _Failure) -> _Response:
    headers = {} if failure.retry_after is None else {"Retry-After": f"{failure.retry_after:g}"}
    return _Response(failure.status, failure.body, headers, failure.delay)


class _Handler(BaseHTTPRequestHandler):
    server: LoopbackServer[FakeOpenAI]
    protocol_version = "HTTP/1.0"  # one request per connection unless the fake keeps connections
    timeout = 10.0

    def do_POST(self) -> None:
        """Serve one request (GET is handled the same way)."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        response = self.server.fake._dispatch(self.command, self.path, headers, raw)
        if response.trickle > 0:
            self._trickle(response)
            return
        if response.events is not None:
            self._stream(response, response.events)
            return
        payload = json.dumps(response.body).encode()
        self.send_response(response.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in response.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST

    def _stream(self, response: _Response, events: Iterable[dict[str, Any]]) -> None:
        """Send server-sent events (``response.events``) one by one; a client that closes the connection ends
        the stream."""
        chunked = self.protocol_version == "HTTP/1.1" and self.request_version == "HTTP/1.1"
        self.send_response(response.status)
        self.send_header("Content-Type", "text/event-stream")
        if chunked:  # the connection stays open, so the body's end is a zero-length chunk, not the close
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.close_connection = True
        self.end_headers()

        def write(data: bytes) -> None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)
            self.wfile.flush()

        try:
            for event in events:
                if response.interrupted is not None and response.interrupted.is_set():
                    break  # llama-cpp-python: "[DONE]" and the end, the answer left unfinished
                write(f"data: {json.dumps(event)}\n\n".encode())
                if self.server.fake._stopping.wait(response.event_delay):
                    self.close_connection = True
                    return
            if response.done:
                write(b"data: [DONE]\n\n")
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.server.fake._note_abandoned()
        finally:
            self.server.fake._streams.discard(response.interrupted)

    def _trickle(self, response: _Response) -> None:
        """The whole response one byte at a time, ``response.trickle`` seconds apart, until the client leaves."""
        fake = self.server.fake
        self.close_connection = True  # an HTTP/1.0 answer: the close ends it
        reason = self.responses.get(response.status, ("",))[0]
        kind = "text/event-stream" if response.events is not None else "application/json"
        head = f"HTTP/1.0 {response.status} {reason}\r\nContent-Type: {kind}\r\n"
        head += "".join(f"{name}: {value}\r\n" for name, value in response.headers.items())
        body = ((f"data: {json.dumps(event)}\n\n" for event in response.events) if response.events is not None
                else iter([json.dumps(response.body)]))
        try:
            for part in (head + "\r\n", *body):
                for byte in part.encode():
                    self.wfile.write(bytes((byte,)))
                    self.wfile.flush()
                    fake._note_trickled()
                    if self._pause_between_bytes(response.trickle):
                        return
        except (BrokenPipeError, ConnectionResetError):
            fake._note_abandoned(trickle=True)
        finally:
            fake._streams.discard(response.interrupted)

    def _pause_between_bytes(self, seconds: float) -> bool:
        """Wait ``seconds`` before the next trickled byte; True when the fake is stopping. A client that
        closes its end meanwhile is noticed at once (``BrokenPipeError``), not at the next failed write."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if self.server.fake._stopping.is_set():
                return True
            readable, _, _ = select.select([self.connection], [], [], min(left, STOP_CHECK_SECONDS))
            if readable:
                if not self.connection.recv(1, socket.MSG_PEEK):  # end of file: the client left
                    raise BrokenPipeError("the client closed the connection")
                return self.server.fake._stopping.wait(left)  # it sent more: only the next write can tell
        return self.server.fake._stopping.is_set()

    def log_message(self, format: str, *args: Any) -> None:
        """Route access logs to ``logging`` instead of stderr."""
        _log.debug("fake openai: " + format, *args)


class FakeOpenAI(LoopbackFake):
    """A scriptable OpenAI-compatible server on 127.0.0.1; use as a context manager."""

    handler = _Handler
    api_root = "/v1"

    def __init__(
        self,
        *,
        models: Iterable[str] = ("fake-chat", "fake-embed"),
        api_key: str | None = None,
        json_schema_supported: bool = True,
        embedding_dim: int = 384,
        latency: float = 0.0,
        personality: str | Personality = "openai",
        stream_chunk_delay: float = 0.0,
        tokens_per_second: float | None = None,
        embedding_trickle: float = 0.0,
        context_window: int | None = None,
        slots: int | None = None,
        keep_alive: bool = False,
    ) -> None:
        super().__init__(keep_alive=keep_alive)
        self.slots = _Slots(slots) if slots else None
        """Chat requests answered at once (the rest wait their turn in arrival order, :attr:`served`); None: all."""
        self.served: list[ServedChat] = []
        self.context_window = context_window
        """Tokens a prompt (and, where the personality counts it, the reply's room) may take; None: no limit.
        Prompts are counted as the fake counts usage (about four characters a token)."""
        self.personality = PERSONALITIES[personality] if isinstance(personality, str) else personality
        self.stream_chunk_delay = stream_chunk_delay  # seconds between streamed chunks
        self.tokens_per_second = tokens_per_second
        """A model writing at this rate: streamed one token (:data:`CHARS_PER_TOKEN` characters) a chunk, a whole
        answer after all its tokens' time; None: as fast as it can (chunks :data:`STREAM_PIECE_CHARS` apart by
        ``stream_chunk_delay``)."""
        self.embedding_trickle = embedding_trickle  # seconds between the bytes of every embeddings response
        self.abandoned_streams = 0  # streams the client closed before the end
        self.trickled_bytes = 0  # bytes sent by trickled replies
        self.abandoned_trickles = 0  # trickled replies the client closed before the end
        self._streams: set[threading.Event] = set()  # running streams a new request may interrupt
        self._chat_count = 0
        self._prompts: deque[str] = deque(maxlen=PROMPT_CACHE_ENTRIES)  # what the prompt cache holds
        self.models = list(models)
        self.api_key = api_key
        self.json_schema_supported = json_schema_supported
        self.embedding_dim = embedding_dim
        self.latency = latency  # seconds added to every response
        self._lock = threading.Lock()
        self._records: list[RecordedRequest] = []
        self._chat_statuses: list[int] = []
        self._chat_script: deque[_Reply | _Failure] = deque()
        self._embedding_failures: deque[_Failure] = deque()
        self._responder: Responder = default_responder

    def queue_reply(self, content: Content, *, delay: float = 0.0, trickle: float = 0.0) -> None:
        """Append a chat reply; a dict is JSON-encoded into the message content. With ``trickle``, the
        response (status line, headers, body) is sent one byte every ``trickle`` seconds."""
        with self._lock:
            self._chat_script.append(_Reply(content, delay, trickle))

    def queue_error(
        self,
        status: int,
        body: dict[str, Any] | None = None,
        retry_after: float | None = None,
        *,
        delay: float = 0.0,
        endpoint: str = "chat",
    ) -> None:
        """Make the next ``endpoint`` ("chat" or "embeddings") call fail with ``status``."""
        failure = _Failure(status, body or error_body(status), retry_after, delay)
        with self._lock:
            if endpoint == "chat":
                self._chat_script.append(failure)
            elif endpoint == "embeddings":
                self._embedding_failures.append(failure)
            else:
                raise ValueError(f"unknown endpoint {endpoint!r}; use 'chat' or 'embeddings'")

    def set_responder(self, fn: Responder | None) -> None:
        """Answer chat calls with ``fn(request_json)`` when the queue is empty (None: the default)."""
        with self._lock:
            self._responder = fn or default_responder

    def reset(self) -> None:
        """Clear queued replies/errors and recorded requests, and restore the default responder."""
        with self._lock:
            self._records.clear()
            self._chat_statuses.clear()
            self._chat_script.clear()
            self._embedding_failures.clear()
            self._responder = default_responder
            self.served.clear()

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received, in arrival order."""
        with self._lock:
            return list(self._records)

    @property
    def chat_statuses(self) -> list[int]:
        """The HTTP status each chat completion call was answered with, in arrival order."""
        with self._lock:
            return list(self._chat_statuses)

    def chat_requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of chat completion calls."""
        return [r.json for r in self.requests if r.path.startswith("/v1/chat/") and isinstance(r.json, dict)]

    def embedding_requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of embedding calls."""
        return [r.json for r in self.requests if r.path.startswith("/v1/embed") and isinstance(r.json, dict)]

    def response_formats(self) -> list[dict[str, Any] | None]:
        """The ``response_format`` of each chat call (None where absent)."""
        return [body.get("response_format") for body in self.chat_requests()]

    def _note_abandoned(self, *, trickle: bool = False) -> None:
        with self._lock:
            if trickle:
                self.abandoned_trickles += 1
            else:
                self.abandoned_streams += 1

    def _note_trickled(self) -> None:
        with self._lock:
            self.trickled_bytes += 1

    def _dispatch(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> _Response:
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        with self._lock:
            self._records.append(RecordedRequest(method, path, headers, body))
        if self.slots is None or not path.startswith("/v1/chat/"):
            return self._answered(method, path, headers, body, raw)
        arrived = time.monotonic()
        self.slots.take(self._stopping)
        started = time.monotonic()
        try:
            return self._answered(method, path, headers, body, raw)
        finally:
            self.slots.give_back()
            with self._lock:
                self.served.append(ServedChat(body, arrived, started, time.monotonic()))

    def _answered(self, method: str, path: str, headers: dict[str, str], body: Any, raw: bytes) -> _Response:
        response = self._route(method, path.split("?", 1)[0], headers, body, bool(raw))
        if path.startswith("/v1/chat/"):
            with self._lock:
                self._chat_statuses.append(response.status)
        self._stopping.wait(self.latency + response.delay)
        return response

    def _route(self, method: str, path: str, headers: dict[str, str], body: Any, has_body: bool) -> _Response:
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            return _fail(401, "Incorrect API key provided.")
        if method == "GET" and path == "/v1/models":
            return _Response(200, self._model_list())
        if method == "GET" and path == "/props" and self._reports_window("props"):
            return _Response(200, {"default_generation_settings": {"n_ctx": self.context_window}, "total_slots": 1})
        if method == "POST" and path in ("/v1/chat/completions", "/v1/embeddings"):
            if not isinstance(body, dict):
                problem = "could not parse the JSON body" if has_body else "a JSON object body is required"
                return _fail(400, f"We {problem} of your request.")
            return self._chat(body) if path == "/v1/chat/completions" else self._embeddings(body)
        return _fail(404, f"Invalid URL ({method} {path})")

    def _model_list(self) -> dict[str, Any]:
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake-openai"} for m in self.models]
        if self._reports_window("models"):
            data = [{**entry, "max_model_len": self.context_window} for entry in data]
        return {"object": "list", "data": data}

    def _reports_window(self, place: str) -> bool:
        return self.context_window is not None and self.personality.window_report == place

    def _window_refusal(self, body: dict[str, Any]) -> _Response | None:
        """The personality's refusal of a prompt too long for :attr:`context_window` (None: it fits)."""
        if self.context_window is None:
            return None
        cap = body.get("max_tokens") or body.get("max_completion_tokens")
        prompt_tokens = estimate_tokens(_messages_text(body["messages"]))
        refused = self.personality.window_error(self.context_window, prompt_tokens, cap if isinstance(cap, int) else 0)
        if refused is not None and body.get("stream") and self.personality.window_silent_stream:
            return _Response(200, {}, events=iter(()), done=False)
        return None if refused is None else _Response(*refused)

    def _chat(self, body: dict[str, Any]) -> _Response:
        problem = self._validate_chat(body)
        if problem is not None:
            return problem
        prompt = _messages_text(body["messages"])
        if self.personality.interrupts_streams:
            for running in list(self._streams):
                running.set()
        if (refused_image := self.personality.image_refusal(body)) is not None:
            return _Response(*refused_image)
        images = image_parts(body)
        if self.personality.images in ("dropped", "message dropped"):
            body, images = without_images(body, whole_message=self.personality.images == "message dropped"), 0
        refusal = self.personality.refusal(body, prompt)
        if refusal is not None:
            return _fail(refusal.status, refusal.message, param=refusal.param)
        if (too_long := self._window_refusal(body)) is not None:
            return too_long
        with self._lock:
            step = self._chat_script.popleft() if self._chat_script else None
            responder = self._responder
            self._chat_count += 1
            number = self._chat_count
            cached = self._cached_tokens(prompt)
        if isinstance(step, _Failure):
            return _failure_response(step)
        if step is None:
            try:
                step = _Reply(responder(body))
            except Exception as exc:
                _log.exception("fake openai responder failed")
                return _fail(500, f"Fake responder raised {exc!r}")
        ideal = step.content if isinstance(step.content, str) else json.dumps(step.content, ensure_ascii=False)
        content, reasoning = self.personality.shape(body, prompt, ideal, number)
        return replace(self._answer(body, content, reasoning, step.delay, cached, IMAGE_TOKENS * images),
                       trickle=step.trickle)

    def _cached_tokens(self, prompt: str) -> int:
        """The tokens of ``prompt``'s longest prefix an earlier request began with, in whole cache blocks (a
        server's prompt cache); then ``prompt`` is cached too. Call with the lock held."""
        shared = max((_common_prefix(prompt, seen) for seen in self._prompts), default=0)
        self._prompts.append(prompt)
        blocks = (shared // CHARS_PER_TOKEN) // PROMPT_CACHE_BLOCK_TOKENS
        return blocks * PROMPT_CACHE_BLOCK_TOKENS

    def _answer(self, body: dict[str, Any], content: str, reasoning: str | None, delay: float,
                cached: int = 0, image_tokens: int = 0) -> _Response:
        """The answer within ``max_tokens`` (cut with ``finish_reason: "length"``), streamed when asked."""
        cap = body.get("max_tokens") or body.get("max_completion_tokens")
        finish = "stop"
        if isinstance(cap, int) and cap > 0 and len(content) > cap * CHARS_PER_TOKEN:
            content, finish = content[: cap * CHARS_PER_TOKEN], "length"
        endless = self.personality.ramble and cap is None
        prompt_tokens = max(1, estimate_tokens(_messages_text(body["messages"]))) + image_tokens
        usage = self.personality.usage_body(prompt_tokens, estimate_tokens(content), min(cached, prompt_tokens))
        rate = self.tokens_per_second
        if not body.get("stream"):
            writing = estimate_tokens(content) / rate if rate else 0.0
            return _Response(200, _completion(body, content, finish, reasoning, usage), delay=delay + writing)
        field_name = "reasoning" if self.personality.thinking == "reasoning" else "reasoning_content"
        events = _events(body, content, finish, reasoning, field_name, endless, usage,
                         CHARS_PER_TOKEN if rate else STREAM_PIECE_CHARS)
        interrupted = threading.Event()
        self._streams.add(interrupted)
        return _Response(200, {}, delay=delay, events=events, event_delay=1 / rate if rate else self.stream_chunk_delay,
                         interrupted=interrupted)

    def _validate_chat(self, body: dict[str, Any]) -> _Response | None:
        if not isinstance(body.get("messages"), list) or not body.get("model"):
            return _fail(400, "'model' and 'messages' are required properties.", param="messages")
        fmt = body.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema" and not self.json_schema_supported:
            message = (
                "Invalid parameter: 'response_format' of type 'json_schema' is not supported with "
                "this model. Use {'type': 'json_object'} (JSON mode) instead."
            )
            return _fail(400, message, param="response_format")
        return None

    def _embeddings(self, body: dict[str, Any]) -> _Response:
        with self._lock:
            failure = self._embedding_failures.popleft() if self._embedding_failures else None
        if failure is not None:
            return _failure_response(failure)
        raw_input = body.get("input")
        texts = [raw_input] if isinstance(raw_input, str) else raw_input
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            return _fail(400, "'input' must be a string or a non-empty list of strings.", param="input")
        dim = body.get("dimensions") or self.embedding_dim
        if not isinstance(dim, int) or dim < 1:
            return _fail(400, "'dimensions' must be a positive integer.", param="dimensions")
        fmt = body.get("encoding_format") or "float"
        data = [
            {"object": "embedding", "index": i, "embedding": _encode_vector(fake_embedding(t, dim), fmt)}
            for i, t in enumerate(texts)
        ]
        tokens = sum(estimate_tokens(t) for t in texts)
        answer = {"object": "list", "data": data, "model": body.get("model")}
        if self.personality.usage != "none":
            answer["usage"] = {"prompt_tokens": tokens, "total_tokens": tokens}
        return _Response(200, answer, trickle=self.embedding_trickle)
