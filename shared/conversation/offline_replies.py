"""The offline responder's words, in Chinese and English: short, kind, and honest about what it can do.

Small talk follows the tone of the emotion strategy table (``shared.emotion``): empathetic for
sadness, calm for worry, patient for frustration, warm for good news. Several variants per line
keep it from repeating itself; :func:`pick` chooses one from the turn number and the message, and
never the one the bot just said. Nothing here claims a memory or an answer it does not have.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from datetime import datetime
from typing import TypedDict

MODEL_HINT_MARKER = "LLM_BASE_URL"
"""Every model hint names the setting, so the hint can be recognised in the session's history."""
README_LLM_ANCHOR = "README.md#llm-servers"

_ZH: dict[str, tuple[str, ...]] = {
    "empathetic": ("听起来你今天真的不好受。我在这儿，想说什么都可以慢慢说。", "辛苦了。先照顾好自己，我陪着你。",
                   "抱抱你。不想多说也没关系，我一直在。"),
    "calm_reassuring": ("先深呼吸一下，慢慢来。一件一件处理，会好起来的。",
                        "会担心很正常，你已经在努力了。我在这儿陪你。",
                        "别急，先想清楚最要紧的一件事，其余的可以等等。"),
    "patient": ("这确实让人烦，换谁都会这样。", "真是够折腾的。先缓一缓，我在听。",
                "烦的时候先歇口气，我们可以一点一点来。"),
    "warm": ("太好了，真为你高兴！", "听起来很棒！", "真好，为你开心！"),
    "enthusiastic": ("哇，好期待！", "太棒了，听着就让人兴奋！", "真让人激动！"),
    "how_are_you": ("我挺好的，谢谢关心！", "还不错，谢谢你问起。"),
    "thanks": ("不客气！", "不用谢，随时找我。", "能帮上忙就好。"),
    "closing": ("好的，随时再来找我聊！", "好，回头见～", "好的，下次聊，照顾好自己。"),
    "thanks_closing": ("不客气！随时再来找我聊。", "不用谢，回头见～", "能帮上忙就好，下次聊！"),
    "neutral": ("嗯嗯，我在听。", "明白了。", "好的，我在呢。"),
    "greeting": ("你好呀{name_zh}！", "嗨{name_zh}，我在呢。", "你好{name_zh}，很高兴见到你。"),
    "good_night": ("晚安{name_zh}，做个好梦。", "晚安，早点休息。"),
    "follow_up": ("是什么让你这么开心？", "发生什么好事了？"),
    "remembered": ("好的，我记住了：{items}。",),
    "updated": ("好的，我更新了：{items}（之前记的是：{old}）。",),
    "already_known": ("我记得呢：{items}。",),
    "paused": ("知道了：{items}。不过记忆已暂停，这条我不会记下（/resume 恢复）。",),
    "named": ("好的，以后我就叫你{name}。",),
    "renamed": ("好的，改过来了：以后叫你{name}（之前记的是{old}）。",),
    "answer": ("{items}。",),
    "answer_quoted": ("我记得你说过：“{items}”。",),
    "about_user": ("当然记得{name_zh}。我记得：{items}。",),
    "about_user_name": ("当然记得{name_zh}！",),
    "stranger": ("我们好像还不太熟——跟我说说你自己吧，比如你叫什么、住在哪里、喜欢什么。",),
    "dont_know": ("我还不知道{what_zh}——你还没告诉过我。告诉我的话，我会记住。",),
    "intro": ("我是{bot}，一个会记住你说过的事的聊天伙伴。",),
    "offline_limits": ("这个我现在回答不了：我在离线模式，只能记住你告诉我的事、回答关于这些事的问题、"
                       "帮你设提醒。",),
    "model_hint": (f"想让我真正聊起来，可以接入一个语言模型：设置 {MODEL_HINT_MARKER}"
                   f"（测试过的设置见 {README_LLM_ANCHOR}）。",),
    "reminder": ("好的，{when}提醒你：{what}。",),
    "deadline": ("好的，{what}{when}截止，我会提前提醒你。",),
    "reminder_needs_time": ("好的——告诉我什么时候提醒你，比如“明天早上9点提醒我开会”。",),
    "said_user": ("{day}你跟我说过：“{line}”。",),
    "said_bot": ("{day}我说过：“{reply}”。",),
    "said_both": ("{day}你说：“{line}”，我回答：“{reply}”。",),
    "not_said": ("这个我不记得了——在我们聊过的内容里没找到。",),
    "more_known": ("（还有{count}条，/memories 可以看全部。）",),
    "reminders_list": ("你的提醒：{items}。",),
    "no_reminders": ("你现在没有待办的提醒。要设一个的话，比如说“明天早上9点提醒我开会”。",),
}
_EN: dict[str, tuple[str, ...]] = {
    "empathetic": ("That sounds really hard. I'm here — take your time.",
                   "I'm sorry it's been like this. I'm here with you.",
                   "That's a lot to carry. Be gentle with yourself today — I'm listening."),
    "calm_reassuring": ("Take a slow breath — one thing at a time. You're handling more than you think.",
                        "It's okay to feel this way. One step at a time; I'm here.",
                        "That sounds stressful. It doesn't all have to be solved at once."),
    "patient": ("That's genuinely frustrating — anyone would feel the same.",
                "Ugh, that sounds exhausting. I'm listening.",
                "Fair enough to be annoyed. Take a breather; one piece at a time."),
    "warm": ("That's wonderful — I'm really glad for you!", "Love to hear that!", "That's great news."),
    "enthusiastic": ("Oh, exciting!", "That sounds amazing!", "How exciting!"),
    "how_are_you": ("I'm doing well, thanks for asking!", "All good here, thanks."),
    "thanks": ("You're welcome!", "Any time.", "Glad I could help."),
    "closing": ("Okay — talk soon!", "Take care — I'm here whenever you want to chat.", "Bye for now — see you soon!"),
    "thanks_closing": ("You're welcome — talk soon!", "Any time. Take care!", "Glad I could help — see you soon!"),
    "neutral": ("I see.", "Okay, I'm listening.", "Mm-hm."),
    "greeting": ("Hi{name_en}!", "Hello{name_en} — good to see you.", "Hey{name_en}, I'm here."),
    "good_night": ("Good night{name_en} — sleep well.", "Night! Rest well."),
    "follow_up": ("What happened?", "Tell me more?"),
    "remembered": ("Got it — {items}.",),
    "updated": ("Updated — {items} (before, I had: {old}).",),
    "already_known": ("I remember — {items}.",),
    "paused": ("I hear you — {items}. Remembering is paused, so I won't keep it (/resume to turn it back on).",),
    "named": ("Nice to meet you, {name} — I'll remember your name.",),
    "renamed": ("Updated — I'll call you {name} now (before, I had {old}).",),
    "answer": ("{items}.",),
    "answer_quoted": ("You told me: \"{items}\".",),
    "about_user": ("Of course{name_en}. I remember: {items}.",),
    "about_user_name": ("Of course{name_en}!",),
    "stranger": ("I don't know much about you yet — tell me about yourself: your name, where you live, what you "
                 "like.",),
    "dont_know": ("I don't know {what_en} yet — you haven't told me. Tell me and I'll remember it.",),
    "intro": ("I'm {bot}, a companion that remembers what you tell me.",),
    "offline_limits": ("I can't answer that right now: in offline mode I can remember what you tell me, answer "
                       "questions about it, and set reminders.",),
    "model_hint": (f"To chat for real, connect a language model: set {MODEL_HINT_MARKER} "
                   f"(tested settings: {README_LLM_ANCHOR}).",),
    "reminder": ("Okay — I'll remind you {when}: {what}.",),
    "deadline": ("Okay — {what}: due {when}. I'll remind you ahead of it.",),
    "reminder_needs_time": ("Sure — tell me when, for example \"remind me tomorrow at 9 to call Mum\".",),
    "said_user": ("{day}, you told me: \"{line}\"",),
    "said_bot": ("{day}, I said: \"{reply}\"",),
    "said_both": ("{day}, you said: \"{line}\" — and I said: \"{reply}\"",),
    "not_said": ("I don't remember that — I can't find it in what we've talked about.",),
    "more_known": ("(And {count} more: /memories shows them all.)",),
    "reminders_list": ("Your reminders: {items}.",),
    "no_reminders": ("You have no pending reminders. To set one, say something like \"remind me tomorrow at 9 to "
                     "call Mum\".",),
}
_ASKED_ZH = {"name": "你叫什么", "lives_in": "你住在哪里", "from": "你是哪里人", "job": "你做什么工作",
             "works_at": "你在哪里工作", "age": "你多大", "birthday": "你的生日", "hobby": "你的爱好"}
