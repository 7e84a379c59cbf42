"""A small text file read into the message: decoded, cleaned, and cut at :data:`TEXT_FILE_TOKEN_CAP`. Pure."""

from __future__ import annotations

from shared.errors import MnemoError
from shared.text import clean_text, estimate_tokens, longest_start

TEXT_FILE_TOKEN_CAP = 1500
"""The most of a file's text that goes into the prompt (estimated tokens); the user is told when it was cut."""
_ENCODINGS = ("utf-8-sig", "gb18030")


class UnreadableText(MnemoError):
    """The file is not text (binary, or in no encoding this bot reads)."""


def read_text(data: bytes, cap: int = TEXT_FILE_TOKEN_CAP) -> tuple[str, bool]:
    """The file's text and whether it was cut to ``cap`` estimated tokens; raises :class:`UnreadableText`."""
    if b"\x00" in data[:4096]:
        raise UnreadableText("the file holds binary data")
    for encoding in _ENCODINGS:
        try:
            text = data.decode(encoding)
            break
        except UnicodeDecodeError:
            continue
    else:
        raise UnreadableText("the file is not UTF-8 or GB18030 text")
    text = clean_text(text, len(text)).strip()
    if estimate_tokens(text) <= cap:
        return text, False
    low = longest_start(text, cap)
    start = text[:low]
    newline = start.rfind("\n")
    return (start[:newline] if newline > low // 2 else start).rstrip(), True
