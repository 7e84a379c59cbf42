"""What a question's prompt shows of a replayed conversation, in the replay file's own ids.

The question goes through the product's step 1 (``prepare_turn`` at the product's defaults) in a transaction
that is rolled back. An evidence id is shown when the prompt shows that round (``BuiltPrompt.round_ids``: the
user's turn and the bot's reply to it), an episode that holds that turn (``BuiltPrompt.episode_ids``), a
memory drawn from that turn (its ``source_turn_id``), or that imported memory. The baseline is a plain BM25
(rank_bm25, over the product's search tokens) over the conversation's turns so far and its imported memories,
whose best items are packed by the same prompt builder within the same budget.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from bench.prompt_evidence import ArchiveItem, baseline_packed, context_tokens
from bench.quality import BM25Ranking
from bench.replay_format import ReplayConversation, ReplayQuestion
from bench.replay_junk import Junk
from bench.replay_play import Player


@dataclass(frozen=True)
class Asked:
    """What one prompt showed: the replay ids it covers, and its memory-context tokens."""

    shown: frozenset[str]
    tokens: int


@dataclass
class Provenance:
    """The replay ids each memory and episode of the player's user was drawn from, noted as they appear (the
    nightly decay may delete old turns later, and the links with them)."""

    player: Player
    imported: dict[int, tuple[str, ...]]
    """Database memory id → the file's memory ids it holds (from the import)."""
    memories: dict[int, tuple[str, ...]] = field(default_factory=dict)
    episodes: dict[int, tuple[str, ...]] = field(default_factory=dict)
    junk: Junk = field(default_factory=Junk)
    """What the write path stored, judged as it appeared."""
    stated: set[str] = field(default_factory=set)
    """The replay ids of turns a memory the user stated was drawn from (source ``user_stated``): what a question
    about a stated fact has for evidence, whatever became of that memory later."""
    last_memory: int = 0
    last_episode: int = 0

    def note(self) -> None:
        """What the memories and episodes that appeared since the last call were drawn from; new memories judged."""
        from sqlalchemy import select

        from shared.db.memory_models import Memory
        from shared.db.models import ConversationTurn

        user_id, turn_ids = self.player.user_id, self.player.turn_ids
        with self.player.new_uow() as uow:
            memories = uow.session.execute(
                select(Memory.id, Memory.content, Memory.source_turn_id, Memory.source)
                .where(Memory.user_id == user_id, Memory.id > self.last_memory).order_by(Memory.id)).all()
            stored = [row for row in memories if row.id not in self.imported]
            active = [] if not stored else uow.session.scalars(select(Memory.content).where(
                Memory.user_id == user_id, Memory.id <= self.last_memory, Memory.deleted_at.is_(None),
                Memory.superseded_by.is_(None) | (Memory.superseded_by > self.last_memory))).all()
            linked = [(turn_id, episode_id) for turn_id, episode_id in uow.session.execute(
                select(ConversationTurn.id, ConversationTurn.episode_id).where(
                    ConversationTurn.user_id == user_id, ConversationTurn.episode_id > self.last_episode))
                      if episode_id is not None]  # all are: past the last episode
        self.junk.judge(self.player, [(row.id, row.content, row.source_turn_id) for row in stored], list(active))
        for memory_id, _, turn_id, source in memories:
            drawn_from = turn_ids.get(turn_id, ()) if turn_id is not None else ()
            self.memories[memory_id] = self.imported.get(memory_id) or drawn_from
            if source == "user_stated" and memory_id not in self.imported:
                self.stated.update(drawn_from)
            self.last_memory = max(self.last_memory, memory_id)
        for turn_id, episode_id in linked:
            self.episodes[episode_id] = (*self.episodes.get(episode_id, ()), *turn_ids.get(turn_id, ()))
        self.last_episode = max([self.last_episode, *(episode_id for _, episode_id in linked)])

    def shown(self, prompt) -> set[str]:
        """The replay ids a built prompt covers: its memories, rounds and episodes, by provenance."""
        shown: set[str] = set()
        for memory_id in prompt.memory_ids:
            shown.update(self.memories.get(memory_id, ()))
        for round_id in getattr(prompt, "round_ids", ()):
            for turn_id in (round_id, *self.player.replies.get(round_id, ())):
                shown.update(self.player.turn_ids.get(turn_id, ()))
        for episode_id in getattr(prompt, "episode_ids", ()):
            shown.update(self.episodes.get(episode_id, ()))
        return shown


def ask(provenance: Provenance, config, question: ReplayQuestion) -> Asked:
    """The question at its time through step 1, rolled back; what its prompt shows."""
    from shared.conversation.prepare import PreparedTurn, prepare_turn

    player = provenance.player
    player.clock.now = question.at
    with player.new_uow() as uow:  # never committed: the question leaves nothing behind
        prepared = prepare_turn(uow, player.message(question.text, None), config, now=question.at,
                                query_vector=None, vectors=None)
    if not isinstance(prepared, PreparedTurn):  # a message without an id is never a duplicate
        raise RuntimeError("a question was taken for a message handled before")
    return Asked(frozenset(provenance.shown(prepared.prompt)), context_tokens(prepared.prompt))


class Baseline:
    """Plain BM25 over what the conversation has given the product so far, packed by the product's builder."""

    def __init__(self, conversation: ReplayConversation, config) -> None:
        from shared.search.tokenizer import search_tokens

        self.config = config
        self.memories = [ArchiveItem(m.id, m.text, m.at) for m in conversation.memories]
        self.turns = [ArchiveItem(t.id, t.text, t.at) for t in conversation.turns]
        self.tokens = {item.key: search_tokens(item.text) for item in self.memories + self.turns}
        self._ranking: tuple[int, BM25Ranking | None] = (-1, None)

    def ask(self, question: ReplayQuestion) -> Asked:
        """The baseline's prompt for the question: imported memories and the turns played by its time."""
        from shared.search.tokenizer import search_tokens

        items = self.memories + [turn for turn in self.turns if turn.at <= question.at]
        if not items:
            return Asked(frozenset(), 0)
        ranking = self._bm25(items)
        scored = ranking.scored(search_tokens(question.text))
        packed = baseline_packed(self.config, {item.key: item for item in items}, scored, question.text, question.at)
        return Asked(frozenset(packed.keys), packed.tokens)

    def _bm25(self, items: list[ArchiveItem]) -> BM25Ranking:
        """One ranking per corpus (the questions asked at one moment share it)."""
        size, ranking = self._ranking
        if size != len(items) or ranking is None:
            ranking = BM25Ranking([item.key for item in items], [self.tokens[item.key] for item in items])
            self._ranking = (len(items), ranking)
        return ranking


def in_order(evidence: Iterable[str], shown: frozenset[str]) -> list[str]:
    """The evidence ids a prompt showed, in the question's order."""
    return [item for item in evidence if item in shown]
