"""Export all of one user's data as a JSON file, and import such a file (DESIGN.md §7).

The file (``format: "mnemo-export"``, ``version: 2``) holds the identities (informational), the
memories with their superseded chains, episodes, todos, the profile and the raw turns: every round of
conversation, the user's line and the bot's reply (``reply_to``), and whether a line was said while
remembering was paused (``paused``). Rows refer to each other by export-local ids (``superseded_by``,
``source_turn``, ``episode``, ``reply_to``), never by database ids, and nothing in the file names a user:
an import always goes to the caller.
Embeddings are derived data and are not exported; the workers compute them again.

An import is checked strictly first (:mod:`shared.accounts.export_format`: a bad file is refused as a
whole, a bad entry with its reason while the good ones are kept); then an exact duplicate of what the
user already has is skipped, so importing the same file twice adds nothing. A memory keeps its
content, type, times, importance and confidence, but not what a file cannot prove
(:data:`IMPORTED_CLAIMS`: it arrives as ``imported``, unverified and unused; never in the ``system`` tier).
Imported turns are marked extracted (their memories came with the file) and carry no platform message id;
imported rounds are keyed for recall from their line, reply and the imported memories drawn from them,
except those said while paused, which stay out of recall as they were.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from shared.accounts.export_format import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    MAX_IMPORT_BYTES,
    MEMORY_TIMES,
    MEMORY_VALUES,
    SECTION_ORDER,
    ImportDocument,
    read_export,
    storable_json,
)
from shared.db.kinds import TodoStatus
from shared.db.memory_models import Episode, Memory, Todo
from shared.db.models import ConversationTurn
from shared.db.thread_models import OpenThread
from shared.recall.round_keys import rekey_rounds
from shared.reminders.scheduling import MAX_PENDING_REMINDERS, missed_on_import, room_for_reminders
from shared.repositories.accounts import Owned
from shared.repositories.memories import snapshot
from shared.repositories.uow import UnitOfWork
from shared.search.tokenizer import TOKENIZER_VERSION, shared_budget
from shared.text import estimate_tokens

__all__ = ["MAX_IMPORT_BYTES", "ExportFile", "ImportDocument", "ImportReport", "export_user_data", "import_user_data",
           "read_export", "storable_json"]


IMPORTED_CLAIMS = {"source": "imported", "verified": False, "access_count": 0, "last_accessed": None}
"""What a file cannot prove: an imported memory is the user's own data (``imported``), unverified and unused,
whatever the file says."""
IMPORTED_SYSTEM_TIER = "long"
"""A file cannot place a memory in the operator's ``system`` tier; it becomes ``long``."""


@dataclass(frozen=True)
class ExportFile:
    filename: str
    data: bytes


@dataclass(frozen=True)
class ImportReport:
    imported: dict[str, int]
    refused: tuple[str, ...]
    duplicates: int = 0
    """Entries skipped because the user already has exactly them."""
    missed: int = 0
    """Pending reminders that were long past due: imported as missed (cancelled), not sent."""


def export_user_data(uow: UnitOfWork, user_id: int, now: datetime) -> ExportFile:
    """Everything Mnemo holds about the user, as ``mnemo-export-<date>.json``."""
    memory_rows, episode_rows = uow.accounts.owned(user_id, Memory), uow.accounts.owned(user_id, Episode)
    todo_rows, turn_rows = uow.accounts.owned(user_id, Todo), uow.accounts.owned(user_id, ConversationTurn)
    thread_rows = uow.accounts.owned(user_id, OpenThread)
    episodes, turns, memories = _local_ids(episode_rows), _local_ids(turn_rows), _local_ids(memory_rows)
    replies = _replies(turn_rows)
    profile = uow.profiles.get(user_id)
    document = {
        "format": EXPORT_FORMAT, "version": EXPORT_VERSION, "exported_at": _time(now),
        "identities": [{"platform": i.platform, "display_name": i.display_name, "locale": i.locale,
                        "timezone": _user_zone(uow, user_id)} for i in uow.users.identities_of(user_id)],
        "memories": [{"id": memories[m.id], **{name: getattr(m, name) for name in MEMORY_VALUES},
                      **{name: _time(getattr(m, name)) for name in MEMORY_TIMES},
                      "superseded_by": _mapped(memories, m.superseded_by),
                      "source_turn": _mapped(turns, m.source_turn_id)}
                     for m in memory_rows],
        "episodes": [{"id": episodes[e.id], "summary": e.summary, "started_at": _time(e.started_at),
                      "ended_at": _time(e.ended_at), "entities": e.entities, "importance": e.importance,
                      "decayed_at": _time(e.decayed_at), "created_at": _time(e.created_at)} for e in episode_rows],
        "todos": [{"content": t.content, "due_at": _time(t.due_at), "remind_at": _time(t.remind_at),
                   "timezone": t.timezone, "status": t.status, "source": t.source, "created_at": _time(t.created_at),
                   "sent_at": _time(t.sent_at), "kind": t.kind, "wall_clock": t.wall_clock} for t in todo_rows],
        "profile": None if profile is None else {"core_summary": profile.core_summary,
                                                 "scratchpad": profile.scratchpad,
                                                 "updated_at": _time(profile.updated_at)},
        "turns": [{"id": turns[t.id], "role": t.role, "text": t.text, "created_at": _time(t.created_at),
                   "episode": _mapped(episodes, t.episode_id), **_round_side(t, turns, replies)}
                  for t in turn_rows],
        "threads": [{"what": h.what, "happens_at": _time(h.happens_at), "day_only": h.day_only,
                     "timezone": h.timezone, "language": h.language, "status": h.status,
                     "asked_at": _time(h.asked_at), "answered_at": _time(h.answered_at),
                     "closed_reason": h.closed_reason, "created_at": _time(h.created_at),
                     "memory": _mapped(memories, h.memory_id), "source_turn": _mapped(turns, h.source_turn_id),
                     "followup_turn": _mapped(turns, h.followup_turn_id)} for h in thread_rows],
    }
    data = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return ExportFile(filename=f"mnemo-export-{now:%Y-%m-%d}.json", data=data)


