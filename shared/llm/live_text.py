"""The reply read from a turn's answer while it streams, before the memory update and the rest have arrived.

A :class:`ResponseReader` is fed the answer's content piece by piece, as the server streams it (pieces may
split anything: an escape, a surrogate pair, a key, a multi-byte character when fed bytes). It skips what
comes before the object (``<think>`` blocks, a markdown fence line) and reads the top-level ``"response"``
string as far as it has come, wherever the field stands in the object: escapes decoded, half an escape or a
lone surrogate held back until the rest arrives. With ``plain_words`` (the instructions-only output mode) an
answer that does not open an object is taken as the reply itself, up to the first ``{`` or fence, and
reasoning closed by a lone ``</think>`` is dropped; in the JSON modes such words are prose before the object,
skipped.

:func:`shown_so_far` says what of it a person may be shown now: words, never JSON, field names, the schema's
placeholder or the app note copied back. The whole answer is still judged by
:func:`shared.llm.turn_answer.read_turn_answer` once it has arrived; what was shown is then replaced by what
that decides. Pure.
"""

from __future__ import annotations

import codecs
import re

from shared.llm.answers import THINK_CLOSE, THINK_OPEN
from shared.llm.turn_answer import ECHO_TEXTS, before_the_note, presentable
from shared.llm.turn_schema import MAX_RESPONSE_CHARS

