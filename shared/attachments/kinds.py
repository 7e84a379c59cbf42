"""The platform-neutral shape of an attachment and the rules decided before anything is downloaded.

A front-end describes what came with a message as :class:`Attachment` values: what kind it is, its name,
type and size as the platform states them, and (once fetched) what was made of it — the image re-encoded
for the model, the text of a small text file. :func:`admit` decides, from the platform's own numbers,
whether a file is fetched at all, so nothing too big or of an unread type is ever downloaded. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["photo", "sticker", "voice", "file"]
Outcome = Literal["fetched", "too_large", "unread_type", "failed", "unheard", "not_transcribed", "over_limit"]

MAX_IMAGE_BYTES = 10 * 1024 * 1024
"""The largest photo fetched (Telegram compresses photos well below; Discord allows bigger uploads)."""
MAX_TEXT_FILE_BYTES = 512 * 1024
"""The largest text file fetched; what is read of it is then capped by :data:`TEXT_FILE_TOKEN_CAP`."""
MAX_AUDIO_BYTES = 20 * 1024 * 1024
"""The largest voice note or audio file fetched (the Bot API's own download limit)."""
FETCH_SECONDS = 20.0
"""The whole download of one attachment, from the platform's file API, within this time."""
TEXT_FILE_TYPES = {".txt": "text/plain", ".md": "text/markdown", ".markdown": "text/markdown", ".csv": "text/csv",
                   ".json": "application/json", ".log": "text/plain"}
"""The files read into the message (by name, or by the platform's MIME type)."""
IMAGE_TYPES = ("image/jpeg", "image/png", "image/webp", "image/gif")
AUDIO_TYPES = ("audio/ogg", "audio/mpeg", "audio/mp4", "audio/x-m4a", "audio/wav", "audio/x-wav", "audio/webm",
               "audio/aac", "audio/flac")


@dataclass(frozen=True)
class Attachment:
    """One thing sent with a message, and what was made of it."""

    kind: Kind
    name: str = ""
    mime_type: str = ""
    size: int | None = None
    outcome: Outcome = "fetched"
    emoji: str = ""
    """A sticker's emoji (a sticker is its emoji)."""
    image: bytes | None = None
    """A photo re-encoded for the model (JPEG, downscaled, no metadata): :func:`shared.attachments.images.for_model`."""
    text: str | None = None
    """A text file's text as read (already cut to the cap), or a voice note's transcript."""
    cut: bool = False
    """Only the start of the text file was read."""
    audio: bytes | None = None
    """A voice note fetched and not transcribed yet (the conversation service hears it, then drops the bytes)."""
    duration: float = 0.0
    """A voice note's length in seconds, as the platform states it."""


def file_kind(name: str, mime_type: str) -> Kind | None:
    """What a document is taken for: an image, a text file, audio; None: a file that is named, not read."""
    mime = (mime_type or "").lower()
    if mime in IMAGE_TYPES:
        return "photo"
    if mime in AUDIO_TYPES:
        return "voice"
    if _suffix(name) in TEXT_FILE_TYPES or mime in TEXT_FILE_TYPES.values():
        return "file"
    return None


def admit(kind: Kind, size: int | None, *, readable: bool = True, allowed: bool = True) -> Outcome | None:
    """None when the attachment may be fetched, else why not (decided before any download: the platform's size,
    and ``allowed``: whether the sender's allowance of fetches, as for messages, has room)."""
    if not readable:
        return "unread_type"
    limit = {"photo": MAX_IMAGE_BYTES, "voice": MAX_AUDIO_BYTES, "file": MAX_TEXT_FILE_BYTES}.get(kind)
    if limit is not None and size is not None and size > limit:
        return "too_large"
    return None if allowed else "over_limit"


def _suffix(name: str) -> str:
    dot = (name or "").rfind(".")
    return name[dot:].lower() if dot >= 0 else ""
