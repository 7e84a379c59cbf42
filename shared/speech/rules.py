"""The phrasings the offline rules recognise as a statement about the speaker, in Chinese and English:
name, where they live and come from, work and study, likes and dislikes, favourites, pets and people
with their names, possessions, age and birthday, hobbies. Data and pure checks only.

Each :class:`StatementRule` names the memory it yields: its type and a predicate that may hold
``{thing}`` (a pet, a person or a category, canonical across both languages: 猫 and cat are ``cat``)
or ``{topic}`` (the object's keywords: "吃火锅" → 火锅, "horror movies" → horror_movie). Likes and
dislikes of one topic share the predicate ``likes_<topic>``, so "我不再喜欢香菜了" supersedes
"我喜欢香菜".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# --- Chinese building blocks -------------------------------------------------------------------------
_ZS = r"(?:^|(?<=[，,]))\s*(?:现在|目前|今年|最近|后来|平时|这几年|从小|其实)?我"
_ZADV = (r"(?:现在|目前|也|还|一直|其实|已经|刚刚?|就|真的|平时|从小|本来|最近|今年|确实|都|又|周末|每天|每周|"
         r"晚上|早上|下班后?|放假|有空(?:的时候)?)*")
_ZINT = r"(?:很|最|特别|非常|超级?|好|真|挺|比较|蛮|十分|太|最最)*"
_ZO = r"(?P<object>[^，,。！？!?；;]{1,24}?)"
_ZE = r"(?:了|啦|呀|哦|的|呢|哈)*(?=$|[，,])"
_ZNAME = r"(?P<object>[^，,。！？!?；;\s]{1,12}?)"
_RELATIONS_ZH = ("女朋友|男朋友|老婆|老公|妻子|丈夫|太太|妈妈|爸爸|母亲|父亲|儿子|女儿|哥哥|弟弟|姐姐|妹妹|"
                 "室友|同事|老板|闺蜜|好朋友|宝宝")
_RELATIONS_EN = ("wife|husband|partner|girlfriend|boyfriend|fianc[ée]e?|son|daughter|mother|father|mom|mum|dad|"
                 "brother|sister|roommate|best friend")
_CLASSIFIER = r"(?:一|两|二|三|四|五|六|七|八|九|十|几)?(?:只|条|个|位|辆|台|匹|头|套|盆)"

# --- English building blocks -------------------------------------------------------------------------
_ES = r"(?:^|(?<=[,;]\s)|(?<=\band\s)|(?<=\bbut\s)|(?<=\bso\s)|(?<=\bnow\s)|(?<=\balso\s))"
_EADV = (r"(?:(?:now|currently|still|also|actually|just|really|recently|finally|already|definitely|absolutely|"
         r"totally|truly|honestly|kinda|kind of|sort of|pretty much|do|really do)\s+)*")
_EO = r"(?P<object>[^,;.!?，。；！？]{1,60}?)"
_E_TAIL_WORDS = ("now", "anymore", "any more", "these days", "too", "as well", "a lot", "so much", "very much")
_E_NEXT_CLAUSE = ("and", "but", "so", "also")
_E_INITIALS = "".join(sorted({word[0] for word in _E_TAIL_WORDS + _E_NEXT_CLAUSE}))
_EE = (rf"(?![^\s,;])(?!\s++[^{_E_INITIALS},;\s])"
       rf"(?:\s+(?:{'|'.join(_E_TAIL_WORDS)}))*\s*(?=$|[,;]|\s+(?:{'|'.join(_E_NEXT_CLAUSE)})\s+(?:I|I'm|I've|my)\b)")
"""Where an English statement ends: the sentence's end, a comma, or the next clause about the speaker
("I live in Porto and I have a dog"). The two guards first refuse, in a step or two, a place where none of
these can start (not before a space, comma or the end; not before a word with another initial), so the
object's lazy search stays cheap per character."""
_HABITS_EN = ("keep|raise|grow|collect|play|practi[cs]e|speak|drive|ride|cook|bake|knit|paint|volunteer|teach|"
              "brew")
"""Verbs of a habit or skill in the present ("I keep bees", "I speak French"): the activity is the topic."""
_HABITS_ZH = "养|种|收集|弹"
_ENAME = r"(?P<object>[^\W\d_][\w'’. -]{0,30}?)"
_ECOUNT = r"(?:a|an|one|two|three|four|five|\d+)"
_EROLE_END = r"(?=$|[,;]|\s+(?:at|in|for|with|and|but|so|since|who|by|from)\b)"


@dataclass(frozen=True)
class StatementRule:
    pattern: re.Pattern[str]
    type: str
    predicate: str
    check: str = "any"
    """Which plausibility check the object must pass: any, name, job_zh, job_en, origin, place, has."""


