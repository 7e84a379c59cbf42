"""The console's terminal: Ctrl-C does not wait for Enter, and a reminder is printed above the prompt."""

from __future__ import annotations

import asyncio
import os
import threading
from datetime import timedelta
from functools import partial

import pytest

from bot.console import chat_loop
from bot.console_terminal import Terminal, _PipedLines
from shared.conversation.config import ConversationConfig
from shared.conversation.service import ConversationService
from tests.fakes.uow import FakeDatabase, FakeUnitOfWork

GIVE_UP_SECONDS = 20
CONFIG = ConversationConfig(bot_name="Mnemo", personality="a friend", emotion_enabled=True, retrieval_limit=5,
                            memory_budget_tokens=700, history_turns=15, idle=timedelta(minutes=30),
                            default_timezone="Europe/Lisbon")


class SilentUser:
    """``input()`` of someone who never presses Enter (until the test lets go)."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.waiting = threading.Event()
        self.let_go = threading.Event()

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        self.waiting.set()
        self.let_go.wait()
        return "ok"


def test_interrupting_the_console_at_the_prompt_ends_it_without_waiting_for_enter():
    user = SilentUser()
    ended = threading.Event()

    async def interrupted() -> None:
        service = ConversationService(partial(FakeUnitOfWork, FakeDatabase()), CONFIG, chat_model=None)
        console = asyncio.create_task(chat_loop(service, user_id="ines", bot_name="Mnemo", read_line=user,
                                                write=lambda _text: None))
        await asyncio.to_thread(user.waiting.wait)
        console.cancel()  # what asyncio.run does with its main task on Ctrl-C

    def run() -> None:
        asyncio.run(interrupted())
        ended.set()

    threading.Thread(target=run, daemon=True).start()
    try:
        assert ended.wait(GIVE_UP_SECONDS), "the console waited for a line after it was interrupted"
    finally:
        user.let_go.set()
    assert user.prompts == ["you> "]


def test_a_reminder_that_arrives_while_the_user_types_comes_above_a_fresh_prompt():
    user, printed, prompts = SilentUser(), [], []
    terminal = Terminal(user, printed.append, show_prompt=prompts.append)

    async def remind_while_reading() -> None:
        reading = asyncio.create_task(terminal.read("you> "))
        await asyncio.to_thread(user.waiting.wait)
        terminal.announce("⏰ water the ferns")
        user.let_go.set()
        assert await reading == "ok"
        terminal.announce("⏰ call Bea")  # no line being typed: no prompt to show again

    asyncio.run(remind_while_reading())
    assert printed == ["⏰ water the ferns", "⏰ call Bea"]
    assert prompts == ["you> "]


def test_on_a_terminal_the_reminder_erases_the_half_typed_line_and_the_prompt_comes_back_after_it():
    user, printed, prompts = SilentUser(), [], []
    terminal = Terminal(user, printed.append, show_prompt=prompts.append, interactive=True)

    async def remind_while_reading() -> None:
        reading = asyncio.create_task(terminal.read("you> "))
        await asyncio.to_thread(user.waiting.wait)
        terminal.announce("⏰ stretch")
        user.let_go.set()
        assert await reading == "ok"

    asyncio.run(remind_while_reading())
    assert printed == ["\r\x1b[K⏰ stretch"]
    assert prompts[0].startswith("you> ")


def test_piped_input_is_read_line_by_line_to_the_end():
    reading, writing = os.pipe()
    os.write(writing, "/remember 我养了一只猫\nsecond line\nno newline at the end".encode())
    os.close(writing)
    lines = _PipedLines(reading)
    try:
        assert [lines.readline() for _ in range(3)] == ["/remember 我养了一只猫", "second line",
                                                        "no newline at the end"]
        with pytest.raises(EOFError):
            lines.readline()
    finally:
        os.close(reading)
