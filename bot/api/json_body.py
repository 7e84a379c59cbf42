"""How the API reads a JSON request body: strict UTF-8 JSON of bounded size, nesting and numbers.

FastAPI reads a JSON body with ``await request.json()`` and answers a :class:`json.JSONDecodeError`
with a 422 ``json_invalid`` problem. :class:`CheckedJsonRoute` gives every route a request whose
``json()`` is :func:`parse_json_body`, which raises :class:`JsonRefused` (a ``JSONDecodeError``) for
what ``json.loads`` would accept or fail on in other ways: bytes that are not UTF-8 (or are UTF-16
and UTF-32, which ``json.loads`` guesses), nesting deeper than :data:`MAX_JSON_DEPTH` (which would
otherwise reach a ``RecursionError`` in the parser or in code after it), a number with more than
:data:`MAX_JSON_DIGITS` digits, and numbers JSON does not have (``NaN``, ``Infinity``, ``1e999``).
Depth and digits are checked on the text, outside string literals, before anything is parsed.

A JSON body is also at most :data:`MAX_JSON_BODY_BYTES` (413, like the body limit): the largest
memory or batch of ids is a few tens of KB, and parsing megabytes would hold up every other request
(FastAPI parses on the event loop, and before authentication).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Coroutine
from itertools import accumulate
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute

from bot.api.body_limit import BodyTooLarge

MAX_JSON_BODY_BYTES = 256 * 1024
MAX_JSON_DEPTH = 32
"""Arrays and objects inside each other; the body itself is level 1."""
MAX_JSON_DIGITS = 40
"""Digits in one number literal: an id is at most 19, a float's shortest form at most 17."""

_STRING = re.compile(r'"(?:[^"\\]++|\\.?)*+(?:"|\Z)', re.DOTALL)
"""A string literal, or an unclosed one up to the end: a match never fails once begun, so the scan
is linear (a pattern that can fail is tried again from every later quote: quadratic)."""
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")
_LONG_NUMBER = re.compile(rf"[0-9]{{{MAX_JSON_DIGITS + 1}}}")
_DEPTH_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class JsonRefused(json.JSONDecodeError):
    """A body that is not JSON the API reads; the message says why (it never quotes the body)."""

    def __init__(self, why: str) -> None:
        super().__init__(why, "", 0)


def parse_json_body(body: bytes) -> Any:
    """The JSON value of ``body``, or :class:`JsonRefused` / ``JSONDecodeError`` saying why not."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonRefused(f"not UTF-8 (byte {exc.start})") from None
    outside_strings = _STRING.sub('""', text)
    brackets = _NOT_BRACKET.sub("", outside_strings)
    if max(accumulate(map(_DEPTH_STEP.__getitem__, brackets)), default=0) > MAX_JSON_DEPTH:
        raise JsonRefused(f"nested deeper than {MAX_JSON_DEPTH} levels")
    if _LONG_NUMBER.search(outside_strings):
        raise JsonRefused(f"a number with more than {MAX_JSON_DIGITS} digits")
    return json.loads(text, parse_float=_finite_float, parse_constant=_no_constant)


def _finite_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise JsonRefused(f"a number out of range ({literal[:MAX_JSON_DIGITS]})")
    return value


def _no_constant(literal: str) -> float:
    raise JsonRefused(f"{literal} is not a JSON number")


class CheckedJsonRequest(Request):
    """A request whose ``json()`` is :func:`parse_json_body` (read once, then kept)."""

    _parsed: Any

    async def json(self) -> Any:
        if not hasattr(self, "_parsed"):
            body = await self.body()
            if len(body) > MAX_JSON_BODY_BYTES:
                raise BodyTooLarge(MAX_JSON_BODY_BYTES)
            self._parsed = parse_json_body(body)
        return self._parsed


class CheckedJsonRoute(APIRoute):
    """An API route that reads its JSON body with :func:`parse_json_body`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def checked(request: Request) -> Response:
            return await handle(CheckedJsonRequest(request.scope, request.receive))

        return checked
