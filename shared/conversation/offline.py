"""The offline responder: answers when no LLM is configured or the LLM fails, so no turn is dropped.

It reads the message by rules and says only what it knows. Statements become memories and are echoed
in the second person (:mod:`shared.speech.statements`, :mod:`shared.conversation.echo`), a correction says what it
replaced; questions about what the user told before are answered from the speaker's memories in the
view (:mod:`shared.speech.recall_questions`), or it says honestly that it does not know yet; reminders are
confirmed with the resolved local time (:mod:`shared.reminders.timeparse`); greetings, thanks and feelings get
a short reply in the tone of the emotion strategy table (:mod:`shared.conversation.offline_replies`). When the
conversation needs a model, a hint says how to connect one, once per session (the session's context
variable ``OFFLINE_HINT_KEY`` remembers it). It returns the same :class:`TurnOutput` the LLM would.
The reply itself is put together in :mod:`shared.conversation.offline_compose`; the view is
:mod:`shared.conversation.offline_view`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

from shared.conversation.offline_compose import Composer, already_known
from shared.conversation.offline_view import OFFLINE_HINT_KEY, MemoryNote, OfflineView
from shared.emotion import Emotion, category_of, detect_emotion_offline
from shared.llm.turn_schema import TodoEntry, TurnOutput
from shared.memory.stated import StatedMemory
from shared.reminders.deadlines import deadline_todo, reads_as_deadline, todo_content
from shared.reminders.timeparse import REMIND_CUE, resolve_when
from shared.speech.recall_questions import Key, recall_ask
from shared.speech.statements import Statement, read_statements, statement_keys

__all__ = ["OFFLINE_HINT_KEY", "MemoryNote", "OfflineResponder", "OfflineView", "detect_feeling", "extract_reminders",
           "extract_statements", "lookup_keys"]

POLITE_ASK = re.compile(r"^(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?"
                        r"|(?:你)?(?:能不能|可不可以|能|可以)(?:帮我)?)", re.IGNORECASE)
"""The opening of a request put as a question ("can you …?", "能…吗？"), which is not what to be reminded of."""
QUESTION_CONTENT = re.compile(r"^(?:is|are|am|was|were|do|does|did|can|could|will|would|should|what|where|when|who"
                              r"|why|how|which)\b|吗|什么|怎么|哪|谁|几|是否|有没有", re.IGNORECASE)
"""A reminder that is a question in its own right ("is the oven off?", "门锁了吗？")."""
FEELINGS = {
    "sad": ("心情很差", "心情不好", "心情差", "心情糟", "好累", "很累", "太累", "累死", "好难受", "tired", "exhausted",
            "worn out", "feeling down", "feel down", "bad day", "rough day"),
    "anxious": ("压力大", "压力好大", "压力很大", "睡不着", "失眠", "overwhelmed", "stressed out"),
}
"""Feelings the emotion lexicon does not know yet ("今天好累"); used when it finds none."""


def lookup_keys(text: str) -> tuple[list[Key], list[Key]]:
    """The memory keys worth fetching for ``text`` — what it states (to tell news from a correction),
    what it asks about, and the speaker's name — and the (type, prefix) pairs of its open questions."""
    ask = recall_ask(text)
    keys = list(dict.fromkeys([*statement_keys(text), *(ask.keys if ask else ()), ("fact", "name")]))
    return keys, list(ask.prefixes) if ask else []


class OfflineResponder:
    """Rule-based replies, labelled offline by the caller."""

    def respond(self, view: OfflineView) -> TurnOutput:
        emotion = detect_feeling(view.text)
        compose = Composer(view, view.language.chinese, emotion)
        todos = tuple(extract_reminders(view.text, view.sent_at or view.local_now, view.timezone))
        statements = read_statements(view.text, bot_lines=view.bot_lines)
        stored = [s for s in statements if not already_known(s, view)]
        parts = [compose.reminder(todos), compose.statements(statements), compose.reminders()
                 or compose.answer(recall_ask(view.text))]
        parts = [part for part in parts if part] or [compose.unanswerable() or compose.small_talk()]
        hint = compose.model_hint(bool(statements or todos))
        return TurnOutput(response=" ".join(parts + ([hint] if hint else [])), emotion=emotion.to_json(),
                          memory_update=tuple(_entry(s) for s in stored), todos=todos, topic=None,
                          context_variables={OFFLINE_HINT_KEY: "shown"} if hint else {})


def extract_statements(text: str, *, bot_lines: Iterable[str] = (),
                       recalled: Iterable[str] = ()) -> list[StatedMemory]:
    """The statements of ``text`` as memory entries (see :func:`shared.speech.statements.read_statements`); the
    knowledge monitor's rule fallback stores these."""
    return [_entry(s) for s in read_statements(text, bot_lines=bot_lines, recalled=recalled)]


def extract_reminders(text: str, now: datetime, timezone: str) -> list[TodoEntry]:
    """"提醒我明天早上9点开会" / "remind me tomorrow at 9 to call mom" as a todo with an ISO due time, counted
    from ``now`` (when the message was sent); a to-do with a deadline ("周五下午五点前交报告", "the report is due
    Friday 5pm") as a deadline, which pings ahead of its due time."""
    cue = REMIND_CUE.search(text)
    if cue is None:
        stated = deadline_todo(text, now, timezone)
        return [TodoEntry(content=stated.rest[:200], due=stated.due.isoformat(), deadline=True)] if stated else []
    asked, resolved = text[cue.end():], resolve_when(text[cue.end():], now, timezone)
    if resolved is None:
        asked, resolved = text, resolve_when(text, now, timezone)
    if resolved is None:
        return []
    deadline = reads_as_deadline(asked, resolved)
    rest = todo_content(resolved.rest) if deadline else resolved.rest
    what = _reminder_content(REMIND_CUE.sub("", rest), text) or text.strip()
    return [TodoEntry(content=what[:200], due=resolved.due.isoformat(), deadline=deadline)]


def _reminder_content(rest: str, message: str) -> str:
    """What to be reminded of, without the punctuation around it and the question form of the request:
    "can you remind me to drink water?" → "drink water", "能提醒我开会吗？" → "开会". A reminder that is
    itself a question keeps its mark ("remind me at 5: is the oven off?")."""
    what = rest.strip(" ，,。.!！")
    if POLITE_ASK.match(message.lstrip()):
        what = POLITE_ASK.sub("", what.rstrip(" ?？")).strip(" ，,。.")
        what = what.removesuffix("好吗").removesuffix("吗").rstrip(" ，,。.")
    return what if QUESTION_CONTENT.search(what) else what.rstrip(" ?？")


def detect_feeling(text: str) -> Emotion:
    """The lexicon emotion, or one of ``FEELINGS`` when the lexicon finds none."""
    emotion = detect_emotion_offline(text)
    if emotion.primary != "neutral":
        return emotion
    lowered = text.lower()
    for primary, cues in FEELINGS.items():
        found = tuple(cue for cue in cues if cue in lowered)
        if found:
            return Emotion(primary, category_of(primary), 0.6, found[:3])
    return emotion


def _entry(statement: Statement) -> StatedMemory:
    return StatedMemory(type=statement.type, subject="user", predicate=statement.predicate,
                        content=statement.content, tier="long")
