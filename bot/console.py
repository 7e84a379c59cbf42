"""The console front-end (`mnemo chat`): the full pipeline in a terminal, one line per message."""

from __future__ import annotations

import asyncio
import getpass
from collections.abc import Callable
from datetime import UTC, datetime
from itertools import count

from shared.services.conversation import ConversationService
from shared.services.messages import IncomingMessage, Reply

QUIT_WORDS = {"/quit", "/exit", ":q"}
WHY_COMMAND = "/why"
CONSOLE_CHAT_ID = "console"


def render_why(reply: Reply | None) -> str:
    """What shaped the last reply: the memories used with their score breakdown, emotion, strategy."""
    if reply is None:
        return "Nothing said yet."
    emotion = reply.emotion
    strategy = reply.strategy
    lines = [f"emotion: {emotion.primary} ({emotion.category}, confidence {emotion.confidence:.2f})",
             f"strategy: {strategy.tone}, ~{strategy.max_length} chars, "
             f"{'uses memories' if strategy.use_memory else 'no memories'}, "
             f"{'asks a follow-up' if strategy.proactive_question else 'no probing question'}"]
    if not reply.memories_used:
        lines.append("memories used: none")
    for used in reply.memories_used:
        parts = ", ".join(f"{name} {value:.2f}" for name, value in used.score.items()
                          if isinstance(value, float) and name != "total")
        lines.append(f"  #{used.id} {used.content}\n      score {used.score['total']:.3f} = {parts}")
    return "\n".join(lines)


def render_reply(reply: Reply, bot_name: str) -> str:
    """The reply as the console shows it: the text, then warnings and the offline label dimmed."""
    label = f"{bot_name} (offline)" if reply.offline else bot_name
    lines = [f"{label}> {reply.text}"]
    lines += [f"  · {warning}" for warning in reply.warnings if warning != "offline mode"]
    return "\n".join(lines)


async def chat_loop(service: ConversationService, *, user_id: str, bot_name: str,
                    read_line: Callable[[str], str] = input, write: Callable[[str], None] = print) -> None:
    """Read messages until end of input or /quit, answering each through the conversation service."""
    write(f"Talking to {bot_name}. /why shows what shaped the last reply; /quit leaves.")
    numbers = count(1)
    last: Reply | None = None
    session_tag = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
    while True:
        try:
            line = await asyncio.to_thread(read_line, "you> ")
        except EOFError:
            break
        text = line.strip()
        if not text:
            continue
        if text.lower() in QUIT_WORDS:
            break
        if text.lower() == WHY_COMMAND:
            write(render_why(last))
            continue
        message = IncomingMessage(platform="console", chat_id=CONSOLE_CHAT_ID, user_id=user_id, text=text,
                                  sent_at=datetime.now(UTC), display_name=user_id,
                                  message_id=f"{session_tag}-{next(numbers)}")
        reply = await service.handle_message(message)
        if reply.duplicate:
            continue
        last = reply
        write(render_reply(reply, bot_name))
    write("Bye.")


def console_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "local"
