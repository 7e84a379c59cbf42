"""The words of one follow-up: one model call with the thread and what Mnemo remembers of the user; without a
model (or when it fails, or says nothing usable), a template in the thread's language from the thread itself.

The prompt is built here (pure); :func:`compose_followup` makes the call, metered as kind ``followup``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from shared.followups.reading import events_in
from shared.followups.texts import day_phrase, offline_followup
from shared.llm.metering import CallUsage, metered
from shared.llm.retries import LLMUnavailable
from shared.reminders.timeparse import zone_of
from shared.speech.non_answers import non_answer
from shared.text import clean_text, is_invisible, language_of

if TYPE_CHECKING:
    from shared.llm.client import ChatModel

log = logging.getLogger(__name__)

MAX_FOLLOWUP_CHARS = 400
MIN_FOLLOWUP_CHARS = 6
"""Shorter is no question about anything ("面试", "ok?")."""
FOLLOWUP_MAX_TOKENS = 120
"""One or two sentences; a small model that rambles is cut here (and its words still sent, trimmed)."""
MAX_MEMORIES = 5
_MARKUP = re.compile(r"<<|>>|<\|[a-z_]{1,30}\|>|\[/?INST\]|</?[a-z_]{1,30}>|^#{1,6}[ \t]",
                     re.IGNORECASE | re.MULTILINE)
"""A chat template's or a prompt's markup ("<<SYS>>", "<|im_start|>", "[INST]", "<app_note>", a heading)."""
_LIST = re.compile(r"^[ \t]*(?:[-*•]|\d{1,3}[.)])[ \t]", re.MULTILINE)


@dataclass(frozen=True)
class FollowupFacts:
    """What a follow-up is written from."""

    what: str
    happens_at: datetime
    timezone: str
    chinese: bool
    memories: tuple[str, ...] = ()
    bot_name: str = "Mnemo"
    personality: str = ""


@dataclass(frozen=True)
class _Example:
    """One worked example shown before the thread: the facts as the prompt gives them, and the message. A small
    local model (Gemma 3 270M) continues a pattern far better than it follows an instruction; a large one is not
    hurt by it. Its own words (``marks``) in a follow-up mean the model copied it, not wrote about the thread."""

    facts: str
    message: str
    marks: tuple[str, ...]


_EXAMPLES = {
    False: _Example("Coming up: your match\nWhen: {day} 10:00\nRemembered: your knee was hurting",
                    "How did your match go {day}? I hope your knee held up!", ("knee", "match")),
    True: _Example("事情：比赛\n时间：{day} 10:00\n记得：膝盖有点疼", "{day}的比赛怎么样？膝盖还好吗？",
                   ("膝盖", "比赛")),
}
"""Their day is the thread's ("today", "on Tuesday", "昨天"): a model that copies the example's day is right."""
_INSTRUCTIONS = {
    False: ("You are {name}, a friend who remembers what people tell you. {personality}\nSomething the user told "
            "you about has now happened. Write ONE short, warm message in English (one or two sentences) asking how "
            "it went; if you remember something about it (a worry, a wish, a detail), mention it. No greeting "
            "formula, no list, nothing but the message."),
    True: ("你是 {name}，一个记得朋友说过的话的朋友。{personality}\n用户之前提到的事已经过去了。"
           "用中文写一条简短、温暖的消息（一两句话）问问进展如何；如果你记得相关的细节（担心、期待），自然地提一下。"
           "不要客套话，不要列表，只写这条消息。"),
}
_ENDS = ".!?。！？"
_CLOSERS = "\"'”’」)"


def followup_messages(facts: FollowupFacts, now: datetime) -> list[dict[str, Any]]:
    """The chat messages asking the model for the follow-up: the instructions, one worked example in the thread's
    language, then the thread's own facts (its words, its day as seen from ``now``, what Mnemo remembers)."""
    example = _EXAMPLES[facts.chinese]
    system = _INSTRUCTIONS[facts.chinese].format(name=facts.bot_name, personality=facts.personality)
    day = day_phrase(facts.happens_at, now, zone_of(facts.timezone), chinese=facts.chinese)
    return [{"role": "system", "content": system.strip()},
            {"role": "user", "content": example.facts.format(day=day)},
            {"role": "assistant", "content": example.message.format(day=day)},
            {"role": "user", "content": thread_facts(facts, now)}]


def thread_facts(facts: FollowupFacts, now: datetime) -> str:
    """The thread as the prompt gives it, in the shape of the worked example."""
    zone = zone_of(facts.timezone)
    day = day_phrase(facts.happens_at, now, zone, chinese=facts.chinese)
    when = f"{day} {facts.happens_at.astimezone(zone):%H:%M}"
    memories = facts.memories[:MAX_MEMORIES]
    if facts.chinese:
        return f"事情：{facts.what}\n时间：{when}\n记得：{'；'.join(memories) or '（没有）'}"
    return f"Coming up: {facts.what}\nWhen: {when}\nRemembered: {'; '.join(memories) or '(nothing)'}"


def offline_text(facts: FollowupFacts, now: datetime) -> str:
    return offline_followup(facts.what, facts.happens_at, now, zone_of(facts.timezone), chinese=facts.chinese)