_ASKED_EN = {"name": "your name", "lives_in": "where you live", "from": "where you're from", "job": "what you do",
             "works_at": "where you work", "age": "how old you are", "birthday": "your birthday",
             "hobby": "your hobbies"}
_WEEKDAYS_ZH = "一二三四五六日"


def text(key: str, chinese: bool, variant: int = 0, **values: str) -> str:
    """The line ``key`` in the user's language, its ``variant`` (wrapping), filled with ``values``."""
    options = (_ZH if chinese else _EN)[key]
    return options[variant % len(options)].format(**values)


def lines(key: str) -> tuple[str, str]:
    """The first variant of ``key`` in English and Chinese: a line a reply's notice shares
    (:data:`shared.conversation.notice_texts.NOTICE_TEXTS`)."""
    return _EN[key][0], _ZH[key][0]


def pick(key: str, chinese: bool, seed: str, turn: int, last_reply: str = "", **values: str) -> str:
    """A variant of ``key`` chosen from the message and turn, never the one just said."""
    count = len((_ZH if chinese else _EN)[key])
    start = (zlib.crc32(seed.encode("utf-8", "replace")) + turn) % count
    for step in range(count):
        line = text(key, chinese, start + step, **values)
        if line not in last_reply:
            return line
    return text(key, chinese, start, **values)


