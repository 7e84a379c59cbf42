"""Questions about what was said in the conversation: "我上次跟你说我去了哪？", "what did you recommend to me last
time?", "5月2日我们聊了什么？", "what was the name of that film you told me about?". Pure rules, no database.

Such a question is answered from a round (what the user said and what the bot replied), not from a memory:
which side it asks about decides which words are quoted — the bot's when it asks what "you" said, recommended
or promised, the user's when it asks what "I" told, either when it asks what "we" talked about.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shared.search.tokenizer import query_terms, search_stem
from shared.speech.acts import sentences

BOT_SIDE, USER_SIDE, EITHER_SIDE = "bot", "user", "either"

_VERBS_EN = r"(?:recommend|suggest|say|said|tell|told|mention|advise|promise|propose|name|pick|share)(?:ed|s)?"
_BOT_EN = re.compile(
    rf"\b(?:did|have|had|do)\s+you\s+(?:ever\s+|just\s+|once\s+)?{_VERBS_EN}\b"
    rf"|\byou\s+(?:once\s+|just\s+)?(?:recommended|suggested|told\s+me|mentioned|said|advised|promised|named)\b"
    r"|\byour\s+(?:recommendation|suggestion|advice|tip)s?\b", re.IGNORECASE)
_USER_EN = re.compile(
    r"\b(?:did|have|had|do)\s+i\s+(?:ever\s+|just\s+|once\s+)?(?:tell|say|mention|share)\b"
    r"|\bi\s+(?:once\s+|just\s+)?(?:told\s+you|mentioned|said\s+to\s+you)\b", re.IGNORECASE)
_EITHER_EN = re.compile(
    r"\b(?:did|have|had|do)\s+we\s+(?:ever\s+)?(?:talk|chat|speak|discuss)\w*\b|\bwe\s+(?:talked|chatted|discussed)\b"
    r"|\b(?:last|first)\s+time\s+we\b|\bthe\s+first\s+time\b|\blast\s+time\b|\bthe\s+other\s+day\b"
    r"|\bour\s+(?:last\s+|first\s+)?(?:chat|conversation|talk)\b", re.IGNORECASE)
_BOT_ZH = re.compile(r"你(?:上次|之前|以前|那天|那次|刚才|刚刚)?(?:跟我|和我|给我|对我|向我)?"
                     r"(?:说|讲|推荐|建议|提到|提过|答应|介绍|告诉我)(?:过|的|了)")
_USER_ZH = re.compile(r"我(?:上次|之前|以前|那天|那次|刚才|刚刚)?(?:跟你|和你|对你|向你|告诉你)"
                      r"(?:说|讲|提|聊)?(?:过|的|了)?")
_EITHER_ZH = re.compile(r"我们(?:上次|之前|以前|那天|那次|第一次)?(?:聊|谈|说|讲)(?:了|过|的)"
                        r"|上次|上回|那天|那次|第一次聊")
PAST_WORDS = frozenset(search_stem(word) for word in (
    "recommend", "suggest", "say", "said", "tell", "told", "mention", "advise", "promise", "talk", "chat",
    "discuss", "last", "time", "first", "name", "remember", "day", "other", "conversation", "recommendation",
    "suggestion", "advice", "上次", "上回", "之前", "以前", "那天", "那次", "推荐", "建议", "提到", "说", "聊",
    "告诉", "记得", "什么", "第一次", "我们", "刚才"))
"""Words of such a question that say it is about the past, not what it is about."""


@dataclass(frozen=True)
class PastAsk:
    """What a question about the conversation asks: whose words, and the words that say what about."""

    side: str
    terms: tuple[str, ...]


def past_ask(text: str) -> PastAsk | None:
    """The question about what was said in ``text``; None when it asks nothing of the kind."""
    for sentence in sentences(text):
        if sentence.kind != "question":
            continue
        body = sentence.body.replace("’", "'")
        side = _side(body)
        if side is not None:
            terms = tuple(term for term in dict.fromkeys(query_terms(body)) if term not in PAST_WORDS)
            return PastAsk(side, terms)
    return None


def _side(body: str) -> str | None:
    if _BOT_EN.search(body) or _BOT_ZH.search(body):
        return BOT_SIDE
    if _USER_EN.search(body) or _USER_ZH.search(body):
        return USER_SIDE
    if _EITHER_EN.search(body) or _EITHER_ZH.search(body):
        return EITHER_SIDE
    return None