IMPORT_HMM_STATE_PAIRS = 50_000_000
"""jieba's unknown-word guesses one import may make across all its texts (see
:data:`~shared.search.tokenizer.HMM_STATE_PAIRS_PER_TEXT`), a few seconds: the largest file of ordinary
memories needs far less; a file built to be slow has the rest of its texts cut by the dictionary alone."""


def import_user_data(uow: UnitOfWork, user_id: int, document: ImportDocument, *, now: datetime, chat_id: int,
                     embeddings_wanted: bool) -> ImportReport:
    """Add the checked entries to the caller's data; imported turns and todos belong to ``chat_id``."""
    importer = _Importer(uow, user_id, now, chat_id)
    with shared_budget(IMPORT_HMM_STATE_PAIRS):
        episodes = importer.episodes(document.sections["episodes"])
        turns = importer.turns(document.sections["turns"], episodes)
        memory_ids = importer.memories(document.sections["memories"], turns)
        importer.key_rounds()
    importer.todos(document.sections["todos"])
    importer.threads(document.sections["threads"], turns)
    importer.profile(document.profile)
    if embeddings_wanted:
        uow.outbox.add_each("embed_memory", {f"embed:{memory_id}": {"memory_id": memory_id, "user_id": user_id}
                                             for memory_id in memory_ids}, user_id=user_id)
    return ImportReport(imported=importer.imported, refused=document.refused + tuple(importer.refused),
                        duplicates=importer.duplicates, missed=importer.missed)


