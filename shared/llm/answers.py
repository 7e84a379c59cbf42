"""Reading what a model wrote: reasoning stripped, JSON found, a cut reply salvaged, machine text refused.

Pure rules, shared by the hot path and every background job. Servers and models differ in what
surrounds the answer (``<think>`` blocks of reasoning models, markdown fences, prose before the
object, a reply cut by ``max_tokens``); these functions turn all of that into either the text a
person may read or nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

THINK_TAG = re.compile(r"<(?P<closing>/?)think(?:ing)?>", re.IGNORECASE)
THINK_OPEN = re.compile(r"<think(?:ing)?>", re.IGNORECASE)
THINK_CLOSE = re.compile(r"</think(?:ing)?>", re.IGNORECASE)
FENCE_LINE = re.compile(r"^[^\S\n]*```[\w-]*[^\S\n]*$", re.MULTILINE)
"""A fence line; the spaces around it stay on its line, so no start scans a run of blank lines again."""
SCHEMA_KEYWORDS = frozenset({"$schema", "properties", "additionalProperties", "required"})
MACHINE_STARTS = ("{", "[", "```", "<think", "</think")
_MARKUP = re.compile(r"<[A-Za-z/!?][^<>]{0,300}(?:>|$)")
"""An HTML or XML tag, or one the answer was cut inside (``<p class=``): a small model writes a page's markup."""
_WORD = re.compile(r"\w")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def strip_reasoning(text: str) -> str:
    """``text`` without reasoning: closed ``<think>`` blocks, everything before a lone ``</think>`` (the
    template opened it), and an unclosed ``<think>`` to the end (the reply was cut while thinking)."""
    text = _without_closed_blocks(text)
    closing = list(THINK_CLOSE.finditer(text))
    if closing:
        text = text[closing[-1].end():]
    opening = THINK_OPEN.search(text)
    if opening:
        text = text[: opening.start()]
    return text.strip()


def _without_closed_blocks(text: str) -> str:
    """``text`` without each ``<think>`` and what follows it up to the next closing tag, in one pass over the
    tags (a regular expression from each opening tag to a closing one would scan again from every opening)."""
    kept, opened_at, position = [], None, 0
    for tag in THINK_TAG.finditer(text):
        if opened_at is None and not tag["closing"]:
            opened_at = tag.start()
        elif opened_at is not None and tag["closing"]:
            kept.append(text[position:opened_at])
            opened_at, position = None, tag.end()
    return "".join(kept) + text[position:]


def without_fences(text: str) -> str:
    """``text`` with markdown code-fence lines removed (```json … ```)."""
    return FENCE_LINE.sub("", text).strip()


def salvage_string_field(text: str, field: str) -> str:
    """The value of ``"field": "…"`` in a JSON object that may be cut short; empty when there is none.

    A reply cut by ``max_tokens`` ends inside the object, often inside the string itself: what was
    written of it is kept (a dangling escape or half a surrogate pair is dropped)."""
    match = re.search(r'"' + re.escape(field) + r'"\s*:\s*"', text)
    if match is None:
        return ""
    chars: list[str] = []
    position = match.end()
    while position < len(text):
        char = text[position]
        if char == '"':
            break
        if char != "\\":
            chars.append(char)
            position += 1
            continue
        escaped, position = _escape_at(text, position)
        chars.append(escaped)
    return surrogate_safe("".join(chars)).strip()


def _escape_at(text: str, position: int) -> tuple[str, int]:
    """The character escaped at ``text[position]`` (a backslash) and the position after it."""
    code = text[position + 1: position + 2]
    if code in _ESCAPES:
        return _ESCAPES[code], position + 2
    if code == "u":
        digits = text[position + 2: position + 6]
        if len(digits) == 4 and all(c in "0123456789abcdefABCDEF" for c in digits):
            return chr(int(digits, 16)), position + 6
    return "", len(text) if not code else position + 2


def surrogate_safe(text: str) -> str:
    """``text`` with JSON's surrogate pairs joined and lone surrogates dropped."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").replace("\ufffd", "")


def is_schema_echo(data: Mapping[str, Any], descriptions: Iterable[str] = ()) -> bool:
    """The model wrote the schema (or its descriptions) back instead of filling it in."""
    if SCHEMA_KEYWORDS & set(data) or data.get("type") == "object":
        return True
    response = data.get("response")
    if isinstance(response, Mapping) and ("type" in response or "description" in response):
        return True
    return isinstance(response, str) and response.strip() in set(descriptions)


def is_machine_text(text: str, field_names: Iterable[str] = ()) -> bool:
    """Text no person should be shown: JSON, a code fence, reasoning tags, markup with no words outside its tags,
    or the schema's field names written as keys (``"response":``) or in their snake_case form
    (``memory_update``)."""
    stripped = text.strip()
    if not stripped or stripped.startswith(MACHINE_STARTS):
        return True
    if stripped.startswith("<") and not _WORD.search(_MARKUP.sub("", stripped)):
        return True  # markup and nothing to read ("<p class=", "<div><br/></div>")
    for name in field_names:
        if re.search(r'["\']' + re.escape(name) + r'["\']\s*:', stripped):
            return True
        if "_" in name and name in stripped:
            return True
    return False


def json_text(value: Any) -> str:
    """A JSON value as compact text (for examples shown to the model)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
