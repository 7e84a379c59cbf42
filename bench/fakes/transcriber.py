"""A fake OpenAI-compatible transcription server (``POST /v1/audio/transcriptions``, multipart) on loopback.

It answers as the servers Mnemo names do with ``response_format=json``: ``{"text": …}`` (whisper.cpp's server
started with ``--inference-path /v1/audio/transcriptions``, faster-whisper-server / speaches), and OpenAI adds
``usage`` — ``{"type": "duration", "seconds": N}`` for whisper-1, ``{"type": "tokens", "input_tokens": …}`` for the
gpt-4o transcribe models (``personality``). A request without a file or model is refused with 400 as OpenAI does;
queued failures come first. Standard library only::

    with FakeTranscriber() as ears:
        ears.queue_transcript("on my way home")
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass
from email.message import Message as MimeMessage
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler
from typing import Any

from bench.fakes.loopback import LoopbackFake, LoopbackServer

AUDIO_SECONDS_PER_KB = 1.0
"""How long the fake takes an upload to be (it does not decode audio)."""


@dataclass(frozen=True)
class Transcription:
    """One request as received: the model asked for and the audio's name, type and bytes."""

    model: str
    filename: str
    content_type: str
    audio: bytes
    response_format: str


class _Handler(BaseHTTPRequestHandler):
    server: LoopbackServer[FakeTranscriber]
    protocol_version = "HTTP/1.0"

    def do_POST(self) -> None:
        """Answer one transcription request."""
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status, body = self.server.fake._answer(self.path, self.headers.get("Content-Type", ""), raw)
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read :attr:`FakeTranscriber.requests`."""


class FakeTranscriber(LoopbackFake):
    """A scriptable transcription endpoint; ``base_url`` ends in ``/v1`` as the SDK expects."""

    handler = _Handler
    api_root = "/v1"

    def __init__(self, *, personality: str = "whisper.cpp", default: str = "") -> None:
        super().__init__()
        if personality not in ("whisper.cpp", "faster-whisper", "openai-whisper-1", "openai-gpt-4o-transcribe"):
            raise ValueError(f"unknown transcription personality {personality!r}")
        self.personality = personality
        self.default = default  # what every voice note says when nothing is queued ("" : nothing heard)
        self._lock = threading.Lock()
        self._script: deque[str | int] = deque()
        self._requests: list[Transcription] = []

    def queue_transcript(self, text: str) -> None:
        """What the next voice note says."""
        with self._lock:
            self._script.append(text)

    def queue_error(self, status: int) -> None:
        """The next request fails with ``status``."""
        with self._lock:
            self._script.append(status)

    @property
    def requests(self) -> list[Transcription]:
        with self._lock:
            return list(self._requests)

    def _answer(self, path: str, content_type: str, raw: bytes) -> tuple[int, dict[str, Any]]:
        if path.split("?", 1)[0] != "/v1/audio/transcriptions":
            return 404, _error(f"Invalid URL (POST {path})")
        fields = _multipart(content_type, raw)
        upload, model = fields.get("file"), fields.get("model")
        if not isinstance(upload, tuple) or not isinstance(model, str):
            return 400, _error("you must provide a file and a model", param="file")
        with self._lock:
            self._requests.append(Transcription(model, upload[0], upload[1], upload[2],
                                                str(fields.get("response_format") or "json")))
            step = self._script.popleft() if self._script else self.default
        if isinstance(step, int):
            return step, _error("The server had an error while processing your request.")
        return 200, self._body(step, upload[2])

    def _body(self, text: str, audio: bytes) -> dict[str, Any]:
        seconds = max(1, round(len(audio) / 1024 * AUDIO_SECONDS_PER_KB))
        if self.personality == "openai-whisper-1":
            return {"text": text, "usage": {"type": "duration", "seconds": seconds}}
        if self.personality == "openai-gpt-4o-transcribe":
            return {"text": text, "usage": {"type": "tokens", "input_tokens": seconds * 10,
                                            "output_tokens": max(1, len(text) // 4), "total_tokens": 0}}
        return {"text": text}


def _error(message: str, *, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": None}}


def _multipart(content_type: str, raw: bytes) -> dict[str, Any]:
    """Text fields as strings, files as (filename, content type, bytes)."""
    message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
    fields: dict[str, Any] = {}
    if not message.is_multipart():
        return fields
    for part in message.iter_parts():
        assert isinstance(part, MimeMessage)
        name = part.get_param("name", header="content-disposition")
        decoded = part.get_payload(decode=True)
        payload = decoded if isinstance(decoded, bytes) else b""  # None for a part that is itself multipart
        if not isinstance(name, str):
            continue
        filename = part.get_filename()
        fields[name] = ((filename, part.get_content_type(), payload) if filename is not None
                        else payload.decode("utf-8", "replace"))
    return fields
