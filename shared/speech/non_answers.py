"""Whether a model's reply is language for the message it answers, or a non-answer a person should never be
shown as the reply ("1456280", "2026-11-26 03:47:59", a bare "No" to "I got the job!"). Pure rules, zh and en.

What a reply may be depends on what it answers:

- a reply with no words, figures or emoji (empty, punctuation, stray letters: "},", ">(a)"), or a name from code
  ("user_reply"), answers nothing; a code of letters and figures mixed ("50913a2b4c1e…"), only a message that
  asks for a number or a code;
- only a number, or only a date or time, answers a question or request that asks for one ("how many…",
  "多少", "what time…", "几点", "pick a number", "what's 2+2") and nothing else; only a link (or an e-mail
  address), a message that asks for one;
- a bare yes or no answers a yes/no question ("Do you…?", "…吗", "是不是…");
- a bare reaction (an acknowledgement, an interjection, praise: "noted", "wow", "lovely", "好的", "恭喜", "👍")
  answers anything but a question that asks for something ("Where do I live?" → "OK" does not);
- any other single word answers a question ("Where do I live?" → "Lisbon") or small talk ("hi" → "Hello!");
- anything with two words or more (three Chinese characters or more) is language.

Small talk is a message of greetings, thanks and fillers only, or of a single word. And a reply that copies a
sentence of the prompt's own instructions ("The user did not write it and cannot see it.") answers nothing, and
neither does the message's own words said back ("I cooked dinner" to "I cooked dinner!").
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from shared.speech.acts import Sentence, is_question, sentences

MIN_COPIED_WORDS = 4
"""A reply of this many words or more that the prompt's instructions hold word for word is a copy of them."""
MIN_REPEATED_WORDS = 3
"""A reply of this many words (a Chinese character counts as one) or more that the message holds is said back."""
MAX_BARE_HAN = 2
"""A reply of this many Chinese characters or fewer (and nothing else) is one bare word."""

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
_DIGIT = re.compile(r"\d")
_NOT_WORD = re.compile(r"[\W_]+")
_CODE = re.compile(r"(?<![A-Za-z0-9/_+=.-])[A-Za-z0-9/_+=.-]{8,256}")
"""A run that may be a code (a hash, an id: "50913a2b4c1e0b70…"); it is one when it mixes letters and figures."""
_LETTER = re.compile(r"[A-Za-z]")
_IDENTIFIER = re.compile(r"(?<![\w\"'`])[\"'`]?[A-Za-z][A-Za-z0-9]{0,63}(?:_[A-Za-z0-9]{1,64}){1,8}[\"'`]?[.:,;]?")
"""A name from code or a schema ("user_reply", "memory_update"), never a reply."""
_FIELD_LEAD = re.compile(r"\A[\"'`]?[a-z][a-z0-9]{0,63}(?:_[a-z0-9]{1,64}){1,8}[\"'`]?\s*[:=]")
"""A reply that opens with such a name as a key ("your_reply_to_me: …", the real server's answer): the schema
leaking, not speech."""
_LINK = re.compile(r"(?:https?://|www\.)[^\s<>\"]+|(?<![\w.+-])[\w.+-]{1,64}@[\w-]{1,63}\.[\w.-]+", re.IGNORECASE)
_ASKS_FOR_A_LINK = re.compile(r"\b(?:links?|url|website|site|web ?page|e-?mail|address)\b|网址|链接|网站|邮箱",
                              re.IGNORECASE)
_NUMBER = re.compile(r"[-+±−]?[$€£¥#№]?\d[\d,.，'_ ]*%?[!。！]*")
"""A reply that is one figure and nothing else: 1456280, 1,456,280, -3.5%, #2, ¥40."""
_DATE_TIME = re.compile(
    r"(?<!\d)(?=\d)(?:\d{4}[-/.年]\d{1,2}(?:[-/.月]\d{1,2}[日号]?)?|\d{1,2}[-/月]\d{1,2}(?:[-/.]\d{2,4}|[日号])?|"
    r"\d{1,2}\.\d{1,2}\.\d{2,4}|"
    r"\d{1,2}[:：]\d{2}(?:[:：]\d{2}(?:[.,]\d+)?)?|\d{1,2}\s?[点时](?:\d{1,2}分?|半|钟)?)")
