"""Who the Discord bot answers: each addressed message and each slash command passes the access lists
first (:mod:`shared.access`), before anything is stored or a model is called.

A refused direct message is answered with the refusal; a refused mention in a server gets no answer
at all (a stranger cannot make the bot post in a channel). A refused slash command is answered with
the refusal, seen only by its sender, unless it is about data the bot already holds of them
(``/memories``, ``/export``, ``/forget``…). The buttons under those answers belong to their owner and
need no further check.
"""

from __future__ import annotations

import asyncio
import logging

import discord
from discord import app_commands

from shared.access.rule import Facts
from shared.access.service import AccessService
from shared.access.texts import refusal_text
from shared.conversation.messages import IncomingMessage
from shared.log_context import hash_user

log = logging.getLogger(__name__)


def role_ids(user: discord.abc.User) -> frozenset[str]:
    """The sender's roles in the server (its @everyone role included), when the bot knows that server."""
    if not isinstance(user, discord.Member) or not isinstance(user.guild, discord.Guild):
        return frozenset()
    return frozenset(str(role.id) for role in user.roles)


def message_facts(message: discord.Message) -> Facts:
    guild_id = message.guild.id if message.guild is not None else getattr(message.channel, "guild_id", None)
    parent = getattr(message.channel, "parent_id", None)
    return Facts("discord", str(message.author.id), chat_id=str(message.channel.id), private=guild_id is None,
                 guild_id=_text(guild_id), parent_id=_text(parent), role_ids=role_ids(message.author))


def interaction_facts(interaction: discord.Interaction) -> Facts:
    parent = getattr(interaction.channel, "parent_id", None)
    return Facts("discord", str(interaction.user.id), chat_id=_text(interaction.channel_id),
                 private=interaction.guild_id is None, guild_id=_text(interaction.guild_id), parent_id=_text(parent),
                 role_ids=role_ids(interaction.user))


async def admit_message(access: AccessService, message: discord.Message, locale: str) -> bool:
    """True when the message may be answered; otherwise the refusal in a DM, silence in a server."""
    admission = await asyncio.to_thread(access.admit, message_facts(message))
    if admission.allowed:
        return True
    log.info("Discord message refused (%s) from user %s", admission.decision.reason,
             hash_user("discord", str(message.author.id)))
    if isinstance(message.channel, discord.DMChannel):
        await message.channel.send(refusal_text(locale, known=admission.known))
    return False


async def blocked_since(access: AccessService, client: discord.Client, incoming: IncomingMessage) -> bool:
    """Whether an answer owed since before a restart would go to someone blocked meanwhile (it is not given).
    The server comes from the client's cache; roles are not known here, so only role blocks are missed."""
    guild = getattr(client.get_channel(int(incoming.chat_id)), "guild", None)
    facts = Facts("discord", incoming.user_id, chat_id=incoming.chat_id, private=incoming.is_private,
                  guild_id=_text(getattr(guild, "id", None)))
    return await asyncio.to_thread(access.blocked, facts)


class AccessTree(app_commands.CommandTree):
    """The command tree, with every slash command passing the access lists first."""

    def __init__(self, client: discord.Client, access: AccessService) -> None:
        super().__init__(client)
        self.access = access

    async def interaction_check(self, interaction: discord.Interaction, /) -> bool:
        command = interaction.command
        if command is None:  # not one of ours: the tree answers nothing
            return True
        admission = await asyncio.to_thread(self.access.admit, interaction_facts(interaction),
                                            command.qualified_name)
        if admission.allowed:
            return True
        log.info("Discord /%s refused (%s) for user %s", command.qualified_name, admission.decision.reason,
                 hash_user("discord", str(interaction.user.id)))
        await interaction.response.send_message(refusal_text(interaction.locale.value, known=admission.known),
                                                ephemeral=True)
        return False


def _text(value: object) -> str | None:
    return None if value is None else str(value)