RESPONSE_FIELD = "response"
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_HEX = frozenset("0123456789abcdefABCDEF")
_LONGEST_TAG = len("<thinking>")
_PREFIXES = ("<think>", "<thinking>", "```")
_FIRST_WORD = re.compile(r"\w\W+\w|[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
"""A whole word and the start of the next, or a Chinese (Japanese, Korean) character: a word by itself."""


class ResponseReader:
    """The ``response`` of a JSON turn answer as far as it has streamed (:attr:`text`); :attr:`done` once its
    closing quote arrived."""

    def __init__(self, *, plain_words: bool = False) -> None:
        self.plain_words = plain_words
        self.done = False
        self._bytes = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._head = ""  # what came before the object, while it is still being skipped
        self._state = "head"  # head, plain, object, key, value, response, done
        self._depth = 0  # nesting inside the object (1: its own keys)
        self._expect_key = False
        self._in_string = False  # a string below the top level, or a top-level value string
        self._string_escape = False
        self._key: list[str] = []
        self._last_key = ""
        self._pending = ""  # an escape (or a high surrogate's escape) not complete yet
        self._reply: list[str] = []
        self._plain: list[str] = []

    @property
    def text(self) -> str:
        """The reply as far as it has come (the plain words, until a ``response`` string began)."""
        return "".join(self._reply) if self._reply or self._state in ("response", "done") else "".join(self._plain)

    def feed(self, piece: str | bytes) -> str:
        """Take the next piece of the answer; :attr:`text` after it."""
        chunk = self._bytes.decode(piece) if isinstance(piece, bytes) else piece
        for char in chunk:
            if self._state == "done":
                break
            self._step(char)
        return self.text

    # -- the states ------------------------------------------------------------------------------

    def _step(self, char: str) -> None:
        if self._state == "head":
            self._in_head(char)
        elif self._state == "plain":
            self._in_plain(char)
        elif self._state == "response":
            self._in_response(char)
        elif self._state == "key":
            self._in_key(char)
        else:
            self._in_object(char)

    def _in_head(self, char: str) -> None:
        """Before the object: skip whitespace, reasoning blocks and a fence line; decide JSON or plain words."""
        self._head += char
        head = self._head.lstrip()
        if not head:
            return
        if head.startswith("{"):
            self._head, self._state, self._depth, self._expect_key = "", "object", 1, True
            return
        lowered = head.lower()
        if THINK_OPEN.match(lowered):
            closing = THINK_CLOSE.search(lowered)
            if closing is not None:
                self._head = head[closing.end():]
            return
        if lowered.startswith("```"):
            if "\n" in head:
                self._head = head[head.index("\n") + 1:]
            return
        if any(prefix.startswith(lowered) for prefix in _PREFIXES):
            return  # maybe a tag or a fence: wait for more
        self._head, self._state = "", "plain"
        self._keep_plain(head[0])  # taken as words, not looked at again: the rest is read anew
        for held in head[1:]:
            self._step(held)

    def _in_plain(self, char: str) -> None:
        """Plain words (kept only with ``plain_words``: else prose before the object), until the answer turns to
        JSON or a fence (then the object is read as usual)."""
        if char in "{`":
            self._state, self._head = "head", ""
            self._in_head(char)
            return
        self._keep_plain(char)

    def _keep_plain(self, char: str) -> None:
        if not self.plain_words:
            return
        self._plain.append(char)
        if char == ">":  # a lone closing tag: what came before it was the model's reasoning
            tail = "".join(self._plain[-_LONGEST_TAG - 1:]).lower()
            if (closing := THINK_CLOSE.search(tail)) is not None and tail.endswith(closing.group(0)):
                self._plain.clear()

    def _in_object(self, char: str) -> None:
        if self._in_string:
            if self._string_escape:
                self._string_escape = False
            elif char == "\\":
                self._string_escape = True
            elif char == '"':
                self._in_string = False
            return
        if char == '"':
            if self._depth == 1 and self._expect_key:
                self._state, self._key = "key", []
            elif self._depth == 1 and self._last_key == RESPONSE_FIELD:
                self._state = "response"
            else:
                self._in_string = True
        elif char in "{[":
            self._depth += 1
        elif char in "}]":
            self._depth -= 1
            if self._depth == 0:
                self._state = "done"
        elif char == "," and self._depth == 1:
            self._expect_key = True

    def _in_key(self, char: str) -> None:
        if self._string_escape:
            self._key.append(char)
            self._string_escape = False
        elif char == "\\":
            self._string_escape = True
        elif char == '"':
            self._last_key, self._expect_key, self._state = "".join(self._key), False, "object"
        else:
            self._key.append(char)

    def _in_response(self, char: str) -> None:
        if self._pending:
            self._pending += char
            self._decode_pending()
            return
        if char == "\\":
            self._pending = char
        elif char == '"':
            self.done, self._state = True, "done"
        else:
            self._reply.append(char)

    def _decode_pending(self) -> None:
        """An escape once it is whole; a high surrogate waits for its low half (a lone one is dropped)."""
        pending = self._pending
        if len(pending) == 2 and pending[1] in _SIMPLE_ESCAPES:
            self._reply.append(_SIMPLE_ESCAPES[pending[1]])
            self._pending = ""
            return
        if pending[1] != "u" or (len(pending) > 2 and not all(c in _HEX for c in pending[2:6])):
            self._pending = ""  # not JSON: dropped, as the whole answer's reader drops it
            return
        if len(pending) < 6:
            return
        code = int(pending[2:6], 16)
        if 0xD800 <= code < 0xDC00:  # the high half of a pair: wait for "\uDCxx"
            rest = pending[6:]
            if rest[:2] not in ("", "\\", "\\u"):  # no low half follows: the lone high half is dropped
                self._pending = ""
                for held in rest:
                    self._in_response(held)
                return
            if len(pending) < 12:
                return
            low, self._pending = pending[8:12], ""
            if all(c in _HEX for c in low) and 0xDC00 <= int(low, 16) < 0xE000:
                self._reply.append(chr(0x10000 + ((code - 0xD800) << 10) + (int(low, 16) - 0xDC00)))
            else:
                for held in rest:
                    self._in_response(held)
            return
        self._pending = ""
        if not 0xDC00 <= code < 0xE000:  # a lone low half is dropped
            self._reply.append(chr(code))


def shown_so_far(text: str) -> str:
    """What of a reply still streaming a person may be shown now ("" when nothing yet): from its first whole word
    on, up to where it starts to copy the app note back, within the reply's length, and only words (no JSON,
    field names, placeholder)."""
    visible = before_the_note(text[:MAX_RESPONSE_CHARS]).strip()
    if not _FIRST_WORD.search(visible) or not presentable(visible) or visible.startswith("<"):
        return ""
    if any(echo.startswith(visible) or visible.startswith(echo) for echo in ECHO_TEXTS):
        return ""
    return visible
