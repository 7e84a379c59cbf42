"""``/followups on|off|list|quiet 23-8``: the user's consent to follow-ups, their quiet hours, and their open
threads (:mod:`shared.followups`). Follow-ups are off until the user turns them on."""

from __future__ import annotations

from datetime import datetime

from shared.errors import InvalidCommand
from shared.followups.texts import FollowupSettings, ThreadItem
from shared.followups.timing import quiet_hours, read_quiet_hours
from shared.repositories.uow import UnitOfWork

MAX_LISTED = 20
ON_WORDS = frozenset({"on", "yes", "enable", "开", "开启", "打开"})
OFF_WORDS = frozenset({"off", "no", "disable", "关", "关闭"})
LIST_WORDS = frozenset({"", "list", "status", "列表", "查看"})
QUIET_WORDS = frozenset({"quiet", "安静", "免打扰"})


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
    elif action not in LIST_WORDS:
        raise InvalidCommand("followups_usage")
    threads = tuple(ThreadItem(t.id, t.what, t.happens_at, t.timezone, t.status == "asked")
                    for t in uow.threads.listed(user_id, MAX_LISTED))
    return FollowupSettings(user.followups_on_at is not None, str(quiet_hours(user.quiet_hours, default_quiet)),
                            threads, changed)
