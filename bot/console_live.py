"""A console reply printed as the model writes it: the bot's name and the first words, then each word as it comes.

When the reply turns out to be what was printed (or carries on from it), the rest and the notes follow. When it
does not (the model's answer was unreadable and the offline answer replaces it), the printed words are erased on
a terminal and the final reply printed in their place; printed to a pipe, where nothing can be erased, the final
reply follows on a line of its own.
"""

from __future__ import annotations

import shutil
import unicodedata
from collections.abc import Callable
from math import ceil

ERASE_LINE = "\r\x1b[K"
UP_AND_ERASE = "\x1b[1A\x1b[K"


class StreamedReply:
    """One reply on its way to the console; ``hear`` is the service's ``on_text``."""

    def __init__(self, stream: Callable[[str], None], label: str, *, interactive: bool = False) -> None:
        self.stream, self.label, self.interactive = stream, label, interactive
        self.printed = ""

    def hear(self, text: str) -> None:
        """The words so far: what was added is printed (a reply that starts again differently waits for the end)."""
        if not self.printed:
            self.stream(f"{self.label}> {text}")
            self.printed = text
        elif text.startswith(self.printed) and len(text) > len(self.printed):
            self.stream(text[len(self.printed):])
            self.printed = text

    def finish(self, text: str, *, carries_on: bool, whole: str, notes: list[str]) -> None:
        """End the reply: ``text`` is the final reply, ``whole`` the way it prints whole (label, text, notes), and
        ``carries_on`` whether it may follow what was printed (a model's reply, not the offline answer)."""
        if carries_on and text.startswith(self.printed):
            self.stream(text[len(self.printed):] + "\n" + "".join(f"{note}\n" for note in notes))
        elif self.interactive:
            self.stream(self._erase() + whole + "\n")
        else:
            self.stream("\n" + whole + "\n")
        self.printed = ""

    def abandon(self) -> None:
        """Words were printed and something else is said next (the turn failed, or waits for the database): their
        line ends, and the reply, if one comes, is printed whole."""
        if self.printed:
            self.stream("\n")
            self.printed = ""

    def _erase(self) -> str:
        """Back over the rows the printed words took (wrapped at the terminal's width) and erase them."""
        columns = max(1, shutil.get_terminal_size().columns)
        rows = sum(max(1, ceil(_width(line) / columns)) for line in f"{self.label}> {self.printed}".split("\n"))
        return ERASE_LINE + UP_AND_ERASE * (rows - 1)


def _width(line: str) -> int:
    """Columns ``line`` takes on a terminal (wide characters, Chinese among them, take two)."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in line)