"""A date or a time of day: 2026-11-26, 11/26/2026, 2026年11月26日, 03:47:59, 8点半."""
_DATE_TIME_MARK = re.compile(r"(?<=\d)[tT](?=\d)|(?<![^\W\d_])(?:[ap]\.?m\.?|utc|gmt|z)(?![^\W\d_])|"
                             r"[+-]\d{2}:?\d{2}(?!\d)", re.IGNORECASE)
"""What may stand beside a date or time: the ISO "T", am/pm, a zone (Z, UTC, +08:00)."""
_EMOJI = "👍"
_YES_NO = frozenset({
    "yes", "no", "yeah", "yea", "yep", "yup", "nope", "nah", "not", "true", "false", "correct", "wrong",
    "是", "是的", "不是", "对", "对的", "不对", "不", "没", "没有", "有", "会", "不会", "能", "不能", "要", "不要",
    "没错", "错", "否"})
_REACTIONS = frozenset({
    "ok", "okay", "okey", "kk", "sure", "alright", "done", "noted", "roger", "certainly", "understood", "gotcha",
    "wow", "whoa", "congrats", "congratulations", "sorry", "nice", "great", "awesome", "cool", "amazing", "wonderful",
    "lovely", "beautiful", "interesting", "sweet", "perfect", "brilliant", "fantastic", "excellent", "delightful",
    "yum", "yummy", "haha", "hahaha", "lol", "aww", "oh", "ouch", "yay", "hooray", "bravo", "welcome", "thanks", "hi",
    "hello", "hey", "bye", "goodbye", "goodnight", "night", "cheers", "oops", "hugs", "hmm", "indeed", "absolutely",
    "好", "好的", "好吧", "行", "嗯", "嗯嗯", "可以", "收到", "明白", "了解", "当然", "哇", "哇塞",
    "恭喜", "真棒", "好棒", "厉害", "哈哈", "呵呵", "天哪", "天啊", "加油", "抱抱", "谢谢", "你好", "晚安",
    "再见", "哎呀", "唉", "哦", "噢", "啊", "嘿", "不错", "真好", "好呀", "好啊", _EMOJI})
"""Words that react to what was said (acknowledgements, interjections, praise): a reply to anything but a
question that asks for something."""
_EN_YES_NO_QUESTION = re.compile(
    r"^(?:do|does|did|is|are|am|was|were|can|could|would|will|should|shall|have|has|had|may|might|must|"
    r"don't|doesn't|didn't|isn't|aren't|wasn't|weren't|won't|can't|couldn't|wouldn't|shouldn't|haven't|hasn't)\b",
    re.IGNORECASE)
_EN_WH = re.compile(r"^(?:what|where|when|who|whom|whose|why|which|how)\b", re.IGNORECASE)
_ZH_YES_NO_QUESTION = re.compile(r"[吗嘛][?？!！。~～\s]*$|(?<![什怎这那多])么[?？]|([\u4e00-\u9fff])[不没]\1|"
                                 r"对吧|是吧|好吧[?？]|对么|是么|[了过]没有?[?？!！。~～\s]*$")
_EN_TAG = re.compile(r",\s*(?:right|isn't it|aren't you|don't you|didn't you|won't you|okay|ok|yes|no)\s*\?*$",
                     re.IGNORECASE)
_REQUEST = re.compile(r"^(?:remind|pick|choose|guess|name|count|rate|score|give|tell|say|set|add|list|send|call me)\b|"
                      r"^(?:提醒|记得提醒|帮我|给我|请|随便|挑|选|猜|说)", re.IGNORECASE)
