"""The offline responder: answers when no LLM is configured or the LLM fails, so no turn is dropped.

Rule-based extraction of plain statements ("我住在上海", "my name is Ana", "I like green tea"),
reminders through :mod:`shared.timeparse`, the lexicon emotion detector, and templated replies
that weave in what was recalled. It returns the same :class:`TurnOutput` the LLM would.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from shared.emotion import ResponseStrategy, detect_emotion_offline
from shared.llm.turn_schema import MemoryUpdateEntry, TodoEntry, TurnOutput
from shared.timeparse import resolve_when
from shared.tokenizer import keywords

_CJK = re.compile(r"[\u4e00-\u9fff]")
_END = r"(?=[，。！？,.!?;；]|$)"
# (pattern, type, predicate or None = from the object's first keyword, prefix of that predicate)
STATEMENT_RULES: tuple[tuple[re.Pattern[str], str, str | None, str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), memory_type, predicate, prefix)
    for pattern, memory_type, predicate, prefix in (
        (rf"我(?:的名字)?叫(?P<object>[^，。！？,.!?\s]{{1,20}}){_END}", "fact", "name", ""),
        (rf"(?:my name is|call me)\s+(?P<object>[\w' -]{{1,40}}?){_END}", "fact", "name", ""),
        (rf"我(?:现在)?(?:住在|搬到了?)(?P<object>[^，。！？,.!?]{{1,30}}){_END}", "fact", "lives_in", ""),
        (rf"\bI (?:now )?(?:live in|moved to|am living in)\s+(?P<object>[\w' -]{{1,40}}?){_END}",
         "fact", "lives_in", ""),
        (rf"我不喜欢(?P<object>[^，。！？,.!?]{{1,30}}){_END}", "preference", None, "dislikes_"),
        (rf"\bI (?:don't|do not) like\s+(?P<object>[\w' -]{{1,40}}?){_END}", "preference", None, "dislikes_"),
        (rf"我(?:很|最|特别)?(?:喜欢|爱)(?P<object>[^，。！？,.!?]{{1,30}}){_END}", "preference", None, "likes_"),
        (rf"\bI (?:really )?(?:like|love|enjoy)\s+(?P<object>[\w' -]{{1,40}}?){_END}", "preference", None, "likes_"),
        (rf"我(?:是一名|是一个|是个|的工作是|在做)(?P<object>[^，。！？,.!?]{{1,20}}){_END}", "fact", "job", ""),
        (rf"\bI(?:'m| am) an? (?P<object>[\w -]{{1,30}}?){_END}", "fact", "job", ""),
    ))
CORRECTION_LEAD = re.compile(r"^(?:不对|不是|其实|更正一下|actually|no|correction)[，,:：\s]+", re.IGNORECASE)
REMIND_CUE = re.compile(r"提醒我|记得叫我|remind me|don't let me forget", re.IGNORECASE)


@dataclass(frozen=True)
class OfflineView:
    """What the offline responder may see of the turn."""

    text: str
    local_now: datetime
    timezone: str
    strategy: ResponseStrategy
    memories: tuple[str, ...]
    user_name: str | None


class OfflineResponder:
    """Rule-based replies, labelled offline by the caller."""

    def respond(self, view: OfflineView) -> TurnOutput:
        emotion = detect_emotion_offline(view.text)
        entries = tuple(extract_statements(view.text))
        todos = tuple(extract_reminders(view.text, view.local_now, view.timezone))
        chinese = bool(_CJK.search(view.text))
        response = _compose(view, entries, todos, chinese)
        return TurnOutput(response=response, emotion=emotion.to_json(), memory_update=entries, todos=todos,
                          topic=None, context_variables={})


def extract_statements(text: str) -> list[MemoryUpdateEntry]:
    """Plain statements about the speaker, as memory entries (the first rule that fits each clause)."""
    entries = []
    for raw_clause in re.split(r"[。！？!?\n;；]|(?<=[^\d])[.](?!\d)", text):
        clause = CORRECTION_LEAD.sub("", raw_clause.strip())
        for pattern, memory_type, predicate, prefix in STATEMENT_RULES:
            match = pattern.search(clause)
            if not match:
                continue
            obj = match.group("object").strip(" '")
            key = predicate or prefix + (keywords(obj)[:1] or [obj.lower()])[0]
            entries.append(MemoryUpdateEntry(type=memory_type, subject="user", predicate=key,
                                             content=clause.strip("，, ") or obj, tier="long"))
            break
    return entries[:5]


def extract_reminders(text: str, now: datetime, timezone: str) -> list[TodoEntry]:
    """"提醒我明天早上9点开会" / "remind me tomorrow at 9 to call mom" as a todo with an ISO due time."""
    cue = REMIND_CUE.search(text)
    if cue is None:
        return []
    resolved = resolve_when(text[cue.end():], now, timezone) or resolve_when(text, now, timezone)
    if resolved is None:
        return []
    what = REMIND_CUE.sub("", resolved.rest).strip(" ，,。.") or text.strip()
    return [TodoEntry(content=what[:200], due=resolved.due.isoformat())]


def _compose(view: OfflineView, entries, todos, chinese: bool) -> str:
    parts = []
    if todos:
        due = datetime.fromisoformat(todos[0].due)
        parts.append(f"好的，{due:%m月%d日 %H:%M} 提醒你：{todos[0].content}。" if chinese
                     else f"Okay, I'll remind you on {due:%b %d at %H:%M}: {todos[0].content}.")
    elif entries:
        parts.append(f"好的，我记住了：{entries[0].content}。" if chinese else f"Got it: {entries[0].content}.")
    else:
        parts.append(_acknowledge(view.strategy.tone, chinese))
    if view.memories and view.strategy.use_memory and not entries:
        parts.append(f"说起来，{view.memories[0]}——现在还是这样吗？" if chinese
                     else f"By the way: {view.memories[0]} — is that still so?")
    return " ".join(parts)


def _acknowledge(tone: str, chinese: bool) -> str:
    caring = tone in {"empathetic", "calm_reassuring", "patient"}
    if chinese:
        return "听起来不容易，我在这儿陪着你。" if caring else "嗯，我在听，继续说吧。"
    return "That sounds hard — I'm here with you." if caring else "I'm listening — tell me more."
