"""What a general word covers: "do I have any pets?" is answered by the dog, "我养了什么宠物" by the cat.

Recall searches the words a general word of the message covers too (at a lower weight than the message's
own), and the offline answers accept a memory or round that holds one of them. Pure, no database.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

from shared.search.tokenizer import search_stem


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_PETS_EN = _words("dog puppy cat kitten hamster rabbit bunny parrot bird fish turtle tortoise lizard snake ferret "
                  "horse retriever terrier poodle labrador")
_PETS_ZH = _words("狗 小狗 狗狗 猫 小猫 猫咪 仓鼠 兔子 鹦鹉 鸟 鱼 金鱼 乌龟 蜥蜴 蛇 马 金毛 泰迪 柯基 布偶")
KINDS_OF: dict[str, frozenset[str]] = {
    "pet": _PETS_EN, "pets": _PETS_EN, "animal": _PETS_EN, "animals": _PETS_EN,
    "宠物": _PETS_ZH, "动物": _PETS_ZH,
}
"""The general words and what each covers (as they are written; stemmed where they are used)."""


@cache
def covered_by(term: str) -> tuple[str, ...]:
    """The search terms ``term`` covers (stemmed as search terms are), none for a word that is not general."""
    return tuple(sorted({search_stem(word) for word in KINDS_OF.get(term, ())}))


def expanded(terms: Iterable[str]) -> list[str]:
    """The terms, each general one ("pet", "宠物") followed by the words it covers."""
    out: list[str] = []
    for term in terms:
        out += [term, *covered_by(term)]
    return list(dict.fromkeys(out))
