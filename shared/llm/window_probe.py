"""Asking the LLM server how big its context window is: llama.cpp's ``GET /props``, then ``GET /models``.

One short request each, once per process (:meth:`shared.llm.client.ChatModel.aprompt_budget`); a server
that says nothing (OpenAI, llama-cpp-python) leaves ``LLM_CONTEXT_TOKENS`` in force, until a refusal of a
prompt that was too long names the window (:mod:`shared.llm.context_window`).
"""

from __future__ import annotations

import logging

import httpx

from shared.llm.context_window import window_from_models, window_from_props

PROBE_SECONDS = 3.0
API_SUFFIX = "/v1"
log = logging.getLogger(__name__)


class ProbeFailed(Exception):
    """The server could not be reached to ask (it may be starting): ask again on a later turn."""


async def probe_window(base_url: str, api_key: str, model: str) -> int | None:
    """The context window the server at ``base_url`` reports for ``model``, or None when it says nothing.
    Raises :class:`ProbeFailed` when it cannot be reached."""
    base = base_url.rstrip("/")
    root = base[: -len(API_SUFFIX)] if base.endswith(API_SUFFIX) else base
    headers = {"Authorization": f"Bearer {api_key}"}
    async with httpx.AsyncClient(timeout=PROBE_SECONDS, headers=headers) as client:
        for url, read in ((f"{root}/props", window_from_props),
                          (f"{base}/models", lambda data: window_from_models(data, model))):
            try:
                answer = await client.get(url)
            except httpx.HTTPError as exc:
                raise ProbeFailed(f"GET {url}: {type(exc).__name__}") from exc
            if answer.status_code != 200:
                continue
            try:
                found = read(answer.json())
            except ValueError:
                continue
            if found is not None:
                log.info("the LLM server reports a context window of %d tokens (%s)", found, url)
                return found
    return None
