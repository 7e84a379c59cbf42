"""A turn's attachments on the hot path: the image for the one call, the user's notices, the round's line.

The rules themselves are :mod:`shared.attachments`; this module only joins them to a turn: which photo goes to the
model (the first; one image a message), what the user is told (:class:`Notice` values), and the round's line once the
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
from shared.conversation.notice_texts import Notice, NoticeCode

OUTCOME_NOTICES = {"too_large": NoticeCode.FILE_TOO_LARGE, "unread_type": NoticeCode.FILE_UNREAD_TYPE,
                   "failed": NoticeCode.FILE_NOT_FETCHED, "unheard": NoticeCode.VOICE_UNHEARD,
                   "not_transcribed": NoticeCode.VOICE_NOT_TRANSCRIBED, "over_limit": NoticeCode.FILES_OVER_LIMIT}
"""What the user is told of an attachment that was not read, by its outcome."""
NAMELESS = frozenset({NoticeCode.PHOTO_UNSEEN, NoticeCode.VOICE_UNHEARD, NoticeCode.VOICE_NOT_TRANSCRIBED})
"""The notices that name no file (there is one photo a message, and a voice note has no name)."""


class Transcriber(Protocol):
    """What hears a voice note (:class:`shared.llm.transcription.Transcriber`; a pure rule imports no LLM SDK)."""

    async def transcribe(self, audio: bytes, name: str, mime_type: str, *, duration: float = 0.0) -> str | None:
        """What was said; None when it could not be heard."""


def image_for_model(attachments: Sequence[Attachment]) -> str | None:
    """The ``data:`` URL of the message's photo (None: it has none that could be read)."""
    image = next((item.image for item in attachments if item.kind == "photo" and item.image is not None), None)
    return data_url(image) if image is not None else None


def attachment_notices(attachments: Sequence[Attachment], *, image_seen: bool) -> tuple[Notice, ...]:
    """What the user is told of their attachments (a photo the model could not see, a file not read), each once."""
    notices: list[Notice] = []
    for item in attachments:
        code = OUTCOME_NOTICES.get(item.outcome)
        if code is None and item.kind == "photo" and item.image is not None and not image_seen:
            code = NoticeCode.PHOTO_UNSEEN
        elif code is None and item.cut:
            code = NoticeCode.FILE_CUT
        if code is not None:
            notices.append(_notice(code, item))
    return tuple(dict.fromkeys(notices))


def _notice(code: NoticeCode, item: Attachment) -> Notice:
    """The notice ``code`` of ``item``: its name (empty: the reader's word for a file) and, too large, the limit."""
    if code in NAMELESS:
        return Notice(code)
    if code is NoticeCode.FILE_TOO_LARGE:
        return Notice.of(code, name=texts.safe_name(item.name), limit=texts.limit_text(item))
    return Notice.of(code, name=texts.safe_name(item.name))


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
