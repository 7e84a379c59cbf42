"""The console front-end (`mnemo chat`): the full pipeline in a terminal, one line per message."""

from __future__ import annotations

import asyncio
import getpass
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import count
from pathlib import Path

from bot.console_commands import ConsoleCommands
from bot.console_live import StreamedReply
from bot.console_terminal import Terminal, read_line
from shared.app.bootstrap import Runtime
from shared.commands import texts
from shared.commands.service import Caller
from shared.conversation.messages import IncomingMessage, Reply
from shared.conversation.notice_texts import notices_text
from shared.conversation.service import ConversationService
from shared.conversation.warning_texts import OFFLINE_WARNING, warning_text
from shared.errors import DatabaseUnavailable
from shared.followups.delivery import console_followups_sent_since
from shared.reminders.service import console_reminders_sent_since
from shared.settings import Settings
from shared.text import is_chinese, language_of

QUIT_WORDS = {"/quit", "/exit", ":q"}
PROMPT = "you> "
REMINDER_POLL_SECONDS = 5.0
ReminderFeed = Callable[[datetime, datetime], list[tuple[datetime, str]]]
"""This user's console reminders and follow-ups sent in (since, until]: when each went, and its words, in order."""
MISSED_HEADING = ("Sent since your last message:", "你上次发消息之后，我发过：")
_LATEST = datetime.max.replace(tzinfo=UTC)
WHY_COMMAND = "/why"
OFFLINE_LABEL = (" (offline)", "（离线）")
"""After the bot's name on an offline reply, in English and Chinese."""
CONSOLE_CHAT_ID = "console"


def render_why(reply: Reply | None) -> str:
    """What shaped the last reply: the memories and rounds used with their scores, emotion, strategy."""
    if reply is None:
        return "Nothing said yet."
    emotion = reply.emotion
    strategy = reply.strategy
    lines = [f"emotion: {emotion.primary} ({emotion.category}, confidence {emotion.confidence:.2f})",
             f"strategy: {strategy.tone}, ~{strategy.max_length} chars, "
             f"{'uses memories' if strategy.use_memory else 'no memories'}, "
             f"{'asks a follow-up' if strategy.proactive_question else 'no probing question'}"]
    if not reply.memories_used and not reply.rounds_used:
        lines.append("memories used: none")
    for used in reply.memories_used:
        parts = ", ".join(f"{name} {value:.2f}" for name, value in used.score.items()
                          if isinstance(value, float) and name != "total")
        lines.append(f"  #{used.id} {used.content}\n      score {used.score['total']:.3f} = {parts}")
    for said in reply.rounds_used:
        reply_part = f" / me: {said.reply}" if said.reply else ""
        lines.append(f"  said {said.said_at:%Y-%m-%d}: you: {said.line}{reply_part}\n"
                     f"      score {said.score['total']:.3f}")
    return "\n".join(lines)


def render_reply(reply: Reply, bot_name: str) -> str:
    """The reply as the console shows it: the text, then its notice and warnings, all in the language of the
    message, and the offline label."""
    chinese = reply.language.chinese
    label = f"{bot_name}{OFFLINE_LABEL[chinese]}" if reply.offline else bot_name
    return "\n".join([f"{label}> {reply.text}", *reply_notes(reply)])


def reply_notes(reply: Reply) -> list[str]:
    """The lines under a reply: its notice and warnings (offline mode is in the label)."""
    chinese = reply.language.chinese
    notice = notices_text(reply.notices, chinese)
    lines = [f"  · {notice}"] if notice else []
    return lines + [f"  · {warning_text(warning, chinese)}" for warning in dict.fromkeys(reply.warnings)
                    if warning != OFFLINE_WARNING]


async def announce_reminders(feed: ReminderFeed, announce: Callable[[str], None],
                             interval: float = REMINDER_POLL_SECONDS, *, since: datetime | None = None) -> None:
    """Print reminders and follow-ups the worker sent to the console user after ``since`` (default: now), as they
    fall due."""
    since = since or datetime.now(UTC)
    while True:
        await asyncio.sleep(interval)
        until = datetime.now(UTC)
        try:
            sent = await asyncio.to_thread(feed, since, until)
        except DatabaseUnavailable:  # asked again, from the same moment, once the database is back
            continue
        for _moment, text in sent:
            announce(text)
        since = max(since, until)


