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


def followup_messages(facts: FollowupFacts, now: datetime) -> list[dict[str, Any]]:
    """The chat messages asking the model for the follow-up."""
    zone = zone_of(facts.timezone)
    day = day_phrase(facts.happens_at, now, zone, chinese=facts.chinese)
    language = "Chinese (简体中文)" if facts.chinese else "English"
    system = (f"You are {facts.bot_name}, a companion who remembers what people tell you. {facts.personality}\n"
              "The user mentioned something coming up, and it has now passed. Write ONE short, warm message "
              f"(one or two sentences, in {language}) asking how it went. If one of the memories below is about "
              "it (a worry, a wish, a detail), mention it naturally. No greeting formula, no lists, no JSON, "
              "nothing else but the message.")
    remembered = "\n".join(f"- {memory}" for memory in facts.memories[:MAX_MEMORIES]) or "- (nothing relevant)"
    user = (f"What was coming up: {facts.what}\nWhen: {facts.happens_at.astimezone(zone):%Y-%m-%d %H:%M} "
            f"({day})\nWhat you remember about the user:\n{remembered}")
    return [{"role": "system", "content": system.strip()}, {"role": "user", "content": user}]


def offline_text(facts: FollowupFacts, now: datetime) -> str:
    return offline_followup(facts.what, facts.happens_at, now, zone_of(facts.timezone), chinese=facts.chinese)


def compose_followup(model: ChatModel | None, facts: FollowupFacts,
                     now: datetime) -> tuple[str, tuple[CallUsage, ...], bool]:
    """The follow-up's words, what the model call cost, and whether the model wrote them (else the template)."""
    if model is None:
        return offline_text(facts, now), (), False
    with metered("followup") as meter:
        try:
            answer = model.complete_text(followup_messages(facts, now), max_tokens=FOLLOWUP_MAX_TOKENS)
        except LLMUnavailable as exc:
            log.warning("the model could not write a follow-up, the template is sent: %s", exc)
            answer = ""
    messages = followup_messages(facts, now)
    text = usable_followup(answer, facts, messages[0]["content"])
    if text is None:
        return offline_text(facts, now), tuple(meter.calls), False
    return text, tuple(meter.calls), True


def usable_followup(answer: str, facts: FollowupFacts, instructions: str) -> str | None:
    """The model's message, trimmed and cut; None when it is nothing a person should read: too short, JSON, a list, a
    prompt template's markup, not in the thread's language, or not language at all (the hot path's
    :func:`shared.speech.non_answers.non_answer`, a copy of its instructions included)."""
    text = clean_text(answer or "", MAX_FOLLOWUP_CHARS).strip().strip('"“”').strip()
    if len(text) < MIN_FOLLOWUP_CHARS or is_invisible(text) or text.startswith(("{", "[")) or _MARKUP.search(text) \
            or _LIST.search(text):
        return None
    if language_of(text).chinese != facts.chinese:
        return None
    if (reason := non_answer(text, facts.what, instructions)) is not None:
        log.info("the model's follow-up was %s: the template is sent", reason)
        return None
    return text


def memory_lines(contents: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(content for content in contents if content))[:MAX_MEMORIES]