@dataclass
class _Importer:
    """Inserts checked entries in file order, skipping exact duplicates, mapping export-local ids; each
    section goes in with a few multi-row statements, not row by row."""

    uow: UnitOfWork
    user_id: int
    now: datetime
    chat_id: int
    imported: dict[str, int] = field(default_factory=lambda: dict.fromkeys((*SECTION_ORDER, "profile"), 0))
    refused: list[str] = field(default_factory=list)
    duplicates: int = 0
    missed: int = 0
    lines: list[int] = field(default_factory=list)
    """The user turns imported that are kept for recall, keyed once their memories are in."""
    memory_map: dict[int, int] = field(default_factory=dict)
    """Export-local memory id → its row (imported or already the user's): what threads link to."""

    def episodes(self, entries: list[dict[str, Any]]) -> dict[int, int]:
        known = {(e.summary, e.started_at, e.ended_at): e.id for e in self._mine(Episode)}
        return self._insert("episodes", entries, lambda e: known.get((e["summary"], e["started_at"], e["ended_at"])),
                            lambda e: Episode(user_id=self.user_id, **_without(e, "id")))

    def turns(self, entries: list[dict[str, Any]], episodes: dict[int, int]) -> dict[int, int]:
        """The turns, each bot reply linked to the user's turn it answers (in a version 1 file, which does
        not say, the user's turn just before it)."""
        known = {(t.role, t.text, t.created_at): t.id for t in self._mine(ConversationTurn)}
        built: dict[int, ConversationTurn] = {}

        def build(t: dict[str, Any]) -> ConversationTurn:
            paused = t["role"] == "user" and bool(t.get("paused"))  # no keys, at the current version: never keyed
            built[t["id"]] = ConversationTurn(
                user_id=self.user_id, chat_id=self.chat_id, role=t["role"], text=t["text"],
                token_estimate=estimate_tokens(t["text"]), extracted=True, paused=paused,
                tokenizer_version=TOKENIZER_VERSION if paused else 0,
                episode_id=_mapped(episodes, t.get("episode")), created_at=t["created_at"])
            return built[t["id"]]

        mapping = self._insert("turns", entries, lambda t: known.get((t["role"], t["text"], t["created_at"])), build)
        answers = _answers_in_file(entries)
        self.uow.round_records.link_replies(self.user_id, {
            built[local].id: mapping[line] for local, line in answers.items() if local in built and line in mapping})
        self.lines = [row.id for row in built.values() if row.role == "user" and not row.paused]
        return mapping

    def key_rounds(self) -> None:
        """Key the imported rounds for recall, now that their memories are in (those said while paused were
        stored with no keys and stay so)."""
        rekey_rounds(self.uow, self.user_id, self.lines, only_kept=False)

    def memories(self, entries: list[dict[str, Any]], turns: dict[int, int]) -> list[int]:
        mine = self._mine(Memory)
        exact: dict[tuple[str, str | None, str | None, str, datetime | None], int] = {
            (m.type, m.subject, m.predicate, m.content, m.created_at): m.id for m in mine}  # an entry may give no time
        live = {(m.type, _fold(m.content)): m.id for m in mine if m.superseded_by is None and m.deleted_at is None}

        def known(e: dict[str, Any]) -> int | None:
            found = exact.get((e["type"], e.get("subject"), e.get("predicate"), e["content"], e.get("created_at")))
            if found is None and e.get("superseded_by") is None and e.get("deleted_at") is None:
                found = live.get((e["type"], _fold(e["content"])))
            return found

        built: dict[int, Memory] = {}

        def build(e: dict[str, Any]) -> Memory:
            values = {"created_at": self.now, **_without(e, "id", "superseded_by", "source_turn"), **IMPORTED_CLAIMS}
            if values.get("tier") == "system":
                values["tier"] = IMPORTED_SYSTEM_TIER
            values.setdefault("updated_at", values["created_at"])
            built[e["id"]] = Memory(user_id=self.user_id, source_turn_id=_mapped(turns, e.get("source_turn")), **values)
            return built[e["id"]]

        mapping = self._insert("memories", entries, known, build)
        self.memory_map = mapping
        replaced_by = {e["id"]: _mapped(mapping, e.get("superseded_by")) for e in entries if e["id"] in built}
        for local, memory in built.items():
            memory.superseded_by = replaced_by[local]
        self.uow.memories.link_superseded(self.user_id, {memory.id: memory.superseded_by for memory in built.values()
                                                         if memory.superseded_by is not None})
        self.uow.events.record_each(self.user_id, "add", "user", {m.id: snapshot(m) for m in built.values()},
                                    reason="imported")
        return [memory.id for memory in built.values()]

    def todos(self, entries: list[dict[str, Any]]) -> None:
        """Past-due pending ones become missed (never sent late); pending ones beyond the user's room are refused."""
        known = {(t.content, t.due_at): t.id for t in self._mine(Todo)}
        room, kept = room_for_reminders(self.uow, self.user_id), []
        for n, entry in enumerate(entries):
            if (entry["content"], entry["due_at"]) in known:
                kept.append({**entry, "id": n})
                continue
            entry = {"status": TodoStatus.PENDING, "remind_at": entry["due_at"], **entry}
            missed = missed_on_import(entry["status"], entry["remind_at"], self.now)
            if missed is not None:
                entry.update(status=TodoStatus.CANCELLED, last_error=missed)
                self.missed += 1
            elif entry["status"] == TodoStatus.PENDING and room < 1:
                self.refused.append(f"todos: {_clip(entry['content'])}: you already have {MAX_PENDING_REMINDERS} "
                                    "pending reminders, the most I keep")
                continue
            elif entry["status"] == TodoStatus.PENDING:
                room -= 1
            kept.append({**entry, "id": n})
        self._insert("todos", kept, lambda t: known.get((t["content"], t["due_at"])),
                     lambda t: Todo(user_id=self.user_id, chat_id=self.chat_id, updated_at=self.now,
                                    **{"created_at": self.now, **_without(t, "id")}))

    def threads(self, entries: list[dict[str, Any]], turns: dict[int, int]) -> None:
        """What the user mentioned coming up, linked to the imported memory and turns; one the user already has
        (the same words at the same time) is a duplicate. Its follow-up goes as any other's: an open one a week
        past expires at the next scan."""
        known = {(h.what, h.happens_at): h.id for h in self._mine(OpenThread)}
        self._insert("threads", [{**entry, "id": n} for n, entry in enumerate(entries)],
                     lambda h: known.get((h["what"], h["happens_at"])),
                     lambda h: OpenThread(user_id=self.user_id, chat_id=self.chat_id, updated_at=self.now,
                                          memory_id=_mapped(self.memory_map, h.get("memory")),
                                          source_turn_id=_mapped(turns, h.get("source_turn")),
                                          followup_turn_id=_mapped(turns, h.get("followup_turn")),
                                          **{"created_at": self.now,
                                             **_without(h, "id", "memory", "source_turn", "followup_turn")}))

    def profile(self, entry: dict[str, Any] | None) -> None:
        if entry is None:
            return
        current = self.uow.profiles.get(self.user_id)
        summary, scratchpad = entry.get("core_summary", ""), entry.get("scratchpad", {})
        if current is not None and (current.core_summary, current.scratchpad) == (summary, scratchpad):
            self.duplicates += 1
        elif current is not None and (current.core_summary or current.scratchpad):
            self.refused.append("profile: you already have a profile; yours was kept")
        else:
            self.uow.profiles.save(self.user_id, summary, scratchpad, entry.get("updated_at", self.now))
            self.imported["profile"] = 1

    def _insert(self, section: str, entries: list[dict[str, Any]], known: Callable[[dict[str, Any]], int | None],
                build: Callable[[dict[str, Any]], Owned]) -> dict[int, int]:
        """Export-local id → database id for every entry; only the ones not known are inserted."""
        mapping: dict[int, int] = {}
        fresh: list[tuple[int, Owned]] = []
        for entry in entries:
            found = known(entry)
            if found is None:
                fresh.append((entry["id"], build(entry)))
            else:
                mapping[entry["id"]] = found
                self.duplicates += 1
        self.uow.accounts.add_owned(self.user_id, [row for _, row in fresh])
        mapping.update({local: row.id for local, row in fresh})
        self.imported[section] = len(fresh)
        return mapping

    def _mine(self, model: type[Owned]) -> list[Owned]:
        return self.uow.accounts.owned(self.user_id, model)


