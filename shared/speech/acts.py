"""What kind of thing each sentence of a message is: a statement, a question, a hypothetical, a request,
a greeting, thanks or a goodbye — in Chinese, English and mixed text. Pure rules, no database.

Only statements may become memories. Each sentence is judged after its openers are set aside:
greetings ("你好，…", "hi Mnemo, …"), fillers ("嗯", "by the way"), rhetorical openers and tags
("你知道吗，…", "guess what", "…, you know"), correction leads ("不对，…", "actually …", which mark
the sentence as a correction) and the "remember this" wrapper ("记住：…", "remember that …"), which
asks to keep the statement inside it. Speech in quotes is somebody else's words: it is masked
before the sentence is judged (a short quoted name stays).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_READ_CHARS = 2000
"""Only the start of a message is read for statements and questions (bounded time for any input)."""
MAX_SENTENCES = 30

_TERMINATORS = "。！？!?；;\n…"
_SENTENCE = re.compile(rf"[^{_TERMINATORS}.]+(?:\.(?=[^\s{_TERMINATORS}.])[^{_TERMINATORS}.]*)*[{_TERMINATORS}.]*")
_QUOTED = re.compile(r"“[^”]{0,200}”|「[^」]{0,200}」|『[^』]{0,200}』|\"[^\"]{0,200}\"|(?<!\w)'[^']{0,200}'(?!\w)")
_SPEECH_IN_QUOTES = re.compile(r"[我你他她]|\b(?:I|you|me|my|your|he|she)\b|\S\s+\S+\s+\S", re.IGNORECASE)
_SUBCLAUSE_SPLIT = re.compile(r"[，,]|(?<!\d)[:：](?!\d)|\s[-—–]+\s|——")
_QUESTION_MARK = re.compile(r"[?？]")
_HAN = re.compile(r"[\u4e00-\u9fff]")

_GREETING = re.compile(
    r"^(?:你好|您好|大家好|嗨|哈喽|哈啰|嘿|喂|早上好|早安|早|上午好|中午好|下午好|晚上好|晚安|午安|在吗|在不在|好久不见"
    r"|hi|hello|hey|hiya|yo|howdy|good (?:morning|afternoon|evening|night)|morning|evening|long time no see)"
    r"(?:呀|啊|哇|哦|~|～)*(?:\s+\w{1,20})?$", re.IGNORECASE)
_THANKS = re.compile(r"^(?:谢谢|多谢|感谢|谢啦|谢了|thanks?|thank you|thx|ty|cheers)(?:你|您|啦|呀)?"
                     r"(?:\s+(?:a lot|so much|very much|\w{1,20}))?$", re.IGNORECASE)
_CLOSING = re.compile(
    r"^(?:(?:ok(?:ay)?|alright|well|so|好的|好|嗯)[\s,，]*)?(?:再见|拜拜|拜|回头见|回头聊|下次(?:再)?聊|改天(?:再)?聊|明天见|晚点聊|先这样|就这样|(?:今天)?(?:就|先)?到这(?:里|儿)|(?:那)?(?:就|先)这(?:些|么多)|暂时(?:就)?这(?:样|些)|"
    r"没(?:别的|其他|什么)?事了|我先走了|我(?:先)?去忙了|(?:我)?先下了|下线了"
    r"|bye(?:[ -]?bye)?|good ?bye|see (?:you|ya)(?: (?:later|soon|tomorrow|around))?|ttyl|catch you later"
    r"|talk (?:to you )?(?:later|soon|tomorrow)|nothing else|that['’]s about (?:all|it)"
    r"|(?:that['’]s|that is|that['’]ll be) (?:all|it|everything)"
    r"(?: for (?:now|today|tonight))?|i['’]m done for (?:now|today|tonight)|(?:i )?(?:have|got) to go|(?:i )?gotta go"
    r"|i['’]m off|i['’]ll let you go|take care|have a (?:good|nice|great) (?:one|day|night|evening|weekend))"
    r"(?:\s*(?:for (?:now|today|tonight)|吧|啦|了|哈|哦|啊|呀|now|then))*$", re.IGNORECASE)
"""A goodbye, or saying the conversation is over for now ("that's all for now", "今天就到这里吧")."""
_FILLER = re.compile(r"^(?:嗯+|哦+|噢+|啊+|哈+|呵+|好吧|好的|好|行|对了|那个|然后|另外|还有|顺便说一下|顺便说|所以|"
                     r"ok(?:ay)?|well|so|um+|uh+|hmm+|oh|ah|btw|by the way|anyway|also|and|lol|haha|please|pls)$",
                     re.IGNORECASE)
_RHETORICAL = re.compile(r"^(?:你知道吗|你知道不|知道吗|你猜怎么着|告诉你|跟你说|说真的|说实话|老实说|"
                         r"you know what|you know|guess what|let me tell you|to be honest|honestly|i have to say)$",
                         re.IGNORECASE)
_CORRECTION = re.compile(r"^(?:不对|不是|错了|其实|更正一下|更正|纠正一下|我说错了|搞错了|说错了|actually|no|nope|"
                         r"correction|sorry|i meant|i mean|wait|not quite)$", re.IGNORECASE)
_CORRECTION_LEAD = re.compile(r"^(?:其实|不对|更正一下|actually|correction:?|i meant)\s*", re.IGNORECASE)
_OPENER_LEAD = re.compile(r"^(?:对了|另外|还有|而且|那个|well|so|oh|btw|also|and|but|anyway|ok(?:ay)?)\s+",
                          re.IGNORECASE)
_KEEP_WRAPPER = re.compile(r"^(?:请你?|帮我|麻烦你?)?(?:记住|记下|记一下|记好)(?:了|哦|啊|吧)?[\s，,:：]*|"
                           r"^(?:please\s+)?(?:remember|note|keep in mind)(?:\s+that\b|\s*[:：,])\s*", re.IGNORECASE)
_CHANGE_CUE = re.compile(r"不再|已经不|再也不|没那么|不.{0,8}了$|\b(?:no longer|anymore|any more)\b", re.IGNORECASE)

# --- questions ---------------------------------------------------------------------------------------
_ZH_QUESTION_WORDS = re.compile(
    r"(?<![没不])什么(?![都也])|(?<![没不])啥(?![都也])|为什么|为啥|谁(?![都也])|哪(?!怕|儿都|里都|都|儿也|里也)|"
    r"(?<![好这那前近十])几(?=[个岁点号月年天次口位只本遍周时分])|(?<!多)多少(?!有[点些])|(?<!不)怎么(?![也都])|"
    r"怎样|(?<!论)如何|(?<!没)多大|多久|多远|是不是|对不对|有没有|要不要|能不能|会不会|可不可以|记不记得|知不知道")
_ZH_END_PARTICLE = re.compile(r"(?:吗|呢|(?<![这那多怎什要])么)$")
_EN_WH_QUESTION = re.compile(
    r"^(?:what|where|when|who|whom|whose|why|which|how)(?:'s|'re|'d|\s+(?:is|are|was|were|do|does|did|am|can|could|"
    r"would|will|should|have|has|had)\b)|^how\s+(?:old|much|many|long|far|often|tall|come|about)\b|"
    r"^(?:what|which|whose|how)\s+\w+\s+(?:do|does|did|is|are|was|were|am|can|will)\b", re.IGNORECASE)
_EN_AUX_QUESTION = re.compile(
    r"^(?:do|does|did|is|are|am|was|were|can|could|would|will|should|shall|have|has|may|might|"
    r"don't|doesn't|didn't|isn't|aren't|won't|can't|wouldn't|haven't)\s+(?:i|you|we|they|he|she|it|my|your|there|"
    r"anyone|somebody|someone)\b", re.IGNORECASE)
_TAG_QUESTION = re.compile(r"^(?:do you remember|remember|right|isn't it|don't you think|correct|yeah|记得吗|还记得吗|"
                           r"对吧|是吧|对不对|是不是|没错吧)$", re.IGNORECASE)
_EN_IN_SITU = re.compile(r"\b(?:which|what)\s+\w+$|(?<!matter )\b(?:what|where|who|when)$|"
                         r"\bwhat\s+(?:kind|sort|type)\b", re.IGNORECASE)
_RECALL_ASK = re.compile(r"(?:你|还)记得|记不记得|你知道我|"
                         r"\b(?:do|did|can|could) you (?:still )?(?:remember|recall|know)\b"
                         r"|^remember (?:my|what|where|who|when|how|which)\b", re.IGNORECASE)

# --- hypotheticals and requests ------------------------------------------------------------------------
_HYPOTHETICAL = re.compile(r"如果|假如|(?<![主只需重不])要是|假设|万一|倘若|假使|若是|想象一下|"
                           r"\b(?:if|suppose|supposing|imagine|what if|would|wouldn't|i'd|in case|pretend)\b",
                           re.IGNORECASE)
_REQUEST_EN = re.compile(r"^(?:please|pls|can you|could you|would you|will you|let's|let us|tell me|show me|"
                         r"help me|give me|let me|i need you to|i want you to|stop|don't|do not|write|explain|"
                         r"translate|find)\b",
                         re.IGNORECASE)
_REQUEST_ZH = re.compile(r"^(?:请|麻烦|帮我|帮忙|能不能|能否|可不可以|可以帮|你能|你可以|给我|告诉我|跟我说|"
                         r"让我们|我们来|别|不要)")
_CALL_ME = re.compile(r"^(?:please\s+)?call me\b|^(?:请)?叫我", re.IGNORECASE)


@dataclass(frozen=True)
class Sentence:
    """One sentence of a message: its kind, the statement body without openers, and cues."""

    kind: str
    """statement, question, hypothetical, request, greeting, thanks, closing or filler."""
    body: str
    text: str
    correction: bool = False
    recall: bool = False
    """A question about something the user told before ("你还记得…吗", "do you remember …")."""


def sentences(text: str) -> list[Sentence]:
    """Every sentence of ``text`` (its start, at most ``MAX_SENTENCES``), classified."""
    window = (text or "").replace("\x00", "")[:MAX_READ_CHARS]
    found = (match.group().strip() for match in _SENTENCE.finditer(window))
    return [read_sentence(part) for part in found if part][:MAX_SENTENCES]


def read_sentence(sentence: str) -> Sentence:
    """The kind of one sentence, with its statement body (openers, tags and terminators set aside)."""
    masked = mask_quotes(sentence)
    parts = [part.strip() for part in _SUBCLAUSE_SPLIT.split(masked)]
    parts = [part for part in parts if part.strip(_TERMINATORS + ". ~～")]
    kept, correction, first_kind = _drop_openers(parts)
    while kept and _RHETORICAL.match(_plain(kept[-1])):
        kept.pop()
    if not kept:
        return Sentence(first_kind, "", sentence, correction)
    tagged = len(kept) > 1 and bool(_TAG_QUESTION.match(_plain(kept[-1])))
    body = (", " if not _HAN.search(masked) else "，").join(kept)
    body = _KEEP_WRAPPER.sub("", body, count=1).strip()
    lead = _CORRECTION_LEAD.match(body)
    if lead and lead.end() < len(body):
        correction, body = True, body[lead.end():]
    body = _OPENER_LEAD.sub("", body, count=1).rstrip(_TERMINATORS + ". ~～").strip()
    correction = correction or bool(_CHANGE_CUE.search(body))
    recall = bool(_RECALL_ASK.search(body))
    if tagged or recall or _QUESTION_MARK.search(_strip_rhetorical_tail(masked)) or is_question(body):
        return Sentence("question", body, sentence, correction, recall or tagged)
    if _HYPOTHETICAL.search(body):
        return Sentence("hypothetical", body, sentence, correction)
    if (_REQUEST_EN.match(body) or _REQUEST_ZH.match(body)) and not _CALL_ME.match(body):
        return Sentence("request", body, sentence, correction)
    return Sentence("statement", body, sentence, correction)


def is_question(text: str) -> bool:
    """True for a question in either language, with or without a question mark."""
    core = mask_quotes(text or "").strip().rstrip(_TERMINATORS + ". ~～")
    if not core:
        return False
    if _QUESTION_MARK.search(core) or _ZH_QUESTION_WORDS.search(core) or _ZH_END_PARTICLE.search(core):
        return True
    clauses = [part.strip() for part in _SUBCLAUSE_SPLIT.split(core) if part.strip()]
    if len(clauses) > 1 and _TAG_QUESTION.match(_plain(clauses[-1])):
        return True
    return any(_EN_WH_QUESTION.match(clause) or _EN_AUX_QUESTION.match(clause) or _EN_IN_SITU.search(clause)
               for clause in clauses) or bool(_RECALL_ASK.search(core))


def states_nothing(text: str) -> bool:
    """True when no sentence of ``text`` is a statement (only questions, requests, greetings …)."""
    return all(sentence.kind != "statement" for sentence in sentences(text))


def not_a_statement(text: str) -> str | None:
    """Why ``text`` (e.g. a memory's content) cannot be a stated fact — "question", "hypothetical",
    "request", "greeting", "thanks", "filler" or "empty" — or None when it can."""
    read = sentences(text)
    if not read:
        return "empty"
    kinds = [sentence.kind for sentence in read]
    if "question" in kinds:
        return "question"
    if "statement" in kinds:
        return None
    return next((kind for kind in ("hypothetical", "request") if kind in kinds), kinds[0])


def mask_quotes(text: str) -> str:
    """``text`` with quoted speech (somebody else's words) replaced by "…"; short quoted names stay."""
    return _QUOTED.sub(lambda m: "…" if _SPEECH_IN_QUOTES.search(m.group()[1:-1]) else m.group(), text)


def _drop_openers(parts: list[str]) -> tuple[list[str], bool, str]:
    """The sub-clauses after leading greetings, thanks, goodbyes, fillers, rhetorical and correction openers;
    whether a correction opener was among them; and the kind of what was dropped."""
    correction, first_kind = False, "filler"
    for index, part in enumerate(parts):
        plain = _plain(part)
        if _GREETING.match(plain):
            first_kind = "greeting" if first_kind == "filler" else first_kind
        elif _THANKS.match(plain):
            first_kind = "thanks" if first_kind in ("filler", "greeting") else first_kind
        elif _CLOSING.match(plain):
            first_kind = "closing"
        elif _CORRECTION.match(plain):
            correction = True
        elif not (_FILLER.match(plain) or _RHETORICAL.match(plain)):
            return [p for p in parts[index:] if not _FILLER.match(_plain(p))], correction, first_kind
    return [], correction, first_kind


def _strip_rhetorical_tail(masked: str) -> str:
    """The sentence without a trailing rhetorical tag ("…，你知道吗？", "…, you know?")."""
    parts = _SUBCLAUSE_SPLIT.split(masked)
    while len(parts) > 1 and _RHETORICAL.match(_plain(parts[-1])):
        parts.pop()
    return ",".join(parts)


def _plain(part: str) -> str:
    return part.strip().strip(_TERMINATORS + ". ~～!！")
