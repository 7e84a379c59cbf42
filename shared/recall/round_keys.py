"""A round's search keys: the user's line, the bot's reply and the facts drawn from the line.

Keys are set when the reply is recorded (the line, the reply and what the turn's own memory update stored),
again when the knowledge monitor has drawn facts from the line (fact-augmented keys: "我养了一只布偶猫" is
found by "宠物" once the monitor noted a pet), and by the re-tokenising sweep after a tokenizer change. A
paused user's round is given empty keys at the current version: it is never found, and no sweep keys it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from shared.attachments.texts import search_words
from shared.repositories.uow import UnitOfWork
from shared.search.tokenizer import TOKENIZER_VERSION, search_text
from shared.text import clean_text


def round_search_text(line: str, reply: str | None, facts: Iterable[str] = ()) -> str:
    """The space-separated tokens of a round."""
    return search_text(clean_text(part) for part in (line, reply, *facts) if part)


def key_round(uow: UnitOfWork, user_id: int, turn_id: int, line: str, reply: str | None,
              facts: Sequence[str] = (), *, kept: bool = True, shown_memory_ids: Sequence[int] = ()) -> None:
    """Key the user's round ``turn_id`` (a round not ``kept``, a paused user's, gets no keys); the memories
    the prompt answering it showed are recorded in the same statement."""
    tokens = round_search_text(line, reply, (*facts, *search_words(line))) if kept else ""
    uow.rounds.key(user_id, turn_id, tokens, TOKENIZER_VERSION, shown_memory_ids)


def rekey_rounds(uow: UnitOfWork, user_id: int, turn_ids: Sequence[int], *, only_kept: bool = True) -> int:
    """Key the user's rounds ``turn_ids`` again from what they hold now (their facts included); with
    ``only_kept``, a round kept out of recall stays out. Returns how many were keyed."""
    wanted = uow.rounds.kept_among(user_id, turn_ids) if only_kept else list(turn_ids)
    materials = uow.rounds.material(user_id, wanted)
    for material in materials:
        key_round(uow, user_id, material.turn_id, material.line, material.reply, material.facts)
    return len(materials)