def compose_followup(model: ChatModel | None, facts: FollowupFacts,
                     now: datetime) -> tuple[str, tuple[CallUsage, ...], bool]:
    """The follow-up's words, what the model call cost, and whether the model wrote them (else the template)."""
    if model is None:
        return offline_text(facts, now), (), False
    messages = followup_messages(facts, now)
    with metered("followup") as meter:
        try:
            answer = model.complete_text(messages, max_tokens=FOLLOWUP_MAX_TOKENS)
        except LLMUnavailable as exc:
            log.warning("the model could not write a follow-up, the template is sent: %s", exc)
            answer = ""
    text = usable_followup(answer, facts, instructions_of(messages))
    log.debug("the model wrote %r for a follow-up; usable: %s", answer, text is not None)
    if text is None:
        return offline_text(facts, now), tuple(meter.calls), False
    return text, tuple(meter.calls), True


def instructions_of(messages: Sequence[dict[str, Any]]) -> str:
    """Every word of the prompt but the thread's own facts: what a reply must not copy."""
    return "\n".join(str(message["content"]) for message in messages[:-1])


def usable_followup(answer: str, facts: FollowupFacts, instructions: str) -> str | None:
    """The model's message, cut to what a person should read, or None when nothing is. It is cut to its first
    paragraph and to whole sentences: the first, and a second only when it is about something remembered (a small
    model goes on with whatever comes to it). None when what is left is too short, JSON, a list, a prompt
    template's markup, not in the thread's language, no question, not naming the event, the prompt's field names,
    the worked example's words ("knee", "膝盖") that the thread does not have, or not language at all (the hot
    path's :func:`shared.speech.non_answers.non_answer`, a copy of its instructions included)."""
    text = clean_text(answer or "", MAX_FOLLOWUP_CHARS).strip().strip('"“”').strip()
    if text.startswith(("{", "[")) or _MARKUP.search(text) or _LIST.search(text):
        return None
    text = _first_sentences(text.split("\n", 1)[0].strip().strip('"“”').strip(), facts)
    if len(text) < MIN_FOLLOWUP_CHARS or is_invisible(text):
        return None
    if language_of(text).chinese != facts.chinese or _copies_the_example(text, facts) or _LABEL.search(text):
        return None
    if not names_the_event(text, facts.what) or not _QUESTION.search(text):
        return None
    if (reason := non_answer(text, facts.what, instructions)) is not None:
        log.info("the model's follow-up was %s: the template is sent", reason)
        return None
    return text


def _first_sentences(paragraph: str, facts: FollowupFacts) -> str:
    sentences = _sentences(paragraph)
    if not sentences:
        return ""
    kept = sentences[:1]
    remembered = " ".join(facts.memories).casefold()
    if len(sentences) > 1 and remembered and _shares_a_word(sentences[1], remembered):
        kept.append(sentences[1])
    ended = [sentence for sentence in kept if sentence[-1] in _ENDS + _CLOSERS]
    return ("" if facts.chinese else " ").join(ended or kept[:1])


def _sentences(paragraph: str) -> list[str]:
    """The sentences of ``paragraph`` with their ends (a Chinese one needs no space after it), and the words after
    the last one; in one pass."""
    found, start, at = [], 0, 0
    while at < len(paragraph):
        if paragraph[at] in _ENDS:
            end = at + 1
            while end < len(paragraph) and (paragraph[end] in _ENDS or paragraph[end] in _CLOSERS):
                end += 1
            if paragraph[at] in "。！？" or end == len(paragraph) or paragraph[end].isspace():
                found.append(paragraph[start:end].strip())
                start = at = end
                continue
        at += 1
    found.append(paragraph[start:].strip())
    return [sentence for sentence in found if sentence]


def _shares_a_word(sentence: str, remembered: str) -> bool:
    """Whether ``sentence`` names something of ``remembered``: a word of four letters or more, or two Chinese
    characters in a row."""
    lowered = sentence.casefold()
    words = _LONG_WORD.findall(lowered)
    pairs = [lowered[i:i + 2] for i in range(len(lowered) - 1) if _HAN_PAIR.fullmatch(lowered[i:i + 2])]
    return any(word in remembered for word in words) or any(pair in remembered for pair in pairs)


def names_the_event(text: str, what: str) -> bool:
    """Whether a follow-up names what it follows up: the thread's own words (without "your", "the"), or a word of
    the same kind of event ("your doctor" for "the doctor's visit")."""
    own = _OWNER.sub("", what.strip()).casefold()
    return own in text.casefold() or bool(events_in(text) & events_in(what))


_LONG_WORD = re.compile(r"[a-z]{4,}")
_OWNER = re.compile(r"^(?:your|the|my)\s+", re.IGNORECASE)
_QUESTION = re.compile(r"[?？]")
"""A follow-up asks how it went: without a question it is a statement the model made up ("今天，我面试了。")."""
_LABEL = re.compile(r"(?:coming up|when|remembered)\s*:|(?:事情|时间|记得)\s*[：:]", re.IGNORECASE)
"""The prompt's own field names: a reply holding one is the prompt's pattern going on, not a message."""
_HAN_PAIR = re.compile(r"[\u4e00-\u9fff]{2}")


def _copies_the_example(text: str, facts: FollowupFacts) -> bool:
    own = " ".join((facts.what, *facts.memories)).casefold()
    lowered = text.casefold()
    return any(mark in lowered and mark not in own for mark in _EXAMPLES[facts.chinese].marks)


def memory_lines(contents: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(content for content in contents if content))[:MAX_MEMORIES]
