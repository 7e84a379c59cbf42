"""The operators' ``/access`` command read into a request, and the ids the lists hold. Pure.

``/access`` or ``/access list``; ``/access allow|block|remove <kind> <target>`` with the kinds of
:data:`shared.access.rule.KINDS` (Chinese words too: 允许, 屏蔽, 移除, 列表; 用户, 群, 服务器, 频道, 身份组).
A target is an id (``123``, a Telegram chat's ``-100…``), a user as ``platform:id`` (``telegram:42``;
a bare id means the platform the command is typed on), or a Discord mention (``<@42>``, ``<#7>``,
``<@&9>``) as the client inserts it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shared.access.rule import ALLOW, BLOCK, KINDS, Entry
from shared.errors import InvalidCommand

LIST, REMOVE = "list", "remove"
ACTIONS = (LIST, ALLOW, BLOCK, REMOVE)
ACTION_WORDS = {
    "list": LIST, "ls": LIST, "列表": LIST, "查看": LIST,
    "allow": ALLOW, "允许": ALLOW,
    "block": BLOCK, "deny": BLOCK, "屏蔽": BLOCK, "拉黑": BLOCK,
    "remove": REMOVE, "rm": REMOVE, "delete": REMOVE, "移除": REMOVE, "删除": REMOVE,
}
KIND_WORDS = {
    "user": "user", "users": "user", "用户": "user",
    "chat": "chat", "chats": "chat", "group": "chat", "群": "chat", "群组": "chat", "聊天": "chat",
    "guild": "guild", "guilds": "guild", "server": "guild", "服务器": "guild",
    "channel": "channel", "channels": "channel", "频道": "channel",
    "role": "role", "roles": "role", "身份组": "role", "角色": "role",
}
SNOWFLAKE = re.compile(r"\d{1,20}")
"""A Discord id, a Telegram user id."""
CHAT_ID = re.compile(r"-?\d{1,20}")
"""A Telegram chat id (groups are negative)."""
MENTION = re.compile(r"<(?:@!?|@&|#)(\d{1,20})>")
MAX_ARGUMENT_CHARS = 200


@dataclass(frozen=True)
class AccessRequest:
    """What an operator asked: ``list``, or ``allow``/``block``/``remove`` of one target."""

    action: str
    kind: str | None = None
    platform: str | None = None
    value: str | None = None

    def entry(self, effect: str) -> Entry:
        assert self.kind is not None and self.platform is not None and self.value is not None
        return Entry(effect, self.kind, self.platform, self.value)


def parse_request(text: str, platform: str) -> AccessRequest:
    """``text`` (what follows ``/access``), typed on ``platform``, as a request; :class:`InvalidCommand` if not one."""
    words = text.split() if isinstance(text, str) and len(text) <= MAX_ARGUMENT_CHARS else None
    if words is None:
        raise InvalidCommand("access_usage")
    if not words:
        return AccessRequest(LIST)
    action = ACTION_WORDS.get(words[0].lower())
    if action == LIST and len(words) == 1:
        return AccessRequest(LIST)
    if action in (None, LIST) or len(words) != 3:
        raise InvalidCommand("access_usage")
    kind = KIND_WORDS.get(words[1].lower())
    if kind is None:
        raise InvalidCommand("access_usage")
    target_platform, value = parse_target(kind, words[2], platform)
    return AccessRequest(action, kind, target_platform, value)


def parse_target(kind: str, text: str, platform: str) -> tuple[str, str]:
    """The platform and id ``text`` names as a ``kind`` (a bare user id belongs to ``platform``)."""
    written = text.strip()
    if (mention := MENTION.fullmatch(written)) is not None:
        written = f"discord:{mention.group(1)}"
    named, _, rest = written.partition(":")
    if rest and named.lower() in KINDS[kind]:
        target_platform, value = named.lower(), rest
    elif len(KINDS[kind]) == 1:
        target_platform, value = KINDS[kind][0], written
    else:
        target_platform, value = platform, written
    pattern = CHAT_ID if kind == "chat" else SNOWFLAKE
    if target_platform not in KINDS[kind] or not pattern.fullmatch(value):
        raise InvalidCommand("access_bad_target", kind=kind, platforms=", ".join(KINDS[kind]))
    return target_platform, str(int(value))


def parse_user(text: str) -> tuple[str, str]:
    """``telegram:42`` / ``discord:123`` (settings name the platform: they are read by every bot)."""
    named, colon, value = text.strip().partition(":")
    if not colon or named.lower() not in KINDS["user"] or not SNOWFLAKE.fullmatch(value.strip()):
        raise ValueError(f"{text.strip()!r} is not platform:id (e.g. telegram:123456, discord:80351110224678912)")
    return named.lower(), str(int(value.strip()))
