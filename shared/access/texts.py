"""The words of access: the answer to someone the bot is not open to, and ``/access`` for operators.

Chinese for a locale starting with ``zh``, English otherwise, chosen as for the memory commands
(:func:`shared.text.is_chinese`): Telegram's language of the user, Discord's locale of the
interaction, or the language a Discord message is written in.
"""

from __future__ import annotations

from datetime import UTC
from typing import Any

from shared.text import is_chinese

_KINDS = {
    "user": ("user", "用户"),
    "chat": ("Telegram chat", "Telegram 群聊"),
    "guild": ("Discord server", "Discord 服务器"),
    "channel": ("Discord channel", "Discord 频道"),
    "role": ("Discord role", "Discord 身份组"),
}
_LISTS = {"allow": ("allow list", "允许名单"), "block": ("block list", "屏蔽名单")}
_PLATFORMS = {"discord": "Discord", "telegram": "Telegram"}


def refusal_text(locale: str | None, *, known: bool) -> str:
    """Said to someone the bot is not open to (in private; in groups the bot stays silent)."""
    zh = is_chinese(locale)
    head = ("抱歉，我不能在这里和你聊天：这个机器人的运营者没有向你开放。" if zh else
            "Sorry, I can't chat with you here: whoever runs this bot hasn't opened it to you.")
    if known:
        tail = ("我已经知道的关于你的内容仍然由你掌控：/memories 查看，/export 导出，/forget all 全部删除。" if zh else
                "What I already know about you is still yours: /memories shows it, /export downloads it, "
                "/forget all deletes it.")
    else:
        tail = "我没有保存任何关于你的内容。" if zh else "I keep nothing about you."
    return f"{head}\n{tail}"


def target_text(entry: Any, locale: str | None) -> str:
    """``user telegram:42``, ``Discord server 123``."""
    kind = _KINDS[entry.kind][is_chinese(locale)]
    value = f"{entry.platform}:{entry.value}" if entry.kind == "user" else entry.value
    return f"{kind} {value}"


def listing_text(listing: Any, locale: str | None) -> str:
    """``/access list``: who is let in on each platform, every entry and where it comes from, the operators."""
    zh = is_chinese(locale)
    lines = []
    for platform, name in _PLATFORMS.items():
        if platform in listing.restricted:
            lines.append(f"{name}：只有允许名单里的可以使用" if zh else f"{name}: only the allow list gets in")
        else:
            lines.append(f"{name}：除屏蔽名单外所有人都可以使用" if zh else f"{name}: open to all but the block list")
    for effect, (english, chinese) in _LISTS.items():
        listed = [item for item in listing.entries if item.entry.effect == effect]
        lines.append(f"{chinese}（{len(listed)}）：" if zh else f"{english.capitalize()} ({len(listed)}):")
        lines += [f"• {target_text(item.entry, locale)} · {_origin(item, zh)}" for item in listed]
    operators = ", ".join(listing.operators) or ("（无）" if zh else "(none)")
    lines.append(f"运营者：{operators}" if zh else f"Operators: {operators}")
    return "\n".join(lines)


def change_text(change: Any, locale: str | None) -> str:
    """What ``/access allow|block|remove`` did, and what it means for the platform."""
    zh = is_chinese(locale)
    target, (english, chinese) = target_text(change.entry, locale), _LISTS[change.entry.effect]
    if change.action == "remove":
        lines = [f"已把{target}从{chinese}中移除。" if zh else f"Took {target} off the {english}."]
    elif change.changed:
        lines = [f"已把{target}加入{chinese}。" if zh else f"Put {target} on the {english}."]
    else:
        lines = [f"{target}已经在{chinese}里了。" if zh else f"{target} is already on the {english}."]
    if change.overruled_by:
        lines.append(f"注意：设置 {change.overruled_by} 仍然列着它，以设置为准。" if zh else
                     f"Note: the setting {change.overruled_by} still lists it, and that still applies.")
    name = _PLATFORMS[change.entry.platform]
    if change.restricted is True:
        lines.append(f"{name} 现在只对允许名单开放。" if zh else f"{name} is now limited to its allow list.")
    elif change.restricted is False:
        lines.append(f"{name} 的允许名单已空，现在除屏蔽名单外所有人都可以使用。" if zh else
                     f"{name}'s allow list is empty: it is open to all but the block list again.")
    return "\n".join(lines)


def _origin(item: Any, zh: bool) -> str:
    if item.setting:
        return f"设置 {item.setting}" if zh else f"setting {item.setting}"
    when = f"{item.added_at.astimezone(UTC):%Y-%m-%d}" if item.added_at else ""
    return f"{item.added_by} 于 {when} 添加" if zh else f"added by {item.added_by} on {when}"