"""Requests the speech rules do not name, that a figure may answer ("pick a number from 1 to 10")."""
_PICK = re.compile(r"^(?:pick|choose|guess|count|rate|score|name)\b|^(?:随便)?(?:挑|选|猜|数|打分|评分)", re.IGNORECASE)
"""Requests whose figures a figure answers ("pick one from 1 to 10", "猜一个1到100的数")."""
_ASKS_FOR_A_FIGURE = re.compile(
    r"\bhow\s+(?:many|much|old|long|far|often|tall|big|heavy|late|early|soon|fast)\b|"
    r"\bwhat\s+(?:number|percent|percentage|size|age|score|year|time|date|day|month|hour)\b|"
    r"\bwhich\s+(?:number|year|day|date|month)\b|\bwhen\b|\b(?:number|count|calculate|score|rate|rating|digits?|date|time)\b|"
    r"\b(?:code|id|password|pin)\b|编号|密码|验证码|"
    r"多少|几|多大|多久|多远|多高|多重|多长|第几|等于|算|号码|数字|分数|打分|评分|什么时候|哪天|哪一天|哪年|何时|日期|时间|星期|周几|礼拜",
    re.IGNORECASE)


@dataclass(frozen=True)
class _Message:
    """What a reply has to answer: whether the message asks something, asks for a yes or no, asks for a figure
    (a number, a date, a time), or is small talk."""

    question: bool
    yes_no: bool
    figure: bool
    small_talk: bool


def non_answer(reply: str, message: str, instructions: str = "") -> str | None:
    """Why ``reply`` is not language for ``message`` ("no words", "only a number", "only a date or time",
    "a bare yes or no", "a bare reaction", "one bare word", "only a link", "a field name", "only a code",
    "the message repeated",
    or "a copy of its instructions" when it is a sentence of ``instructions``, the prompt's own), or None when it
    is."""
    if instructions and _copied(reply, instructions):
        return "a copy of its instructions"
    asked = _read(message)
    if not asked.small_talk and _repeats(reply, message):
        return "the message repeated"
    if _only_links(reply):
        return None if _ASKS_FOR_A_LINK.search(message) else "only a link"
    if _IDENTIFIER.fullmatch(reply.strip()) or _FIELD_LEAD.match(reply.lstrip()):
        return "a field name"
    if _only_codes(reply):
        return None if asked.figure else "only a code"
    if _DIGIT.search(reply):
        if asked.figure:
            return None
        if _only_date_or_time(reply):
            return "only a date or time"
        if _NUMBER.fullmatch(reply.strip()):
            return "only a number"
    han = _HAN.findall(reply)
    words = [word.lower() for word in _WORD.findall(_HAN.sub(" ", reply)) if len(word) > 1]
    bare = _bare_word(han, words)
    if bare is None and not (han or words):
        if any(unicodedata.category(char) == "So" for char in reply):
            bare = _EMOJI  # figures and emoji, or emoji alone: a reaction without words
        elif _DIGIT.search(reply):
            return "only a number"  # figures among punctuation (":1234567890", the real server's answer)
        else:
            return "no words"
    if bare is None:
        return None
    if bare in _YES_NO:
        return None if asked.yes_no else "a bare yes or no"
    if bare in _REACTIONS:
        return None if asked.yes_no or not asked.question else "a bare reaction"
    return None if asked.question or asked.small_talk else "one bare word"


def _repeats(reply: str, message: str) -> bool:
    """``reply`` is the message's own words, or a run of them, said back (enough of them to be more than a
    greeting)."""
    if len(_WORD.findall(_HAN.sub(" ", reply))) + len(_HAN.findall(reply)) < MIN_REPEATED_WORDS:
        return False
    return _NOT_WORD.sub("", reply.lower()) in _NOT_WORD.sub("", message.lower())


def _copied(reply: str, instructions: str) -> bool:
    """``reply`` is words of ``instructions`` copied whole, or holds a line that is (enough words to be a sentence,
    not a greeting): a small model that starts writing its prompt out ("Current time for the user: …", "Style for
    this reply: …" after a line of its own) has stopped answering."""
    told = " ".join(instructions.split()).lower()
    return any(_sentence_of(part, told) for part in (reply, *reply.splitlines()))


