"""Whether the model sees images: ``LLM_VISION``, the image part in the turn's request, and a server's refusal.

``on`` always sends the image part, ``off`` never does, ``auto`` sends it until the endpoint refuses it once
and remembers that (per endpoint and process, like the output-mode ladder). The refusals are the real
servers' (README "Attachments"): OpenAI's text-only models answer 400 "Invalid content type. image_url is
only supported by certain models."; llama.cpp without a projector 500 "image input is not supported - hint:
... mmproj"; vLLM with a text-only model 400 "<model> is not a multimodal model". Ollama with a text-only
model takes the image and drops it (the model answers without it), and llama-cpp-python (0.3) without a multimodal
chat handler drops the whole message, caption and all (its ``_map_roles`` keeps only string content): those are told
by the missing description, not by a refusal, and ``auto`` stops after two such answers in a row
(:mod:`shared.llm.client`). Pure: no HTTP here.
"""

from __future__ import annotations

import re
from typing import Any

VISION_SETTINGS = ("auto", "on", "off")
REFUSAL_STATUSES = frozenset({400, 415, 422, 500, 501})
IMAGE_REFUSAL_WORDS = re.compile(
    r"image_url|image input|image part|images? (?:are|is) not supported|does not support images|multimodal|mmproj|"
    r"vision|content type|content part", re.IGNORECASE)


def with_image(messages: list[dict[str, Any]], url: str) -> list[dict[str, Any]]:
    """``messages`` with the image as a part of the last user message (its text stays the first part)."""
    last = max((i for i, message in enumerate(messages) if message.get("role") == "user"), default=None)
    if last is None:
        return messages
    text = messages[last].get("content") or ""
    parts = [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": url}}]
    return [*messages[:last], {**messages[last], "content": parts}, *messages[last + 1:]]


def refuses_image(status: int | None, body: str) -> bool:
    """The server said it cannot take an image part (as opposed to failing for a while)."""
    return status in REFUSAL_STATUSES and IMAGE_REFUSAL_WORDS.search(body or "") is not None


IMAGE_TOKENS = 765
"""What one image part is counted as where the server reports no usage: OpenAI's price of a 1024-pixel image in
high detail (85 + 4 tiles of 170); the image the model gets is never bigger (``IMAGE_MAX_SIDE``)."""


def content_text(content: Any) -> str:
    """A message's words: the content itself, or the text parts of a content list (never an image's data)."""
    if isinstance(content, list):
        return "\n".join(str(part.get("text") or "") for part in content
                         if isinstance(part, dict) and part.get("type") == "text")
    return str(content or "")


def image_count(messages: Any) -> int:
    """How many image parts ``messages`` carry."""
    return sum(1 for message in messages or () if isinstance(message, dict) and isinstance(message.get("content"), list)
               for part in message["content"] if isinstance(part, dict) and part.get("type") == "image_url")