def _replies(turns: list[ConversationTurn]) -> dict[int, int]:
    """Bot turn id → the user's turn id it answers: as the bot turn says, or (turns stored before replies said
    so) the first bot turn after an unanswered user's turn in the same session."""
    replies: dict[int, int] = {}
    waiting: dict[int | None, int] = {}
    for turn in turns:
        if turn.role == "user":
            waiting[turn.session_id] = turn.id
        elif turn.reply_to_turn_id is not None:
            replies[turn.id] = turn.reply_to_turn_id
        elif turn.session_id is not None and turn.session_id in waiting:
            replies[turn.id] = waiting.pop(turn.session_id)
    return replies


def _round_side(turn: ConversationTurn, local: dict[int, int], replies: dict[int, int]) -> dict[str, Any]:
    """What a turn is in its round: a bot turn's ``reply_to``, a user's line's ``paused``."""
    if turn.role == "user":
        return {"paused": turn.paused}
    return {"reply_to": _mapped(local, replies.get(turn.id))}


def _answers_in_file(entries: list[dict[str, Any]]) -> dict[int, int]:
    """Export-local bot turn id → the user's turn it answers: ``reply_to`` where the file says, else (a
    version 1 file) the user's turn just before it when that one is not answered yet."""
    answers: dict[int, int] = {}
    waiting: int | None = None
    for entry in entries:
        if entry["role"] == "user":
            waiting = entry["id"]
        elif "reply_to" in entry:
            if entry["reply_to"] is not None:
                answers[entry["id"]] = entry["reply_to"]
        elif waiting is not None:
            answers[entry["id"]], waiting = waiting, None
    return answers


def _local_ids(rows: Sequence[Owned]) -> dict[int, int]:
    """Database id → export-local id (1, 2, …, in the rows' order)."""
    return {row.id: position for position, row in enumerate(rows, 1)}


def _mapped(ids: Mapping[int, int], reference: int | None) -> int | None:
    """What a reference (a row's, or a file entry's) maps to in ``ids``; None when it refers to nothing, or to
    nothing in ``ids``."""
    return None if reference is None else ids.get(reference)


def _without(entry: dict[str, Any], *names: str) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k not in names and not (k == "value" and v is None)}


def _clip(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def _fold(text: str) -> str:
    return " ".join(text.lower().split())


def _user_zone(uow: UnitOfWork, user_id: int) -> str | None:
    user = uow.users.get(user_id)
    return user.timezone if user is not None else None


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat()