async def show_missed(feed: ReminderFeed, missed: Callable[[], Missed | None],
                      announce: Callable[[str], None]) -> datetime:
    """Print what was sent to the user since their last message (the console was closed when it went); the moment
    from which the announcer goes on: now, or later for one sent "as of" a later moment (``mnemo followups --now``),
    so that it is not shown again when that moment comes. The database is asked off the event loop, so that
    Ctrl-C meanwhile ends the console at once."""
    now = datetime.now(UTC)
    try:
        last = await asyncio.to_thread(missed)
        sent = await asyncio.to_thread(feed, last.since, _LATEST) if last is not None else []
    except DatabaseUnavailable:
        return now
    if sent and last is not None:
        announce(last.heading)
        for _moment, text in sent:
            announce(text)
        return max(now, sent[-1][0])
    return now


@dataclass(frozen=True)
class Missed:
    """What the console shows first: what was sent to the user after ``since`` (their last message)."""

    since: datetime
    heading: str


async def chat_loop(service: ConversationService, *, user_id: str, bot_name: str,
                    read_line: Callable[[str], str] = read_line, write: Callable[[str], None] = print,
                    reminders: ReminderFeed | None = None, commands: ConsoleCommands | None = None,
                    terminal: Terminal | None = None, stream: Callable[[str], None] | None = None,
                    interactive: bool = False, missed: Callable[[], Missed | None] | None = None) -> None:
    """Read messages until end of input or /quit, answering each through the conversation service. With
    ``stream`` (writes without a line end), a model's reply is printed as it is written (erased and printed again
    on an ``interactive`` terminal when the offline answer replaces it)."""
    terminal = terminal or Terminal(read_line, write)
    write(f"Talking to {bot_name}. /why shows what shaped the last reply; /quit leaves.")
    announcer = None
    if reminders is not None:
        since = await show_missed(reminders, missed, terminal.announce) if missed is not None else None
        announcer = asyncio.create_task(announce_reminders(reminders, terminal.announce, since=since))
    try:
        await _conversation(service, user_id=user_id, bot_name=bot_name, terminal=terminal, write=write,
                            commands=commands, live=_Live(stream, interactive) if stream else None)
    finally:
        if announcer is not None:
            announcer.cancel()
    write("Bye.")


@dataclass(frozen=True)
class _Live:
    stream: Callable[[str], None]
    interactive: bool


async def _conversation(service: ConversationService, *, user_id: str, bot_name: str, terminal: Terminal,
                        write: Callable[[str], None], commands: ConsoleCommands | None, live: _Live | None) -> None:
    numbers = count(1)
    last = await _answer_unanswered(service, user_id=user_id, bot_name=bot_name, write=write)
    session_tag = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
    while True:
        try:
            line = await terminal.read(PROMPT)
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
        if commands is not None and text.startswith("/"):
            write(await asyncio.to_thread(commands.run, text))
            continue
        if commands is not None:
            commands.follow(text)
        locale = commands.locale if commands is not None else language_of(text).value
        message = IncomingMessage(platform="console", chat_id=CONSOLE_CHAT_ID, user_id=user_id, text=text,
                                  sent_at=datetime.now(UTC), display_name=user_id,
                                  message_id=f"{session_tag}-{next(numbers)}", locale=locale)

        printer = StreamedReply(live.stream, bot_name, interactive=live.interactive) if live else None

        async def tell_waiting(locale: str | None = locale, printer: StreamedReply | None = printer) -> None:
            if printer is not None:  # words printed before the database went away: their line ends here
                printer.abandon()
            write(texts.waiting_for_database_text(locale))

        async def tell_busy(locale: str | None = locale) -> None:
            write(texts.busy_text(locale))

        try:
            reply = await service.handle_message(message, on_delay=tell_waiting, on_busy=tell_busy,
                                                 on_text=printer.hear if printer else None)
        except DatabaseUnavailable as exc:  # kept for DATABASE_PATIENCE_SECONDS; the user may type it again
            if printer is not None:
                printer.abandon()
            write(texts.error_text(exc, locale))
            continue
        if reply.duplicate:
            if printer is not None:
                printer.abandon()
            continue
        last = reply
        if printer is not None and printer.printed:
            printer.finish(reply.text, carries_on=not reply.offline, whole=render_reply(reply, bot_name),
                           notes=reply_notes(reply))
        else:
            write(render_reply(reply, bot_name))