def _rule(pattern: str, type_: str, predicate: str, check: str = "any") -> StatementRule:
    return StatementRule(re.compile(pattern, re.IGNORECASE), type_, predicate, check)


RULES: tuple[StatementRule, ...] = (
    # name
    _rule(rf"{_ZS}(?:的)?名字(?:叫做?|是){_ZNAME}{_ZE}", "fact", "name", "name"),
    _rule(rf"{_ZS}(?:叫|名叫)(?![了过着他她它你人醒车外])(?:做)?{_ZNAME}{_ZE}", "fact", "name", "name"),
    _rule(r"(?:^|(?<=[，,]))(?:你|大家|朋友们?|他们)?(?:可以|就)?叫我" + _ZNAME
          + r"(?:就[好行可以]了?|吧|好了)?(?=$|[，,])", "fact", "name", "name"),
    _rule(rf"\bmy name(?:'s| is)\s+{_ENAME}{_EE}", "fact", "name", "name"),
    _rule(rf"^(?:please\s+)?call me\s+{_ENAME}{_EE}", "fact", "name", "name"),
    _rule(rf"{_ES}I(?:'m| am)\s+(?:called|named)\s+{_ENAME}{_EE}", "fact", "name", "name"),
    _rule(rf"{_ES}I\s+go\s+by\s+{_ENAME}{_EE}", "fact", "name", "name"),
    StatementRule(re.compile(r"^I(?:'m| am)\s+(?P<object>[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]{1,15})(?=$|[,;]|\s+and\b)"),
                  "fact", "name", "introduced"),
    # favourites, pets and people with names (before the plainer likes and possessions)
    _rule(rf"{_ZS}{_ZINT}(?:喜欢|爱)的(?P<thing>[^，,的是]{{1,8}})(?:是|就是){_ZO}{_ZE}", "preference",
          "favourite_{thing}"),
    _rule(rf"\bmy\s+(?:all-time\s+)?(?:favou?rite|fave)\s+(?P<thing>[\w -]{{1,25}}?)(?:'s|\s+is|\s+are)\s+{_EO}{_EE}",
          "preference", "favourite_{thing}"),
    _rule(rf"{_ZS}{_ZADV}(?:有|养了?|养着){_CLASSIFIER}?(?P<thing>[^，,叫]{{1,6}}?)[，,]?\s*(?:它|他|她|名字)?(?:叫做?|名叫)"
          rf"{_ZNAME}{_ZE}", "fact", "{thing}_name", "name"),
    _rule(rf"{_ZS}(?:的|家的?|养的)(?P<thing>[^，,的]{{1,6}}?)(?:的名字(?:叫做?|是)|叫做?|名叫){_ZNAME}{_ZE}",
          "fact", "{thing}_name", "name"),
    _rule(rf"{_ZS}(?P<thing>{_RELATIONS_ZH})(?:的名字(?:叫做?|是)|叫做?|名叫){_ZNAME}{_ZE}", "person", "{thing}_name",
          "name"),
    _rule(rf"{_ES}I(?:\s+have|'ve got|\s+have got|\s+own|\s+adopted|\s+got|\s+just got)\s+{_ECOUNT}\s+"
          rf"(?P<thing>(?:[\w-]+\s+){{0,2}}?[\w-]+)\s+(?:named|called)\s+{_ENAME}{_EE}", "fact", "{thing}_name",
          "name"),
    _rule(rf"\bmy\s+(?P<thing>(?:[\w-]+\s+)?[\w-]+?)(?:'s name is|'s name's|\s+is (?:called|named)|\s+name is)\s+"
          rf"{_ENAME}{_EE}", "fact", "{thing}_name", "name"),
    # the people they live or go with, named on the way ("I live in Portland with my wife Jenny and our kids")
    _rule(rf"\bwith\s+my\s+(?P<thing>{_RELATIONS_EN})\s+{_ENAME}(?=$|[,;]|\s+and\b)", "person", "{thing}_name",
          "name"),
    # where they live and come from
    _rule(rf"{_ZS}{_ZADV}(?:不再|已经不|不)?(?:住在|住|搬到了?|搬去了?|搬家到了?|定居在?|安家在?){_ZO}{_ZE}",
          "fact", "lives_in", "place"),
    _rule(rf"{_ZS}家(?:住)?在{_ZO}{_ZE}", "fact", "lives_in", "place"),
    _rule(rf"{_ES}I\s+{_EADV}(?:(?:don't|do not|no longer)\s+{_EADV})?live\s+(?:in|at)\s+{_EO}{_EE}",
          "fact", "lives_in", "place"),
    _rule(rf"{_ES}I(?:'ve| have)?\s+{_EADV}(?:moved|relocated)\s+(?:back\s+)?(?:to|into)\s+{_EO}{_EE}",
          "fact", "lives_in", "place"),
    _rule(rf"{_ES}I(?:'m| am)\s+{_EADV}(?:living|based|settled)\s+in\s+{_EO}{_EE}", "fact", "lives_in", "place"),
    _rule(rf"{_ZS}{_ZADV}来自{_ZO}{_ZE}", "fact", "from", "place"),
    _rule(rf"{_ZS}{_ZADV}是(?P<object>(?:(?![的个很是])[\u4e00-\u9fff]){{1,6}})人{_ZE}", "fact", "from", "origin"),
    _rule(rf"{_ZS}(?:的)?(?:老家|家乡)(?:在|是){_ZO}{_ZE}", "fact", "from", "place"),
    _rule(rf"{_ES}I(?:'m| am)\s+{_EADV}(?:originally\s+)?from\s+{_EO}{_EE}", "fact", "from", "place"),
    _rule(rf"{_ES}I\s+{_EADV}(?:originally\s+)?come\s+from\s+{_EO}{_EE}", "fact", "from", "place"),
    _rule(rf"{_ES}I\s+grew\s+up\s+in\s+{_EO}{_EE}", "fact", "grew_up_in", "place"),
    # work and study
    _rule(rf"{_ZS}(?:的)?(?:工作|职业)是{_ZO}{_ZE}", "fact", "job"),
    _rule(rf"{_ZS}{_ZADV}在(?P<object>[^，,]{{1,20}}?)(?:工作|上班|实习|打工|任职){_ZE}", "fact", "works_at", "place"),
    _rule(rf"{_ZS}{_ZADV}在(?P<object>[^，,]{{1,20}}?)(?:上学|读书|念书|读大学|上大学|读研|读博|读高中|上高中|上初中|"
          rf"上小学|留学){_ZE}", "fact", "studies_at", "place"),
    _rule(rf"{_ZS}(?:的)?专业是{_ZO}{_ZE}", "fact", "major"),
    _rule(rf"{_ZS}{_ZADV}是学(?P<object>[^，,]{{1,12}}?)的{_ZE}", "fact", "major"),
    _rule(rf"{_ZS}{_ZADV}(?:是一名|是一位|是一个|是个|是名|是|当了?|做了?)(?P<object>[^，,]{{1,16}}?){_ZE}",
          "fact", "job", "job_zh"),
    _rule(rf"{_ZS}{_ZADV}是(?:一个|个)(?P<object>[^，,]{{1,12}}?)的人{_ZE}", "fact", "trait_{topic}"),
    _rule(rf"{_ES}I\s+{_EADV}work\s+as\s+(?:an?\s+)?(?P<object>(?:[\w-]+\s+){{0,2}}?[\w-]+){_EROLE_END}",
          "fact", "job", "job_en"),
    _rule(rf"{_ES}I(?:'m| am)\s+{_EADV}an?\s+(?P<object>(?:[\w-]+\s+){{0,2}}?[\w-]+){_EROLE_END}", "fact", "job",
          "job_en"),
    _rule(rf"\bmy\s+(?:job|occupation|profession)(?:'s|\s+is)\s+{_EO}{_EE}", "fact", "job"),
    _rule(rf"{_ES}I\s+{_EADV}work\s+(?:at|for|in)\s+{_EO}{_EE}", "fact", "works_at", "place"),
    _rule(rf"{_ES}I(?:'m| am)\s+{_EADV}(?:a\s+)?student\s+at\s+{_EO}{_EE}", "fact", "studies_at", "place"),
    _rule(rf"{_ES}I\s+{_EADV}(?:study|major in)\s+{_EO}{_EE}", "fact", "studies"),
    _rule(rf"{_ES}I(?:'m| am)\s+{_EADV}(?:studying|majoring in)\s+{_EO}{_EE}", "fact", "studies"),
    # likes and dislikes (one predicate per topic), allergies and diet
    _rule(rf"{_ZS}{_ZADV}(?:不再|不太|不怎么|没那么|已经不|再也不|不)?{_ZINT}(?:喜欢|爱|热爱|迷上了?|爱上了?|讨厌|受不了|反感)"
          rf"(?!的){_ZO}{_ZE}", "preference", "likes_{topic}", "liking"),
    _rule(rf"{_ES}I\s+{_EADV}(?:(?:don't|do not|dont|no longer|never)\s+{_EADV})?(?:like|love|enjoy|adore|hate|dislike|"
          rf"detest)\s+{_EO}{_EE}", "preference", "likes_{topic}", "liking"),
    _rule(rf"{_ES}I(?:'m| am)\s+{_EADV}(?:not\s+)?(?:into|(?:a\s+)?(?:big\s+|huge\s+)?fan of|obsessed with|crazy about|"
          rf"passionate about|keen on)\s+{_EO}{_EE}", "preference", "likes_{topic}", "liking"),
    _rule(rf"{_ES}I\s+can(?:'t|not)\s+stand\s+{_EO}{_EE}", "preference", "likes_{topic}", "liking"),
    _rule(rf"{_ZS}{_ZADV}对{_ZO}过敏{_ZE}", "fact", "allergic_to_{topic}"),
    _rule(rf"{_ES}I(?:'m| am)\s+{_EADV}allergic\s+to\s+{_EO}{_EE}", "fact", "allergic_to_{topic}"),
    _rule(rf"{_ZS}{_ZADV}(?:不|不再|从不|从来不)(?:吃|喝){_ZO}{_ZE}", "preference", "eats_{topic}"),
    _rule(rf"{_ES}I\s+{_EADV}(?:don't|do not|never|no longer)\s+(?:eat|drink)\s+{_EO}{_EE}", "preference",
          "eats_{topic}"),
    _rule(rf"{_ES}I(?:'m| am)\s+{_EADV}(?:an?\s+)?(?P<object>vegetarian|vegan|pescatarian){_EE}", "preference", "diet"),
    # possessions, age, birthday, hobbies and other attributes
    _rule(rf"{_ZS}{_ZADV}(?:有|养了?|养着){_CLASSIFIER}(?P<object>[^，,]{{1,12}}?){_ZE}", "fact", "has_{thing}", "has"),
    _rule(rf"{_ES}I(?:\s+have|'ve got|\s+have got|\s+own)\s+{_ECOUNT}\s+{_EO}{_EE}", "fact", "has_{thing}", "has"),
    _rule(rf"{_ZS}{_ZADV}(?:今年)?(?P<object>\d{{1,3}}|[一二两三四五六七八九十]{{1,3}})(?:岁|周岁)了?(?=$|[，,])",
          "fact", "age"),
    _rule(rf"{_ES}I(?:'m| am)\s+(?P<object>\d{{1,3}})(?:\s+years?\s+old|\s*(?:yo|y/o|yrs old))?{_EE}", "fact", "age"),
    _rule(rf"{_ES}I\s+(?:just\s+)?turned\s+(?P<object>\d{{1,3}}){_EE}", "fact", "age"),
    _rule(rf"{_ZS}(?:的)?生日(?:是|在){_ZO}{_ZE}", "fact", "birthday"),
    _rule(rf"\bmy\s+birthday(?:'s|\s+is)\s+(?:on\s+)?+{_EO}{_EE}", "fact", "birthday"),
    _rule(rf"{_ES}I\s+was\s+born\s+(?:on|in)\s+{_EO}{_EE}", "fact", "born"),
    _rule(rf"{_ZS}(?:的)?(?:爱好|兴趣爱好|兴趣)(?:是|就是){_ZO}{_ZE}", "preference", "hobby"),
    _rule(rf"\bmy\s+(?:hobby|hobbies)(?:'s|\s+is|\s+are)\s+{_EO}{_EE}", "preference", "hobby"),
    _rule(rf"{_ZS}(?:的)?(?P<thing>梦想|目标|星座|血型|偶像|座右铭)(?:是|就是){_ZO}{_ZE}", "fact", "{thing}"),
    _rule(rf"\bmy\s+(?P<thing>dream|goal|star sign|zodiac sign|blood type|motto|idol|hometown)(?:'s|\s+is)\s+"
          rf"{_EO}{_EE}",
          "fact", "{thing}"),
    # what they do as a habit: keep bees, play the guitar, speak French (last: a plainer rule above wins)
    _rule(rf"{_ES}I\s+{_EADV}(?:(?:usually|often|always|sometimes|regularly)\s+)?(?:(?:don't|do not|no longer|never)"
          rf"\s+{_EADV})?(?P<object>(?:{_HABITS_EN})\s+(?!(?:it|that|this|them|up|down|on|off|out|around)\b|\w+ing\b)"
          rf"[^,;.!?，。；！？]{{1,60}}?){_EE}", "fact", "does_{topic}", "liking"),
    _rule(rf"{_ZS}{_ZADV}(?:在[^，,。！？!?]{{1,8}}?)?(?:不再|已经不|不会|不|会)?(?P<object>(?:{_HABITS_ZH})(?:了|着)?"
          rf"[^，,。！？!?；;了]{{1,12}}?){_ZE}", "fact", "does_{topic}", "liking"),
)
