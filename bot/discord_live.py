"""A reply on its way to one Discord channel: the first words posted, the message edited as the reply grows
(:mod:`bot.live_reply` keeps the pace), then edited into the final reply, whose further parts follow as
messages of their own. Nothing shown yet: the reply is posted as before (a reply in a server, a message in a DM).
"""

from __future__ import annotations

import logging

import discord

from bot.discord_render import fit

log = logging.getLogger(__name__)


class ShownReply:
    """The message a reply is shown in while it is written (none until the first words)."""

    def __init__(self, message: discord.Message, *, private: bool) -> None:
        self.message, self.private = message, private
        self.sent: discord.Message | None = None

    async def show(self, text: str) -> None:
        """The reply so far: the first words posted, then the message edited."""
        if self.sent is None:
            self.sent = await self._post(fit(text), first=True)
        else:
            await self.sent.edit(content=fit(text))

    async def finish(self, pieces: list[str]) -> None:
        """The final reply (no pieces: a duplicate, nothing to say): the shown message becomes its first piece."""
        if self.sent is None:
            for index, piece in enumerate(pieces):
                await self._post(piece, first=index == 0)
            return
        if not pieces:
            await self.withdraw()
            return
        first, *rest = pieces
        if first != self.sent.content:
            await self.sent.edit(content=first)
        for piece in rest:
            await self.message.channel.send(piece)

    async def withdraw(self) -> None:
        """The turn failed: the words shown so far go (the user is told what happened in a message of its own)."""
        if self.sent is None:
            return
        try:
            await self.sent.delete()
        except discord.HTTPException as exc:
            log.warning("could not delete a reply shown in part: %s", exc)
        self.sent = None

    async def _post(self, content: str, *, first: bool) -> discord.Message:
        if first and not self.private:
            return await self.message.reply(content)
        return await self.message.channel.send(content)
