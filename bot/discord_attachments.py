"""What a Discord message carries besides text: attachments fetched from Discord's own CDN only, stickers by name.

Each attachment is checked by the size and content type Discord states before anything is downloaded, fetched
with discord.py's ``Attachment.read()`` (only from Discord's CDN hosts, or the API host the bot was pointed at)
within :data:`~shared.attachments.kinds.FETCH_SECONDS`, in memory, and handed on as
:class:`~shared.attachments.kinds.Attachment` values (:mod:`shared.attachments`). Voice messages are audio
attachments with the voice-message flag.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from urllib.parse import urlsplit

import discord

from bot.discord_py_patches import api_base_url
from shared.attachments.files import UnreadableText, read_text
from shared.attachments.images import UnreadableImage, for_model
from shared.attachments.kinds import FETCH_SECONDS, Attachment, Kind, admit, file_kind
from shared.attachments.texts import turn_line
from shared.conversation.messages import IncomingMessage

log = logging.getLogger(__name__)

MAX_ATTACHMENTS = 4
"""The attachments of one message that are looked at (Discord allows ten)."""
CDN_HOSTS = frozenset({"cdn.discordapp.com", "media.discordapp.net"})


def carries_attachment(message: discord.Message) -> bool:
    return bool(message.attachments or message.stickers)


async def with_attachments(incoming: IncomingMessage, message: discord.Message, *,
                           hearing: bool = False, allowed: bool = True) -> IncomingMessage:
    """``incoming`` with the message's attachments fetched, and its text the round's line; voice is fetched only
    when there is a transcriber (``hearing``), and nothing when the sender's allowance is spent (not ``allowed``)."""
    attached = [Attachment(kind="sticker", name=sticker.name, emoji=f"[sticker {sticker.name}]")
                for sticker in message.stickers]
    voice = message.flags.voice
    for item in message.attachments[:MAX_ATTACHMENTS]:
        attached.append(await _attachment(item, voice=voice, hearing=hearing, allowed=allowed))
    found = tuple(attached)
    return replace(incoming, text=turn_line(incoming.text, found), attachments=found)


async def _attachment(item: discord.Attachment, *, voice: bool, hearing: bool, allowed: bool = True) -> Attachment:
    name, mime = item.filename, (item.content_type or "").split(";")[0].strip()
    found = "voice" if voice else file_kind(name, mime)
    if found == "voice" and not hearing:
        return Attachment(kind="voice", name=name, mime_type=mime, size=item.size, outcome="unheard")
    kind: Kind = found or "file"  # a file of no known kind is named, not read: admit refuses it
    refused = admit(kind, item.size, readable=found is not None, allowed=allowed)
    if refused is not None:
        return Attachment(kind=kind, name=name, mime_type=mime, size=item.size, outcome=refused)
    data = await _download(item)
    if data is None:
        return Attachment(kind=kind, name=name, mime_type=mime, size=item.size, outcome="failed")
    if kind == "voice":
        return Attachment(kind="voice", name=name, mime_type=mime, size=len(data), audio=data,
                          duration=float(item.duration or 0))
    try:
        if kind == "photo":
            return Attachment(kind="photo", name=name, mime_type=mime, size=len(data),
                              image=await asyncio.to_thread(for_model, data))
        text, cut = read_text(data)
    except (UnreadableImage, UnreadableText) as exc:
        log.info("an attachment could not be read: %s", exc)
        return Attachment(kind=kind, name=name, mime_type=mime, size=len(data), outcome="unread_type")
    return Attachment(kind="file", name=name, mime_type=mime, size=len(data), text=text, cut=cut)


def from_discord(url: str) -> bool:
    """Whether ``url`` is on Discord's CDN (or the API host the bot talks to): nothing else is ever fetched."""
    host = urlsplit(url).hostname or ""
    return host in CDN_HOSTS or host == urlsplit(api_base_url()).hostname


async def _download(item: discord.Attachment) -> bytes | None:
    if not from_discord(item.url):
        log.warning("an attachment URL outside Discord's CDN was not fetched")
        return None
    try:
        return await asyncio.wait_for(item.read(), FETCH_SECONDS)
    except (discord.HTTPException, TimeoutError, OSError) as exc:
        log.warning("an attachment could not be fetched from Discord: %s", exc)
        return None
