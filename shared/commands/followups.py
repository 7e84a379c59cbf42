"""``/followups on|off|list|quiet 23-8``: the user's consent to follow-ups, their quiet hours, and their open
threads (:mod:`shared.followups`). Follow-ups are off until the user turns them on.

``/followups group on|off`` typed in a group is the group's own switch (``chats.settings['followups']``): a
member's follow-up about something said in a group is asked there only once the group took them on. Only the
group's admins change it (each front-end asks its platform: Telegram's ``getChatMember``, Discord's resolved
permissions); anyone may see it (``/followups group``)."""

from __future__ import annotations

from datetime import datetime

from shared.db.models import Chat
from shared.errors import InvalidCommand
from shared.followups.texts import FollowupSettings, GroupFollowups, ThreadItem
from shared.followups.timing import GROUP_SETTING, group_takes_followups, quiet_hours, read_quiet_hours
from shared.repositories.uow import UnitOfWork

MAX_LISTED = 20
ON_WORDS = frozenset({"on", "yes", "enable", "开", "开启", "打开"})
OFF_WORDS = frozenset({"off", "no", "disable", "关", "关闭"})
LIST_WORDS = frozenset({"", "list", "status", "列表", "查看"})
QUIET_WORDS = frozenset({"quiet", "安静", "免打扰"})
GROUP_WORDS = frozenset({"group", "channel", "server", "群", "群组", "本群"})


def about_the_group(text: str | None) -> bool:
    """Whether ``/followups <text>`` is the group's switch (``group on``, ``群 关``) rather than the user's own."""
    words = (text or "").split(maxsplit=1)
    return bool(words) and words[0].lower() in GROUP_WORDS


def group_followups(chat: Chat, text: str, *, admin: bool) -> GroupFollowups:
    """Apply ``/followups group [on|off]`` to ``chat`` (a group); only an ``admin`` of it changes it. An unknown
    word is refused before anything changes."""
    words = text.split()
    action = words[1].lower() if len(words) > 1 else ""
    was = group_takes_followups(chat.settings)
    if len(words) > 2:
        raise InvalidCommand("followups_usage")
    if action in ON_WORDS or action in OFF_WORDS:
        if not admin:
            raise InvalidCommand("followups_group_admin")
        on = action in ON_WORDS
        chat.settings = {**(chat.settings or {}), GROUP_SETTING: on}  # a new dict: JSONB changes are seen
        return GroupFollowups(on, on != was)
    if action not in LIST_WORDS:
        raise InvalidCommand("followups_usage")
    return GroupFollowups(was)


def followup_settings(uow: UnitOfWork, user_id: int, text: str, now: datetime, default_quiet: str) -> FollowupSettings:
    """Apply ``/followups <text>`` for the user; what it says afterwards. An unknown word is refused before
    anything changes."""
    words = text.strip().split(maxsplit=1)
    action = words[0].lower() if words else ""
    user = uow.users.get(user_id)
    if user is None:
        raise InvalidCommand("bad_caller")
    changed = False
    if action in ON_WORDS:
        changed = user.followups_on_at is None
        user.followups_on_at = user.followups_on_at or now
    elif action in OFF_WORDS:
        changed, user.followups_on_at = user.followups_on_at is not None, None
    elif action in QUIET_WORDS:
        hours = read_quiet_hours(words[1] if len(words) > 1 else "")
        if hours is None:
            raise InvalidCommand("followups_quiet_hours")
        changed, user.quiet_hours = True, str(hours)
    elif action in GROUP_WORDS:
        raise InvalidCommand("followups_group_where")
    elif action not in LIST_WORDS:
        raise InvalidCommand("followups_usage")
    threads = tuple(ThreadItem(t.id, t.what, t.happens_at, t.timezone, t.status == "asked")
                    for t in uow.threads.listed(user_id, MAX_LISTED))
    return FollowupSettings(user.followups_on_at is not None, str(quiet_hours(user.quiet_hours, default_quiet)),
                            threads, changed)
