"""The access settings: the lists every bot process starts from, and the operators.

Part of :class:`shared.settings.Settings` (its base class), kept here beside the rule they feed. Each
list is comma- or space-separated; users and operators name their platform (``telegram:123``,
``discord:456``), the platform-specific lists hold plain ids. Operators change the lists from chat
(``/access``); those changes live in the database, on top of these.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeGuard

from pydantic import Field, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode

from shared.access.requests import parse_target, parse_user
from shared.access.rule import ALLOW, BLOCK, CLOSED, KINDS, OPEN, Entry, Policy
from shared.errors import InvalidCommand

IdList = Annotated[tuple[str, ...], NoDecode]
ACCESS_LISTS = {
    "access_allow_users": (ALLOW, "user"), "access_block_users": (BLOCK, "user"),
    "discord_allow_guilds": (ALLOW, "guild"), "discord_block_guilds": (BLOCK, "guild"),
    "discord_allow_channels": (ALLOW, "channel"), "discord_block_channels": (BLOCK, "channel"),
    "discord_allow_roles": (ALLOW, "role"), "discord_block_roles": (BLOCK, "role"),
    "telegram_allow_chats": (ALLOW, "chat"), "telegram_block_chats": (BLOCK, "chat"),
}
"""Each list setting: the list it feeds and the kind of id it holds."""
DEFAULT_REFRESH_SECONDS = 10.0


class AccessSettings(BaseSettings):
    """Who may talk to the bots (see :mod:`shared.access.rule` for how the lists combine)."""

    access_default: Literal["open", "closed"] = Field(
        OPEN, description="open: a platform without allow entries lets everyone in; closed: only the allow lists")
    access_operators: IdList = Field((), description="platform:id of the people who may change the lists")
    access_allow_users: IdList = ()
    access_block_users: IdList = ()
    discord_allow_guilds: IdList = ()
    discord_block_guilds: IdList = ()
    discord_allow_channels: IdList = ()
    discord_block_channels: IdList = ()
    discord_allow_roles: IdList = ()
    discord_block_roles: IdList = ()
    telegram_allow_chats: IdList = ()
    telegram_block_chats: IdList = ()
    access_refresh_seconds: Annotated[float, Field(ge=0, le=3600)] = DEFAULT_REFRESH_SECONDS
    """How long a bot process trusts the lists it read from the database before reading them again."""

    @field_validator("access_default", mode="before")
    @classmethod
    def _default_any_case(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("access_operators", "access_allow_users", "access_block_users", mode="before")
    @classmethod
    def _users(cls, value: object) -> object:
        return tuple(":".join(parse_user(item)) for item in _items(value)) if _is_list(value) else value

    @field_validator(*[name for name in ACCESS_LISTS if not name.endswith("_users")], mode="before")
    @classmethod
    def _ids(cls, value: object, info: ValidationInfo) -> object:
        if not _is_list(value):
            return value
        kind = ACCESS_LISTS[str(info.field_name)][1]
        ids = []
        for item in _items(value):
            try:
                ids.append(parse_target(kind, item, "")[1])
            except InvalidCommand:
                raise ValueError(f"{item!r} is not a {kind} id (digits{', a leading - for groups' * (kind == 'chat')})"
                                 ) from None
        return tuple(ids)

    def access_policy(self) -> Policy:
        """The lists as the settings give them (the database's entries are added on top)."""
        entries = set()
        for name, (effect, kind) in ACCESS_LISTS.items():
            for item in getattr(self, name):
                platform, value = item.split(":", 1) if kind == "user" else (KINDS[kind][0], item)
                entries.add(Entry(effect, kind, platform, value))
        operators = frozenset(_platform_and_id(item) for item in self.access_operators)
        return Policy(frozenset(entries), operators, CLOSED if self.access_default == CLOSED else OPEN)


def setting_of(entry: Entry) -> str:
    """The variable a settings entry comes from (to tell an operator where to change it)."""
    for name, (effect, kind) in ACCESS_LISTS.items():
        if (effect, kind) == (entry.effect, entry.kind) and (kind == "user" or name.startswith(entry.platform)):
            return name.upper()
    return "ACCESS_*"


def _is_list(value: object) -> TypeGuard[str | list[object] | tuple[object, ...]]:
    """Whether a list setting came as a list to read (a comma- or space-separated string, or a sequence)."""
    return isinstance(value, str | list | tuple)


def _items(value: str | list[object] | tuple[object, ...]) -> list[str]:
    items = value.replace(",", " ").split() if isinstance(value, str) else value
    return [str(item).strip() for item in items if str(item).strip()]


def _platform_and_id(user: str) -> tuple[str, str]:
    """An operator as the settings hold it (``platform:id``, already checked) split in two."""
    platform, user_id = user.split(":", 1)
    return platform, user_id
