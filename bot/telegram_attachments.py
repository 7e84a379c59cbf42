"""What a Telegram message carries besides text, fetched through the Bot API's own ``getFile`` only.

Photos (the size nearest the model's cap), image documents, small text documents, stickers (their emoji), voice
notes and audio: each is checked by the size and type Telegram states before anything is downloaded, downloaded
within :data:`~shared.attachments.kinds.FETCH_SECONDS` into memory (never to disk), and handed on as
:class:`~shared.attachments.kinds.Attachment` values (:mod:`shared.attachments`).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from telegram import Audio, Bot, Document, Message, PhotoSize, Voice
from telegram.error import TelegramError

from shared.attachments.files import UnreadableText, read_text
from shared.attachments.images import IMAGE_MAX_SIDE, UnreadableImage, for_model
from shared.attachments.kinds import FETCH_SECONDS, Attachment, Kind, admit, file_kind

log = logging.getLogger(__name__)


def carries_attachment(message: Message) -> bool:
    """Whether the message has something besides its text that Mnemo takes."""
    return bool(message.photo or message.sticker or message.voice or message.audio or message.document)


async def attachments_of(bot: Bot, message: Message, *, hearing: bool = False,
                         allowed: bool = True) -> tuple[Attachment, ...]:
    """The message's attachments, fetched and made fit for the turn (a failure is an attachment too, not an error);
    voice notes are fetched only when there is a transcriber (``hearing``), and nothing is fetched when the sender's
    allowance is spent (not ``allowed``)."""
    if message.sticker is not None:
        return (Attachment(kind="sticker", emoji=message.sticker.emoji or ""),)
    if message.photo:
        return (await _photo(bot, _nearest_size(message.photo), allowed=allowed),)
    sound: Voice | Audio | None = message.voice or message.audio
    if sound is not None:
        name = getattr(sound, "file_name", None) or "voice.ogg"
        return (await _voice(bot, sound.file_id, name, sound.mime_type or "audio/ogg", sound.file_size,
                             _seconds(sound.duration or 0), hearing=hearing, allowed=allowed),)
    if message.document is not None:
        return (await _document(bot, message.document, hearing=hearing, allowed=allowed),)
    return ()


def _nearest_size(sizes: tuple[PhotoSize, ...]) -> PhotoSize:
    """The smallest size at least as big as the model's cap (else the biggest): less to download, nothing lost."""
    ordered = sorted(sizes, key=lambda size: size.width * size.height)
    return next((size for size in ordered if max(size.width, size.height) >= IMAGE_MAX_SIDE), ordered[-1])


def _seconds(duration: int | timedelta) -> float:
    """A duration as python-telegram-bot gives it: whole seconds, or a timedelta once ``PTB_TIMEDELTA`` is set."""
    return duration.total_seconds() if isinstance(duration, timedelta) else float(duration)


async def _photo(bot: Bot, size: PhotoSize | Document, name: str = "photo.jpg", mime: str = "image/jpeg", *,
                 allowed: bool = True) -> Attachment:
    refused = admit("photo", size.file_size, allowed=allowed)
    if refused is not None:
        return Attachment(kind="photo", name=name, mime_type=mime, size=size.file_size, outcome=refused)
    data = await _download(bot, size.file_id)
    if data is None:
        return Attachment(kind="photo", name=name, mime_type=mime, size=size.file_size, outcome="failed")
    try:
        image = await asyncio.to_thread(for_model, data)
    except UnreadableImage as exc:
        log.info("a photo could not be decoded: %s", exc)
        return Attachment(kind="photo", name=name, mime_type=mime, size=len(data), outcome="unread_type")
    return Attachment(kind="photo", name=name, mime_type=mime, size=len(data), image=image)


async def _voice(bot: Bot, file_id: str, name: str, mime: str, size: int | None, duration: float, *,
                 hearing: bool, allowed: bool = True) -> Attachment:
    refused = admit("voice", size, allowed=allowed) if hearing else "unheard"
    if refused is not None:
        return Attachment(kind="voice", name=name, mime_type=mime, size=size, outcome=refused)
    data = await _download(bot, file_id)
    if data is None:
        return Attachment(kind="voice", name=name, mime_type=mime, size=size, outcome="failed")
    return Attachment(kind="voice", name=name, mime_type=mime, size=len(data), audio=data, duration=duration)


async def _document(bot: Bot, document: Document, *, hearing: bool = False, allowed: bool = True) -> Attachment:
    name, mime = document.file_name or "", document.mime_type or ""
    kind: Kind | None = file_kind(name, mime)
    if kind == "photo":
        return await _photo(bot, document, name, mime, allowed=allowed)
    if kind == "voice":
        return await _voice(bot, document.file_id, name, mime, document.file_size, 0.0, hearing=hearing,
                            allowed=allowed)
    refused = admit("file", document.file_size, readable=kind is not None, allowed=allowed)
    if refused is not None:
        return Attachment(kind="file", name=name, mime_type=mime, size=document.file_size, outcome=refused)
    data = await _download(bot, document.file_id)
    if data is None:
        return Attachment(kind="file", name=name, mime_type=mime, size=document.file_size, outcome="failed")
    try:
        text, cut = read_text(data)
    except UnreadableText as exc:
        log.info("a text file could not be read: %s", exc)
        return Attachment(kind="file", name=name, mime_type=mime, size=len(data), outcome="unread_type")
    return Attachment(kind="file", name=name, mime_type=mime, size=len(data), text=text, cut=cut)


async def _download(bot: Bot, file_id: str) -> bytes | None:
    """The file's bytes through ``getFile`` and the Bot API's file URL, within the time limit (None: it failed)."""
    async def fetch() -> bytes:
        return bytes(await (await bot.get_file(file_id)).download_as_bytearray())

    try:
        return await asyncio.wait_for(fetch(), FETCH_SECONDS)
    except (TelegramError, TimeoutError, OSError) as exc:
        log.warning("an attachment could not be fetched from Telegram: %s", exc)
        return None