async def _answer_unanswered(service: ConversationService, *, user_id: str, bot_name: str,
                             write: Callable[[str], None]) -> Reply | None:
    """What this user said last time that the console stopped before answering, answered now."""
    last = None
    try:
        async for incoming, reply in service.unanswered_replies("console", platform_user_id=user_id):
            write(texts.answered_late_text(incoming.text, incoming.locale))
            write(render_reply(reply, bot_name))
            last = reply
    except DatabaseUnavailable as exc:
        write(texts.error_text(exc, None))
    return last


def write_now(text: str) -> None:
    """Print ``text`` without a line end, at once (a reply as it is written)."""
    sys.stdout.write(text)
    sys.stdout.flush()


def log_line(log: Path, on_stderr: bool) -> str:
    """Where the console's log goes, said once at the start."""
    if on_stderr:
        return f"Log: {log}; its warnings and errors also go to standard error."
    return f"Log: {log} (not shown here; `mnemo chat --log-stderr` also writes its warnings to standard error)."


def console_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "local"


def console_reminder_feed(rt: Runtime, user: str) -> ReminderFeed:
    """Reminders and follow-ups of this console user that the worker has sent (it marks them sent)."""

    def feed(since: datetime, until: datetime) -> list[tuple[datetime, str]]:
        with rt.uow() as uow:
            identity = uow.users.identity("console", user)
        if identity is None:
            return []
        return sorted(console_reminders_sent_since(rt.uow, identity.user_id, since, until)
                      + console_followups_sent_since(rt.uow, identity.user_id, since, until), key=lambda sent: sent[0])

    return feed


def console_missed(rt: Runtime, user: str, locale: str) -> Missed | None:
    """What to show first: reminders and follow-ups sent since the console user last wrote (None: never wrote)."""
    with rt.uow() as uow:
        identity = uow.users.identity("console", user)
        last = uow.threads.last_written_at(identity.user_id) if identity is not None else None
    return Missed(last, MISSED_HEADING[is_chinese(locale)]) if last is not None else None


def console_locale(rt: Runtime | None = None, user: str | None = None) -> str:
    """The language the console user last wrote in (stored with their identity), else the terminal's
    (LANG/LC_ALL), so command texts come in Chinese where it is set so."""
    if rt is not None and user is not None:
        with rt.uow() as uow:
            identity = uow.users.identity("console", user)
            stored = identity.locale if identity is not None else None
        if stored:
            return stored
    for variable in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(variable, "")
        if value and value not in {"C", "POSIX"} and not value.startswith("C."):
            return value.split(".")[0].replace("_", "-")
    return "en"


def run_chat(settings: Settings, *, user: str | None = None, workers: bool | None = None, log: Path | None = None,
             log_on_stderr: bool = False) -> int:
    """`mnemo chat`: the console on the configured (or embedded) database, with a worker, beat and the
    web panel's API beside it on the embedded default (or when ``workers`` is True). ``log`` is where the
    process's log goes (said at the start: the conversation never shows it)."""
    from shared.app.bootstrap import access_service, conversation_service, memory_commands, runtime
    from shared.app.processes import companions

    user = user or console_user()
    with runtime(settings) as rt:
        service = conversation_service(rt)
        if service.chat_model is None:
            print("No LLM_BASE_URL: offline mode (rule-based replies). See .env.example to connect a model.")
        if log is not None:
            print(log_line(log, log_on_stderr))
        locale = console_locale(rt, user)
        caller = Caller(platform="console", platform_user_id=user, display_name=user, locale=locale,
                        platform_chat_id=CONSOLE_CHAT_ID)
        terminal = Terminal(interactive=sys.stdin.isatty() and sys.stdout.isatty())
        commands = ConsoleCommands(memory_commands(rt, embeddings_wanted=service.embedder is not None), caller,
                                   ask=terminal.ask, export_dir=settings.data_dir / "exports",
                                   access=access_service(rt))
        start_workers = settings.uses_embedded_database if workers is None else workers
        helpers = companions(rt.database_url, settings.data_dir / "logs", embedded=settings.uses_embedded_database,
                             wanted=workers, metrics_port=settings.metrics_port)
        if start_workers:
            print(f"Web panel: {settings.panel_public_url}/panel/ (type /panel for a sign-in link).")
        with helpers:
            asyncio.run(chat_loop(service, user_id=user, bot_name=settings.bot_name,
                                  reminders=console_reminder_feed(rt, user), commands=commands,
                                  terminal=terminal, stream=write_now, interactive=terminal.interactive,
                                  missed=lambda: console_missed(rt, user, locale)))
    return 0
