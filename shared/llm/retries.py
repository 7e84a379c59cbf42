"""How to react to a failed LLM request: transient (wait, then try again) or final (say why).

Pure functions over the ``openai`` SDK's errors: the status and body of a refusal, the delay before
the next try (the server's Retry-After wins, capped), and one line describing the failure.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from shared.errors import MnemoError
from shared.llm.sdk import openai

BACKOFF_BASE_SECONDS = 0.5
MAX_RETRY_AFTER_SECONDS = 10.0
REFUSAL_HINTS = {401: "check LLM_API_KEY", 403: "check LLM_API_KEY and the model's access rights",
                 404: "check LLM_BASE_URL and LLM_MODEL"}


class LLMUnavailable(MnemoError):
    """The LLM endpoint cannot answer now (down, too slow, refusing the key, the model or every format)."""


def status_and_body(exc: openai.OpenAIError) -> tuple[int | None, str]:
    if not isinstance(exc, openai.APIStatusError):
        return None, ""
    return exc.status_code, f"{exc.message} {exc.body}"


def request_status(exc: openai.OpenAIError | None) -> str:
    """How a request ended, in the words the metrics count: ``ok``, ``rate_limited``, ``server_error``,
    ``client_error``, ``timeout``, ``connection_error`` or ``error`` (an answer the SDK could not read)."""
    if exc is None:
        return "ok"
    if isinstance(exc, openai.APITimeoutError):
        return "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return "connection_error"
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code == 429:
            return "rate_limited"
        return "server_error" if exc.status_code >= 500 else "client_error"
    return "error"


def retry_delay(exc: openai.OpenAIError, retry: int = 0) -> float:
    """Seconds to wait before trying again; raises when trying again cannot help."""
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if status < 500 and status not in (408, 409, 429):
            hint = REFUSAL_HINTS.get(status, "check LLM_MODEL and what the endpoint supports")
            raise LLMUnavailable(f"the LLM endpoint refused the request ({describe(exc)}); {hint}") from exc
        retry_after = _retry_after_seconds(exc.response.headers)
        if retry_after is not None:
            return retry_after
    elif not isinstance(exc, openai.APIConnectionError):  # e.g. an answer the SDK could not read
        raise LLMUnavailable(f"the LLM endpoint answered unexpectedly ({describe(exc)})") from exc
    return BACKOFF_BASE_SECONDS * 2.0**retry + random.uniform(0, BACKOFF_BASE_SECONDS)


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


def describe(exc: openai.OpenAIError) -> str:
    if isinstance(exc, openai.APIStatusError):
        body = exc.body.get("error", exc.body) if isinstance(exc.body, dict) else exc.body
        message = body.get("message") if isinstance(body, dict) else body
        return f"HTTP {exc.status_code}: {' '.join(str(message or exc.message).split())[:160]}"
    if isinstance(exc, openai.APITimeoutError):
        return "timed out"
    return f"{type(exc).__name__}: {str(exc)[:200]}"
