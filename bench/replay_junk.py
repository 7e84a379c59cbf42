"""The junk among what a replayed conversation stored, by the judges of ``mnemo bench memories``.

Every memory the write path stored for the conversation's user (the turn's own memory update, the knowledge
monitor, later corrections; not the imported ones) is judged when it appears, in the order it was stored,
by :func:`bench.memory_judges.judge`: a question, the bot's words (said in an earlier reply), a near-duplicate
of a memory active then (imported ones included), or a restatement of a memory recalled for its turn. Judged
as they appear, the memories a rule deletes later are counted too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.memory_judges import JUNK_KINDS, Said, judge
from bench.replay_play import Player


@dataclass
class Junk:
    stored: int = 0
    junk: int = 0
    by_kind: dict[str, int] = field(default_factory=lambda: dict.fromkeys(JUNK_KINDS, 0))

    def add(self, other: Junk) -> None:
        self.stored += other.stored
        self.junk += other.junk
        for kind, count in other.by_kind.items():
            self.by_kind[kind] += count

    @property
    def rate(self) -> float:
        return round(self.junk / self.stored, 4) if self.stored else 0.0

    def judge(self, player: Player, stored: list[tuple[int, str, int | None]], active: list[str]) -> None:
        """Judges memories just stored, ``(id, content, source turn id)`` in id order, each against ``active``
        (the user's memories active when they were stored) and those stored before it."""
        replies = sorted((turn_id, said.reply) for turn_id, said in player.said.items())
        active = list(active)
        for _, content, source_turn_id in stored:
            source = source_turn_id or 0
            said = player.said.get(source) or Said(player.platform_user_id, "", "", ())
            earlier = [reply for turn_id, reply in replies if turn_id < source]
            kinds = judge(content, said, earlier, active)
            self.stored += 1
            self.junk += bool(kinds)
            for kind in kinds:
                self.by_kind[kind] += 1
            active.append(content)