class NameValues(TypedDict):
    name_zh: str
    name_en: str


class AskedWhat(TypedDict):
    what_zh: str
    what_en: str


def name_values(name: str | None) -> NameValues:
    """The ``{name_zh}`` and ``{name_en}`` fillers: ", 小红" style or nothing."""
    return {"name_zh": f"，{name}" if name else "", "name_en": f", {name}" if name else ""}


def asked_what(predicates: Sequence[str], chinese: bool) -> AskedWhat:
    """The ``{what_zh}``/``{what_en}`` fillers of ``dont_know`` for the first known slot."""
    table = _ASKED_ZH if chinese else _ASKED_EN
    found = next((table[p] for p in predicates if p in table), "")
    return {"what_zh": found or "这个", "what_en": found or "that"}


def join_items(items: Sequence[str], chinese: bool) -> str:
    """Several echoed or recalled items as one phrase, without their own final stops."""
    cleaned = [item.strip().rstrip("。.!！") for item in items if item.strip()]
    return ("；" if chinese else "; ").join(cleaned)


def day_text(said: datetime, now: datetime, chinese: bool) -> str:
    """The day something was said, on the user's clock: "今天" / "5月2日" / "2025年5月2日", "Earlier today" /
    "On May 2" / "On May 2, 2025"."""
    days = (now.date() - said.date()).days
    if chinese:
        named = {0: "今天", 1: "昨天", 2: "前天"}.get(days)
        return named or (f"{said.month}月{said.day}日" if said.year == now.year else
                         f"{said.year}年{said.month}月{said.day}日")
    named_en = {0: "Earlier today", 1: "Yesterday"}.get(days)
    if named_en:
        return named_en
    return f"On {said:%B} {said.day}" if said.year == now.year else f"On {said:%B} {said.day}, {said.year}"


def when_text(due: datetime, now: datetime, timezone: str, chinese: bool) -> str:
    """"明天 09:00（Asia/Shanghai）" / "tomorrow at 09:00 (Asia/Shanghai)": the due time on the user's clock."""
    days = (due.date() - now.date()).days
    clock = f"{due:%H:%M}"
    if chinese:
        weekday = _WEEKDAYS_ZH[due.weekday()]
        day = {0: "今天", 1: "明天", 2: "后天"}.get(days, f"{due.month}月{due.day}日（周{weekday}）")
        return f"{day} {clock}（{timezone}）"
    day = {0: "today", 1: "tomorrow"}.get(days, f"on {due:%A, %b} {due.day}")
    return f"{day} at {clock} ({timezone})"

