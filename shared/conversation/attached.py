"""A turn's attachments on the hot path: the image for the one call, the user's notice, the round's line.

The rules themselves are :mod:`shared.attachments`; this module only joins them to a turn: which photo goes to the
model (the first; one image a message), what the user is told in their language, and the round's line once the
model said what the photo shows (kept with the round, recallable, and the source of what is remembered from it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from shared.attachments import texts
from shared.attachments.images import data_url
from shared.attachments.kinds import Attachment, Outcome
from shared.conversation.messages import IncomingMessage
from shared.text import Language, language_of


class Transcriber(Protocol):
    """What hears a voice note (:class:`shared.llm.transcription.Transcriber`; a pure rule imports no LLM SDK)."""

    async def transcribe(self, audio: bytes, name: str, mime_type: str, *, duration: float = 0.0) -> str | None:
        """What was said; None when it could not be heard."""


def image_for_model(attachments: Sequence[Attachment]) -> str | None:
    """The ``data:`` URL of the message's photo (None: it has none that could be read)."""
    image = next((item.image for item in attachments if item.kind == "photo" and item.image is not None), None)
    return data_url(image) if image is not None else None


def answers_in_chinese(line: str, locale: str | None) -> bool:
    """The user's language: their words when they wrote some (a caption), else their platform's locale."""
    words = "\n".join(part for part in line.splitlines() if not (part.startswith("[") and part.endswith("]")))
    return language_of(words, locale) is Language.ZH


def attachment_notice(attachments: Sequence[Attachment], line: str, locale: str | None, *,
                      image_seen: bool) -> str | None:
    """What the user is told of their attachments (a photo the model could not see, a file not read)."""
    if not attachments:
        return None
    return texts.notice(attachments, image_seen=image_seen, chinese=answers_in_chinese(line, locale))


def round_line(line: str, description: str | None, *, image_seen: bool) -> str:
    """The round's line: the photo's mark with what it shows, when the model saw it and said so."""
    return texts.described(line, description) if image_seen else line


async def hear(message: IncomingMessage, transcriber: Transcriber | None) -> IncomingMessage:
    """``message`` with its fetched voice notes transcribed (the transcript is the message; the audio is dropped)."""
    waiting = [item for item in message.attachments if item.kind == "voice" and item.audio is not None]
    if not waiting:
        return message
    heard: list[Attachment] = []
    for item in message.attachments:
        if item.kind == "voice" and item.audio is not None:  # one of ``waiting``
            said = (await transcriber.transcribe(item.audio, item.name, item.mime_type, duration=item.duration)
                    if transcriber is not None else None)
            outcome: Outcome = "fetched" if said else ("not_transcribed" if transcriber is not None else "unheard")
            item = replace(item, audio=None, text=said, outcome=outcome)
        heard.append(item)
    changed = [item for item in heard if item.kind == "voice" and item not in message.attachments]
    return replace(message, text=texts.heard_line(message.text, changed), attachments=tuple(heard))