def _sentence_of(text: str, told: str) -> bool:
    said = " ".join(text.split()).lower()
    if len(_WORD.findall(_HAN.sub(" ", said))) < MIN_COPIED_WORDS and len(_HAN.findall(said)) < 2 * MIN_COPIED_WORDS:
        return False
    return said.rstrip(".!。！") in told


def _only_codes(reply: str) -> bool:
    """True when ``reply`` is codes of letters and figures mixed (a hash, an id), with nothing around them but
    punctuation."""
    found = False

    def blank(run: re.Match[str]) -> str:
        nonlocal found
        if _DIGIT.search(run.group()) and _LETTER.search(run.group()):
            found = True
            return " "
        return run.group()

    rest = _CODE.sub(blank, reply)
    return found and not (_HAN.search(rest) or _WORD.search(rest) or _DIGIT.search(rest))


def _only_links(reply: str) -> bool:
    """True when ``reply`` is links or e-mail addresses, with nothing around them but punctuation."""
    if _LINK.search(reply) is None:
        return False
    rest = _LINK.sub(" ", reply)
    return not (_HAN.search(rest) or _WORD.search(rest))


def _only_date_or_time(reply: str) -> bool:
    """True when ``reply`` is a date or a time (or several), with nothing around them but separators and the
    marks that go with them."""
    if _DATE_TIME.search(reply) is None:
        return False
    rest = _DATE_TIME.sub(" ", _DATE_TIME_MARK.sub(" ", reply))
    return not (_HAN.search(rest) or _WORD.search(rest) or _DIGIT.search(rest))


def _bare_word(han: list[str], words: list[str]) -> str | None:
    """The one word a reply without figures comes down to (said once or repeated, punctuation and emoji around
    it), or None when it says more, or nothing."""
    if han and words:
        return None
    if han:
        text = "".join(han)
        return text if len(text) <= MAX_BARE_HAN or len(set(han)) == 1 else None
    return words[0] if len(set(words)) == 1 else None


def _read(message: str) -> _Message:
    read = sentences(message)
    questions = [sentence for sentence in read if sentence.kind == "question"]
    question = bool(questions) or is_question(message)
    request = any(sentence.kind == "request" or _REQUEST.match(sentence.body or sentence.text) for sentence in read)
    # a figure in the message makes a figure an answer to a question ("what's 12 times 3?") or to a request for one
    # ("pick one from 1 to 10"), never to a reminder's time ("remind me in 2 minutes …" is not answered by "0")
    picks = any(_PICK.match(sentence.body or sentence.text) for sentence in read) or bool(_PICK.match(message))
    figure = ((question or request) and bool(_ASKS_FOR_A_FIGURE.search(message))) or \
        ((question or picks) and bool(_DIGIT.search(message)))
    return _Message(question=question, yes_no=any(_asks_yes_or_no(sentence) for sentence in questions),
                    figure=figure, small_talk=_small_talk(message, read))


def _asks_yes_or_no(question: Sentence) -> bool:
    """A question a bare yes or no answers: "Do you…?", "You like it?", "…, right?", "…吗", "是不是…"."""
    body = question.body or question.text
    if _ZH_YES_NO_QUESTION.search(question.text) or _EN_TAG.search(question.text):
        return True
    return bool(_EN_YES_NO_QUESTION.match(body)) or not (_EN_WH.match(body) or _HAN.search(body))


def _small_talk(message: str, read: list[Sentence]) -> bool:
    """Greetings, thanks and fillers only, or a message of one word."""
    if read and all(sentence.kind in ("greeting", "thanks", "filler") for sentence in read):
        return True
    han = _HAN.findall(message)
    words = _WORD.findall(_HAN.sub(" ", message))
    return len(han) <= MAX_BARE_HAN and len(words) <= 1
