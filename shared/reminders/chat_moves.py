"""When a platform gives a chat a new id: a Telegram group upgraded to a supergroup.

Telegram announces it in the old group (``migrate_to_chat_id``) and answers messages to the old id
with a 400 naming the new one. Either way the chat is recorded under its new id, so reminders set in
the group still reach it. If the bot has already seen the new supergroup as a chat of its own, the
pending reminders move there and the old chat keeps its history.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from shared.repositories.uow import UnitOfWork

log = logging.getLogger(__name__)


def record_chat_move(uow_factory: Callable[[], UnitOfWork], platform: str, old_chat_id: str,
                     new_chat_id: str) -> bool:
    """Record that ``old_chat_id`` is now ``new_chat_id``; False when the old chat is unknown."""
    old_chat_id, new_chat_id = str(old_chat_id), str(new_chat_id)
    if old_chat_id == new_chat_id:
        return False
    with uow_factory() as uow:
        chats = uow.chats.lock_by_platform_ids(platform, [old_chat_id, new_chat_id])
        old, new = chats.get(old_chat_id), chats.get(new_chat_id)
        if old is None:
            return False
        if new is None:
            old.platform_chat_id = new_chat_id
        else:
            uow.todos.move_pending_to_chat(old.id, new.id)
        uow.commit()
    log.info("%s chat %s moved to %s", platform, old_chat_id, new_chat_id)
    return True
