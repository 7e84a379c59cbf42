""""Forget that I have a cat" / "忘掉我说过的猫": what a message asks, in words, to be forgotten. Pure rules.

The words that name it are returned as said (without the request around them); which memories they name is
the caller's to find. Only requests about what the user said of themselves count ("forget that I …",
"forget what I told you about …", "忘掉我说过的…"); "forget about work, let's go hiking" is small talk and
gives None, as do questions.
"""

from __future__ import annotations

import re

_EN = re.compile(r"^(?:(?:please|pls|oh|and|also|actually)[,\s]+)*(?:can you\s+|could you\s+)?forget\s+"
                 r"(?:(?:that|about|what I said about|what I told you about|the (?:fact|thing) that)\s+)+"
                 r"(?P<what>.+?)(?:\s*,?\s*please)?[\s.!?]*$", re.IGNORECASE)
_ZH = re.compile(r"^(?:请|麻烦)?(?:你)?(?:把|帮我)?(?:忘掉|忘记|忘了|删掉|删除)(?:吧)?[，,]?\s*"
                 r"(?:我(?:之前|以前|刚才)?(?:说过|说|讲过|告诉你)的?)?(?:关于)?(?P<what>.+?)"
                 r"(?:这件事|这回事|那件事|的事|这条)?(?:吧|哦|啊)?[。！!.\s]*$")
_ZH_OBJECT_FIRST = re.compile(r"^(?:请)?(?:把)?(?:我(?:说过|说)的)?(?P<what>.+?)(?:这件事|那件事|的事)?"
                              r"(?:忘掉|忘了|删掉)(?:吧)?[。！!.\s]*$")
_NOTHING_NAMED = frozenset({"吧", "了", "它", "这个", "那个", "一切", "it", "this", "that", "everything"})
_SPEAKER = re.compile(r"^(?:I\s+|I'm\s+|my\s+|我的?)", re.IGNORECASE)
_ABOUT_ME = re.compile(r"what I (?:said|told you)|我(?:之前|以前|刚才)?(?:说过|说|讲过|告诉你)", re.IGNORECASE)
"""Only what the user said of themselves is named: "forget about work" is small talk, "forget that my …" is not."""


def forget_request(text: str) -> str | None:
    """The words naming what ``text`` asks to forget ("have a cat", "猫"), or None when it asks no such thing."""
    stripped = " ".join((text or "").split())
    for pattern in (_EN, _ZH, _ZH_OBJECT_FIRST):
        match = pattern.match(stripped)
        if match:
            what = match["what"].strip(" ，,。.!！?？\"'“”")
            about_me = _ABOUT_ME.search(match.group()[:match.start("what")]) or _SPEAKER.match(what)
            return what if about_me and what.lower() not in _NOTHING_NAMED else None
    return None


def named_words(what: str) -> str:
    """The part of the named thing to look for in a memory: without the speaker ("I have a cat" → "have a cat")."""
    return _SPEAKER.sub("", what).strip() or what
