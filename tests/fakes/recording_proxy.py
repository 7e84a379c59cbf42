"""A recording reverse proxy on loopback, put between Mnemo and a real LLM server.

Every request is passed on unchanged and its answer streamed back chunk by chunk, so the real
server's behaviour reaches the client as it is; what was sent, the status and how long it took
are recorded for the test to check (every request capped, which formats were refused, latency).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx

from bench.fakes.loopback import LoopbackFake, LoopbackServer

HOP_HEADERS = {"host", "content-length", "connection", "transfer-encoding", "accept-encoding"}


@dataclass
class ProxiedRequest:
    method: str
    path: str
    body: Any
    started: float = field(default_factory=time.monotonic)
    status: int | None = None
    seconds: float | None = None
    abandoned: bool = False  # the client closed the connection before the answer ended
    cut_upstream: bool = False  # the server closed the connection before its answer ended
    answer: bytearray = field(default_factory=bytearray)  # the body as the server sent it

    def content(self) -> str:
        """The answer's text: the streamed deltas joined, or the whole message's content."""
        text = self.answer.decode("utf-8", "replace")
        if not text.lstrip().startswith("data:"):
            try:
                return json.loads(text)["choices"][0]["message"]["content"] or ""
            except (ValueError, KeyError, IndexError, TypeError):
                return ""
        parts = []
        for line in text.splitlines():
            payload = line.removeprefix("data:").strip()
            if not line.startswith("data:") or payload == "[DONE]":
                continue
            try:
                choices = json.loads(payload).get("choices") or []
            except ValueError:
                continue
            parts += [(choice.get("delta") or {}).get("content") or "" for choice in choices[:1]]
        return "".join(parts)


class _Handler(BaseHTTPRequestHandler):
    server: LoopbackServer[RecordingProxy]
    protocol_version = "HTTP/1.0"

    def do_POST(self) -> None:
        """Pass the request on and stream the answer back."""
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        proxy: RecordingProxy = self.server.fake
        record = proxy._record(ProxiedRequest(self.command, self.path, body))
        headers = {name: value for name, value in self.headers.items() if name.lower() not in HOP_HEADERS}
        with httpx.stream(self.command, proxy.upstream + self.path, content=raw, headers=headers,
                          timeout=httpx.Timeout(600.0)) as answer:
            record.status = answer.status_code
            self.send_response(answer.status_code)
            self.send_header("Content-Type", answer.headers.get("content-type", "application/json"))
            self.end_headers()
            try:
                for chunk in answer.iter_raw():
                    record.answer += chunk
                    self.wfile.write(chunk)
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                record.abandoned = True  # leaving the block closes the upstream connection too
            except httpx.HTTPError:
                record.cut_upstream = True  # the server ended the body early: so does this one (HTTP/1.0)
        record.seconds = time.monotonic() - record.started

    do_GET = do_POST

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the records say what happened."""


class RecordingProxy(LoopbackFake):
    """``base_url`` answers like ``upstream`` (e.g. ``http://127.0.0.1:8000``), recording every request."""

    handler = _Handler
    api_root = "/v1"

    def __init__(self, upstream: str) -> None:
        super().__init__()
        self.upstream = upstream.rstrip("/")
        self._lock = threading.Lock()
        self._records: list[ProxiedRequest] = []

    def _record(self, record: ProxiedRequest) -> ProxiedRequest:
        with self._lock:
            self._records.append(record)
        return record

    def chat_requests(self) -> list[ProxiedRequest]:
        """The chat completion requests so far, in arrival order."""
        with self._lock:
            return [r for r in self._records if r.path.endswith("/chat/completions")]
