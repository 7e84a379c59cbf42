"""Which remembered fact a question asks for: "我叫什么", "我住哪", "你还记得我最喜欢什么水果吗", "what's my
dog's name", "where do I live". Pure rules, no database.

A question about the speaker names the memory keys that would answer it — the same (type, predicate)
pairs :mod:`shared.speech.rules` gives the statements ("我住在北京" is ``lives_in``, and so is the
answer to "我住哪"), or a predicate prefix for open questions ("我喜欢什么" → every ``likes_``).
Words of the question are kept too, to match memories stored under other keys.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shared.search.tokenizer import query_terms, search_stem
from shared.speech.acts import sentences
from shared.speech.lexicon import PEOPLE, canonical_thing

Key = tuple[str, str]
CUE_WORDS = frozenset({"记得", "知道", "告诉", "问", "remember", "know", "recall", "tell", "still"})
"""Words of a recall question that say nothing about what is asked."""
CUE_TERMS = frozenset(search_stem(word) for word in CUE_WORDS)
"""The same as search tokens (remember → rememb), as the question's terms are."""

_SLOTS: tuple[tuple[re.Pattern[str], tuple[Key, ...]], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), keys) for pattern, keys in (
        (r"我叫(?:什么|啥)|我(?:的)?名字(?:是|叫)?(?:什么|啥)|我是谁|我的名字|\bmy name\b|\bwho am i\b|"
         r"\bwhat do (?:you|people) call me\b", (("fact", "name"),)),
        (r"我(?:现在)?(?:住|住在)(?:哪|什么地方|哪个城市|什么城市)|我(?:现在)?家(?:住)?在哪|我在哪(?:里|儿)?住|"
         r"\bwhere do i (?:live|stay)\b|\bwhere i live\b|\bwhich (?:city|country|town) do i live\b|"
         r"\bi live in (?:which|what)\b|\bwhere(?:'s| is) my home\b|\bwhere did i move\b", (("fact", "lives_in"),)),
        (r"我(?:是)?(?:哪里|哪儿|哪个地方|什么地方)人|我来自哪|我(?:的)?(?:老家|家乡)(?:在|是)?(?:哪|什么)|"
         r"\bwhere am i from\b|\bwhere do i come from\b|\bwhere did i grow up\b",
         (("fact", "from"), ("fact", "grew_up_in"))),
        (r"我(?:的)?(?:工作|职业)|我(?:是)?做(?:什么|啥)|我是干(?:什么|啥)|我从事|"
         r"\bmy (?:job|occupation|profession|work)\b|"
         r"\bwhat do i do\b|\bwhere do i work\b|\bwhat(?:'s| is) my line of work\b",
         (("fact", "job"), ("fact", "works_at"))),
        (r"我在哪(?:里|儿|个公司|家公司)?(?:工作|上班)", (("fact", "works_at"), ("fact", "job"))),
        (r"我在哪(?:里|儿|个学校|所学校)?(?:上学|读书|念书)|我(?:的)?专业|我(?:是)?学(?:什么|啥)|"
         r"\bwhat do i study\b|\bwhere do i study\b|\bmy major\b",
         (("fact", "studies_at"), ("fact", "major"), ("fact", "studies"))),
        (r"我(?:今年)?(?:几岁|多大|多少岁)|\bhow old am i\b|\bmy age\b", (("fact", "age"),)),
        (r"我(?:的)?生日|\bmy birthday\b|\bwhen was i born\b", (("fact", "birthday"), ("fact", "born"))),
        (r"我(?:的)?(?:爱好|兴趣)|\bmy hobb(?:y|ies)\b", (("preference", "hobby"),)),
        (r"我(?:吃|是)(?:什么)?素|我的饮食|\bmy diet\b|\bam i (?:a )?(?:vegan|vegetarian)\b",
         (("preference", "diet"),)),
    ))
_FAVOURITE = (
    re.compile(r"我最(?:喜欢|爱)(?:的)?(?:什么|哪个|哪种|哪一种|啥)(?:样的)?(?P<thing>[\u4e00-\u9fff]{1,6}?)(?=吗|呢|$|[，,？?])"),
    re.compile(r"我最(?:喜欢|爱)的(?P<thing>[\u4e00-\u9fff]{1,6}?)(?:是|叫)(?:什么|哪个|啥|哪种|谁)"),
    re.compile(r"\bmy\s+(?:all-time\s+)?(?:favou?rite|fave)\s+(?P<thing>[a-z -]{1,25}?)"
               r"(?=\s*(?:\?|$|,|\s+is\b|\s+was\b))",
               re.IGNORECASE),
    re.compile(r"\bwhich\s+(?P<thing>[a-z]+)\s+do\s+i\s+(?:like|love)\s+(?:best|most)\b", re.IGNORECASE),
)
_NAMED = (
    re.compile(r"我(?:的|家的?|养的)?(?P<thing>[\u4e00-\u9fff]{1,6}?)(?:的名字)?(?:叫|是)(?:什么|啥|谁)"),
    re.compile(r"\bmy\s+(?P<thing>[a-z-]+(?:\s[a-z-]+)?)'s\s+name\b|"
               r"\bwhat(?:'s| is)\s+my\s+(?P<thing2>[a-z-]+(?:\s[a-z-]+)?)\s+called\b|"
               r"\bthe name of my\s+(?P<thing3>[a-z-]+(?:\s[a-z-]+)?)\b|"
               r"\bwhat did i (?:name|call) my\s+(?P<thing4>[a-z-]+(?:\s[a-z-]+)?)\b", re.IGNORECASE),
)
_NOT_THINGS = frozenset({"名字", "名", "最喜欢", "喜欢", "工作", "职业", "生日", "爱好", "专业", "家", "老家",
                         "name", "job"})
