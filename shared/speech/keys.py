"""How a memory's key (its predicate, ``likes_吃火锅``) reads to a person, in English or Chinese. Pure.

Keys are made by the statement rules (:mod:`shared.speech.rules`: ``likes_<topic>``, ``<thing>_name``,
``lives_in`` …), by the model (snake_case, ``likes_drink``, ``pet_name``) and by hand in the panel, then
folded by :func:`shared.memory.writes.normalise_key` (lower case, spaces as ``_``). A key with a known
relation reads as that relation in the reader's language and its topic as written ("likes · 吃火锅",
"喜欢：吃火锅"), except that a canonical name of the lexicon reads in Chinese to a Chinese reader
(``has_cat``: "has · cat", "拥有：猫"); any other key reads with spaces for its underscores. The raw key
stays what is stored, exported and sent back when a memory is edited.
"""

from __future__ import annotations

from shared.speech.lexicon import CHINESE_NAMES

LANGUAGES = ("en", "zh")

WHOLE_KEYS: dict[str, tuple[str, str]] = {
    "name": ("name", "名字"), "lives_in": ("lives in", "住在"), "from": ("comes from", "来自"),
    "grew_up_in": ("grew up in", "在哪里长大"), "job": ("job", "职业"), "works_at": ("works at", "工作单位"),
    "studies_at": ("studies at", "就读学校"), "studies": ("studies", "学习"), "major": ("major", "专业"),
    "age": ("age", "年龄"), "birthday": ("birthday", "生日"), "born": ("born", "出生"), "hobby": ("hobby", "爱好"),
    "diet": ("diet", "饮食"), "likes": ("likes", "喜欢"), "general": ("general", "其他"),
}
"""Keys that are a relation alone: (English, Chinese)."""
PREFIXES: dict[str, tuple[str, str]] = {
    "likes_": ("likes · {topic}", "喜欢：{topic}"), "allergic_to_": ("allergic to · {topic}", "过敏：{topic}"),
    "eats_": ("eats · {topic}", "饮食：{topic}"), "has_": ("has · {topic}", "拥有：{topic}"),
    "favourite_": ("favourite · {topic}", "最喜欢的{topic}"), "favorite_": ("favourite · {topic}", "最喜欢的{topic}"),
    "trait_": ("trait · {topic}", "性格：{topic}"),
}
"""Relation prefixes followed by a topic: (English, Chinese) templates."""
SUFFIXES: dict[str, tuple[str, str]] = {"_name": ("{topic} · name", "{topic}的名字")}
"""Relation suffixes after a topic (``猫_name``, ``pet_name``)."""


def key_text(key: str | None, language: str) -> str | None:
    """The key as a reader of ``language`` (``en`` or ``zh``) sees it; None when there is no key."""
    if not key:
        return None
    return _read(key, language)


def _read(key: str, language: str) -> str:
    chinese = language == "zh"
    if key in WHOLE_KEYS:
        return WHOLE_KEYS[key][chinese]
    for prefix, templates in PREFIXES.items():
        if key.startswith(prefix) and len(key) > len(prefix):
            return templates[chinese].format(topic=_topic(key[len(prefix):], chinese))
    for suffix, templates in SUFFIXES.items():
        if key.endswith(suffix) and len(key) > len(suffix):
            return templates[chinese].format(topic=_topic(key[: -len(suffix)], chinese))
    return _topic(key, chinese)


def key_texts(key: str | None) -> dict[str, str] | None:
    """The key as read in each of :data:`LANGUAGES` (what the web panel picks from); None when there is none."""
    if not key:
        return None
    return {language: _read(key, language) for language in LANGUAGES}


def _topic(words: str, chinese: bool) -> str:
    if chinese and words in CHINESE_NAMES:
        return CHINESE_NAMES[words]
    return " ".join(part for part in words.split("_") if part) or words
