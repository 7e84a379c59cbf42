"""What a reply's notices say to its user: the line each front-end shows, in the reply's language."""

from __future__ import annotations

from shared.conversation.messages import Reply
from shared.conversation.notice_texts import notices_text


def told(reply: Reply) -> str | None:
    """The reply's notices joined as the user reads them (None: there are none)."""
    return notices_text(reply.notices, reply.language.chinese)