_OPEN: tuple[tuple[re.Pattern[str], tuple[Key, ...]], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), keys) for pattern, keys in (
        (r"我(?:最)?(?:喜欢|爱)(?:吃|喝|玩|看|听|做)?(?:什么|啥|哪些)|\bwhat (?:do|did) i (?:like|love|enjoy)\b|"
         r"\bwhat (?:kind|sort|type) of \w+ do i like\b", (("preference", "likes_"), ("preference", "favourite_"))),
        (r"我(?:有|养了?|养的)(?:什么|哪些|几只|几个|几条)|\bdo i have (?:a|any)\b|"
         r"\bwhat (?:pets?|animals?) do i have\b",
         (("fact", "has_"), ("person", "has_"), ("fact", "_name"))),
        (r"我对(?:什么|啥)过敏|\bwhat am i allergic to\b", (("fact", "allergic_to_"),)),
        (r"我不(?:吃|喝)(?:什么|啥)|\bwhat (?:don't|do not) i eat\b", (("preference", "eats_"),)),
    ))
_ABOUT_ME = re.compile(r"(?:记得|认识|知道)我(?:吗|不|么)?$|你知道我是谁|\b(?:remember|know) me\??$|"
                       r"(?:记得|知道|记住了)(?:关于)?我(?:的)?(?:什么(?!时候|地方|时间)|哪些|些什么|啥)(?:事|事情)?[吗呢?？]*$|"
                       r"关于我(?:的事)?你(?:都|还)?(?:记得|知道)(?:些)?(?:什么|哪些|啥)|你对我(?:有)?(?:什么|多少)了解|"
                       r"\bwhat(?: else)? (?:do|did|have) you (?:know|remember(?:ed)?|learn(?:ed|t)?|kept|stored"
                       r"|saved) (?:about|of|on) me\b|\bwhat you (?:know|remember) about me\b|"
                       r"\bhow much do you (?:know|remember) about me\b|\bwho am i to you\b", re.IGNORECASE)
_ABOUT_SELF = re.compile(
    r"\b(?:what|where|which|who|when|how (?:many|much|often|long))\b.*\b(?:do|did|does|am|was|have|had)\s+i\b"
    r"|\b(?:what|where|which|who|when)(?:'s|\s+(?:is|was|are|were))\s+my\b"
    r"|我(?!们)(?:(?!应该|该|要|能|可以|想|需要|得)[^，,。！？?!]){0,10}?(?:什么|啥|哪|谁|几|多少)", re.IGNORECASE)
"""A question about the speaker in words no slot knows ("what do I keep on my balcony", "我在阳台上养什么"),
not asking for advice (no should/can, 应该/能/想…): only a memory that shares a word with it answers it."""
_ABOUT_BOT = re.compile(r"你(?:是|叫)(?:谁|什么|啥)|你的名字|你是(?:机器人|人|AI)|\bwho are you\b|"
                        r"\bwhat(?:'s| is) your name\b|"
                        r"\bwhat are you\b|\bare you (?:a |an )?(?:bot|robot|human|ai|real)\b", re.IGNORECASE)


@dataclass(frozen=True)
class RecallAsk:
    """What a question about the speaker asks for."""

    keys: tuple[Key, ...]
    """Exact memory keys that answer it, best first."""
    prefixes: tuple[Key, ...] = ()
    """(type, predicate prefix or suffix) for open questions: ("preference", "likes_")."""
    terms: tuple[str, ...] = ()
    about_user: bool = False
    """"你还记得我吗", "what do you know about me": anything known answers it."""
    tentative: bool = False
    """Only a question about the speaker in general words: a memory sharing one of ``terms`` answers it, and
    without one it is a question like any other (it may want advice, not a memory)."""


def recall_ask(text: str) -> RecallAsk | None:
    """What the message's questions ask about the speaker; None when it asks nothing of the kind."""
    keys: list[Key] = []
    prefixes: list[Key] = []
    words: list[str] = []
    about_user = sure = False
    for sentence in sentences(text):
        if sentence.kind != "question":
            continue
        body = sentence.body.replace("’", "'")
        found, open_keys = _keys_in(body), [key for pattern, ks in _OPEN if pattern.search(body) for key in ks]
        about_me = bool(_ABOUT_ME.search(body))
        recalled = sentence.recall and not asks_about_bot(body)
        if found or open_keys or about_me or recalled or _ABOUT_SELF.search(body):
            keys += found
            prefixes += open_keys
            about_user = about_user or about_me
            sure = sure or bool(found or open_keys or about_me or recalled)
            words += [term for term in query_terms(body) if term not in CUE_TERMS]
    if not (keys or prefixes or about_user or words):
        return None
    return RecallAsk(tuple(dict.fromkeys(keys)), tuple(dict.fromkeys(prefixes)), tuple(dict.fromkeys(words)),
                     about_user, tentative=not sure)


def asks_about_bot(text: str) -> bool:
    """"你是谁", "what's your name": a question about the bot itself."""
    return bool(_ABOUT_BOT.search(text))


def _keys_in(body: str) -> list[Key]:
    keys: list[Key] = []
    for pattern in _FAVOURITE:
        for match in pattern.finditer(body):
            keys.append(("preference", f"favourite_{canonical_thing(match.group('thing'))}"))
    for pattern in _NAMED:
        for match in pattern.finditer(body):
            thing = next((value for value in match.groupdict().values() if value), "")
            if thing and thing.lower() not in _NOT_THINGS and not thing.startswith(("最", "喜欢")):
                canon = canonical_thing(thing)
                keys.append(("person" if canon in PEOPLE else "fact", f"{canon}_name"))
    for pattern, slot_keys in _SLOTS:
        if pattern.search(body):
            keys += slot_keys
    return keys
