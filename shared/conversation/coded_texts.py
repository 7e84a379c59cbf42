"""What every front-end tells a user beside a reply, as a code and its parameters, worded from a table of lines in
English and Chinese: the shape warnings (:mod:`shared.conversation.warning_texts`) and notices
(:mod:`shared.conversation.notice_texts`) share. Pure: it imports nothing of the project.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, Self, TypeVar

Code = TypeVar("Code", bound=StrEnum)
Param = str | int | tuple[str, ...]
"""A parameter's value: a count, the user's words, a list of names (joined as the reader's language joins)."""
LIST_JOINS = (", ", "、")
"""How a list parameter's items are joined in English and in Chinese."""


@dataclass(frozen=True)
class Coded(Generic[Code]):
    """Something the user is told, as a code and its parameters (``name``, value) in the order given; equal codes
    and values are equal, so a reply shows each once."""

    code: Code
    params: tuple[tuple[str, Param], ...] = ()

    @classmethod
    def of(cls, code: Code, **params: Param) -> Self:
        return cls(code, tuple(params.items()))


def worded(table: Mapping[Code, tuple[str, str]], coded: Coded[Code], chinese: bool,
           values: Mapping[str, Param] | None = None) -> str:
    """``coded``'s line of ``table`` in Chinese or English, filled with its parameters (``values``: as the caller
    made them ready to read); a list is joined as the language joins one."""
    ready = {name: LIST_JOINS[chinese].join(value) if isinstance(value, tuple) else value
             for name, value in (dict(coded.params) if values is None else values).items()}
    return table[coded.code][chinese].format(**ready)
