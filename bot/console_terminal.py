"""The console's terminal: lines read without holding Ctrl-C, and messages printed above the prompt.

A line is read on a daemon thread of its own, not in asyncio's executor: ``asyncio.run`` waits for its
executor's threads when it ends, so Ctrl-C at the ``you>`` prompt would wait for Enter, and the process
would keep its database and companions until then. A thread left blocked on a read is dropped at exit; from
a pipe it reads the descriptor itself, since one blocked inside ``sys.stdin`` would hold the buffer's lock,
which Python needs when it shuts down.
A reminder that arrives while the user is typing is printed on a line of its own and the prompt is shown
again, with what was typed so far.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
from collections.abc import Callable

CLEAR_LINE = "\r\x1b[K"
"""Back to the start of the line and erase it (an ANSI terminal)."""
READ_BYTES = 4096


class _PipedLines:
    """Lines of standard input read straight from its descriptor (no ``sys.stdin`` lock held)."""

    def __init__(self, fd: int = 0) -> None:
        self.fd = fd
        self._pending = b""

    def readline(self) -> str:
        while b"\n" not in self._pending:
            chunk = os.read(self.fd, READ_BYTES)
            if not chunk:
                if not self._pending:
                    raise EOFError
                line, self._pending = self._pending, b""
                return line.decode(errors="replace")
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode(errors="replace")


_piped_stdin = _PipedLines()


def read_line(prompt: str) -> str:
    """``input(prompt)`` at a terminal (readline editing); from a pipe, the next line of the descriptor."""
    if sys.stdin is not None and sys.stdin.isatty():
        return input(prompt)
    _show_prompt(prompt)
    return _piped_stdin.readline()


def _typed_so_far() -> str:
    """What the user has typed at the prompt, where ``input()`` edits the line with readline."""
    readline = sys.modules.get("readline")
    return readline.get_line_buffer() if readline is not None else ""


def _show_prompt(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


class Terminal:
    """``await terminal.read("you> ")``; ``terminal.announce(text)`` for what arrives meanwhile."""

    def __init__(self, read_line: Callable[[str], str] = read_line, write: Callable[[str], None] = print, *,
                 show_prompt: Callable[[str], None] = _show_prompt, interactive: bool = False) -> None:
        self._read_line = read_line
        self._write = write
        self._show_prompt = show_prompt
        self._interactive = interactive
        self.interactive = interactive
        """A terminal a person types at (lines can be erased), not a pipe."""
        self._prompt: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def read(self, prompt: str) -> str:
        """The next line (EOFError at the end of input); cancelling it abandons the read at once."""
        loop = self._loop = asyncio.get_running_loop()
        answer: asyncio.Future[str] = loop.create_future()
        threading.Thread(target=self._read_into, args=(prompt, loop, answer), name="console-input",
                         daemon=True).start()
        self._prompt = prompt
        try:
            return await answer
        finally:
            self._prompt = None

    def ask(self, prompt: str) -> str:
        """:meth:`read` from another thread (a command asking yes or no while the console waits for it)."""
        if self._loop is None:
            raise EOFError("the console is not reading")
        return asyncio.run_coroutine_threadsafe(self.read(prompt), self._loop).result()

    def announce(self, text: str) -> None:
        """Print ``text``; if a line is being typed, above it, and show the prompt again."""
        prompt = self._prompt
        if prompt is None:
            self._write(text)
            return
        self._write(f"{CLEAR_LINE}{text}" if self._interactive else text)
        self._show_prompt(prompt + (_typed_so_far() if self._interactive else ""))

    def _read_into(self, prompt: str, loop: asyncio.AbstractEventLoop, answer: asyncio.Future[str]) -> None:
        try:
            line, error = self._read_line(prompt), None
        except (EOFError, OSError, ValueError):  # end of input, or stdin closed under the read
            line, error = "", EOFError()
        with contextlib.suppress(RuntimeError):  # the console ended (Ctrl-C) while this line was typed
            loop.call_soon_threadsafe(_settle, answer, line, error)


def _settle(answer: asyncio.Future[str], line: str, error: BaseException | None) -> None:
    if answer.done():  # cancelled meanwhile
        return
    if error is not None:
        answer.set_exception(error)
    else:
        answer.set_result(line)
