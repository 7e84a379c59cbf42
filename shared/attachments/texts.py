"""How a message's attachments are written into the round and into the prompt. Pure.

The round keeps what was sent, never a file's content: a photo as ``[photo]`` (``[photo: <what it shows>]`` once
the model described it), a read text file as ``[file notes.txt]``, anything not read with why. The prompt gets
the same line and, for a text file, its text inside ``<file>`` markup with a note when it was cut. What the user is
told of them is a reply's notice (:func:`shared.conversation.attached.attachment_notices`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from shared.attachments.kinds import MAX_AUDIO_BYTES, MAX_IMAGE_BYTES, MAX_TEXT_FILE_BYTES, Attachment
from shared.text import clean_text

MAX_DESCRIPTION_CHARS = 300
"""A photo's one-line description, as kept in the round."""
PHOTO_MARK = "[photo]"
VOICE_MARK = "[voice message]"
"""A voice note not heard yet; heard, the mark is followed by what was said (the transcript is the message)."""
_WAITING_VOICE = re.compile(re.escape(VOICE_MARK) + r"(?=\n|$)")
PHOTO_SEARCH_WORDS = "photo picture image 照片 图片 相片"
"""Keys a round with a photo is also found by ("the photo I sent", "我发的照片"), in both languages."""
_REASONS_EN = {"too_large": "too large to read", "unread_type": "not read: not a kind of file I read",
               "failed": "could not be fetched", "unheard": "not heard: no transcriber",
               "not_transcribed": "could not be transcribed", "over_limit": "not fetched: too many files just now"}


def turn_line(caption: str, attachments: Sequence[Attachment]) -> str:
    """What the round records of the message: the caption (a sticker: its emoji) and one mark per attachment."""
    parts = [caption.strip()] if caption.strip() else []
    for item in attachments:
        mark = _mark(item)
        if mark:
            parts.append(mark)
    return "\n".join(parts)


def described(line: str, description: str | None) -> str:
    """The round's line with the photo's mark replaced by what the model said it shows."""
    text = clean_text(description or "", MAX_DESCRIPTION_CHARS).replace("\n", " ")
    text = text.replace("[", "(").replace("]", ")").strip()
    if not text or PHOTO_MARK not in line:
        return line
    return line.replace(PHOTO_MARK, f"[photo: {text}]", 1)


def heard_line(line: str, attachments: Sequence[Attachment]) -> str:
    """The round's line once its voice notes were heard: each waiting mark followed by what was said, or saying
    why it was not."""
    for item in attachments:
        if item.kind != "voice" or item.audio is not None:
            continue
        mark = _mark(item) if item.outcome == "fetched" else f"[voice message, {_REASONS_EN[item.outcome]}]"
        line = _WAITING_VOICE.sub(_as_written(mark), line, count=1)
    return line


def _as_written(text: str) -> Callable[[re.Match[str]], str]:
    """A replacement for :func:`re.sub` that inserts ``text`` as it is (a string's backslashes would be read)."""
    return lambda _match: text


def search_words(line: str) -> tuple[str, ...]:
    """The words a round's line is keyed by besides its own: a photo's in both languages."""
    return (PHOTO_SEARCH_WORDS,) if "[photo" in line else ()


def prompt_text(line: str, attachments: Sequence[Attachment]) -> str:
    """The user's message as the model reads it: the round's line, then each read file's (or voice note's) text."""
    blocks = [line]
    for item in attachments:
        if item.outcome != "fetched" or item.text is None:
            continue
        if item.kind == "voice":
            continue  # the transcript is in the line already
        name = safe_name(item.name)
        cut = "\n(the file was cut: only its beginning is shown)" if item.cut else ""
        blocks.append(f'<file name="{name}">\n{item.text}\n</file>{cut}')
    return "\n\n".join(block for block in blocks if block)


def own_words(line: str) -> str:
    """A message's line without the marks of what came with it: the words the user wrote (a caption), if any."""
    return "\n".join(part for part in line.splitlines() if not (part.startswith("[") and part.endswith("]")))


def has_photo(attachments: Sequence[Attachment]) -> bool:
    return any(item.kind == "photo" and item.image is not None for item in attachments)


def _mark(item: Attachment) -> str:
    if item.kind == "sticker":
        return item.emoji or "[sticker]"
    if item.kind == "photo" and item.outcome == "fetched":
        return PHOTO_MARK
    if item.kind == "voice" and item.outcome == "fetched":
        return f"{VOICE_MARK} {item.text}" if item.text else VOICE_MARK  # the transcript is the message
    name = safe_name(item.name) or item.kind
    noun = {"photo": "photo", "voice": "voice message", "file": "file"}[item.kind]
    if item.outcome == "fetched":
        return f"[file {name}]"
    return f"[{noun} {name}, {_REASONS_EN[item.outcome]}]" if item.name else f"[{noun}, {_REASONS_EN[item.outcome]}]"


def safe_name(name: str) -> str:
    """A file name as shown in a line or markup: one line, no quotes or brackets, at most 80 characters."""
    cleaned = clean_text(name or "", 80)
    return "".join(ch for ch in cleaned if ch not in '"<>[]\n\r').strip()


def limit_text(item: Attachment) -> str:
    limit = {"photo": MAX_IMAGE_BYTES, "voice": MAX_AUDIO_BYTES}.get(item.kind, MAX_TEXT_FILE_BYTES)
    return f"{limit // 1024} KB" if limit < 1024 * 1024 else f"{limit // (1024 * 1024)} MB"
