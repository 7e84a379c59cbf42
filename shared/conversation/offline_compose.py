"""The offline responder's reply, composed part by part: the reminder confirmed, the statements echoed (new,
corrected or already known), the recall question answered or honestly not, small talk in the tone of the
emotion strategy table, and the one-time hint on connecting a model. Pure, no database."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from shared.conversation import offline_replies as say
from shared.conversation.echo import lower_first, second_person
from shared.conversation.notice_texts import Notice, NoticeCode, notice_text
from shared.conversation.offline_view import MemoryNote, OfflineView, RoundNote
from shared.conversation.packing import excerpt
from shared.emotion import Emotion, strategy_for
from shared.reminders.in_note import asks_about_reminders
from shared.reminders.timeparse import REMIND_CUE
from shared.search.kinds import expanded
from shared.search.temporal import asked_span
from shared.search.tokenizer import query_terms
from shared.speech.acts import sentences
from shared.speech.guard import near_same
from shared.speech.past_talk import BOT_SIDE, EITHER_SIDE, USER_SIDE, PastAsk, past_ask
from shared.speech.recall_questions import RecallAsk, asks_about_bot, recall_ask
from shared.speech.statements import Statement, read_statements
from shared.text import language_of

if TYPE_CHECKING:
    from shared.llm.turn_schema import TodoEntry

MAX_ANSWERS = 3
QUOTED_CHARS = 160
"""A quoted side of a round is cut to this, around the question's words."""
LONG_MESSAGE_CHARS = 40
"""A statement this long that holds no fact the rules know is conversation a model should answer."""
GENERIC_TERMS = frozenset({"喜欢", "like", "love", "有", "have", "名字", "name", "什么", "想", "字"})
"""Words of a recall question too general to pick a memory by ("我喜欢什么" names no topic)."""
_HOW_ARE_YOU = re.compile(r"最近怎么样|最近好吗|你好吗|你怎么样|你还好吗|过得怎么样|\bhow are you\b|\bhow's it going\b|"
                          r"\bhow have you been\b|\bwhat's up\b|\bhow are things\b|\bhow do you do\b", re.IGNORECASE)
_GOOD_NIGHT = re.compile(r"晚安|good ?night|\bnight night\b", re.IGNORECASE)


def already_known(statement: Statement, view: OfflineView) -> bool:
    """Said before in nearly the same words: a memory recalled or held under the same key."""
    key = (statement.type, statement.predicate)
    same_key = [n for n in view.known if (n.type, n.predicate) == key]
    return any(near_same(statement.content, n.content) for n in [*view.recalled, *same_key])


@dataclass
class Composer:
    """One reply being put together for ``view`` in the user's language."""

    view: OfflineView
    chinese: bool
    emotion: Emotion

    @property
    def last_reply(self) -> str:
        return self.view.bot_lines[-1] if self.view.bot_lines else ""

    def pick(self, key: str, **values: str) -> str:
        return say.pick(key, self.chinese, self.view.text, self.view.turn_number, self.last_reply, **values)

    def echo(self, content: str) -> str:
        turned = second_person(content)
        return turned if self.chinese else lower_first(turned)

    def reminder(self, todos: tuple[TodoEntry, ...]) -> str:
        if not todos:
            asked = REMIND_CUE.search(self.view.text) and not asks_about_reminders(self.view.text)
            return say.text("reminder_needs_time", self.chinese) if asked else ""
        return reminder_confirmation(todos[0], self.view)

    def statements(self, statements: list[Statement]) -> str:
        fresh, changed, known = [], [], []
        for statement in statements:
            key = (statement.type, statement.predicate)
            old = [n for n in self.view.known if (n.type, n.predicate) == key]
            if already_known(statement, self.view):
                known.append(statement)
            elif old:
                changed.append((statement, old[-1]))
            else:
                fresh.append(statement)
        lines = [self._stated(fresh), *(self._changed(new, old) for new, old in changed)]
        if known and not (fresh or changed):
            lines.append(say.text("already_known", self.chinese,
                                  items=say.join_items([self.echo(s.content) for s in known], self.chinese)))
        return " ".join(line for line in lines if line)

    def _stated(self, fresh: list[Statement]) -> str:
        if not fresh:
            return ""
        if self.view.paused:
            items = say.join_items([self.echo(s.content) for s in fresh], self.chinese)
            return say.text("paused", self.chinese, items=items)
        if len(fresh) == 1 and fresh[0].predicate == "name":
            return say.text("named", self.chinese, name=fresh[0].value)
        items = say.join_items([self.echo(s.content) for s in fresh], self.chinese)
        return say.text("remembered", self.chinese, items=items)

    def _changed(self, new: Statement, old: MemoryNote) -> str:
        if self.view.paused:
            return say.text("paused", self.chinese, items=self.echo(new.content))
        if new.predicate == "name":
            return say.text("renamed", self.chinese, name=new.value, old=_name_in(old.content) or old.content)
        return say.text("updated", self.chinese, items=self.echo(new.content), old=self.echo(old.content))

    def reminders(self) -> str:
        """The pending reminders, when the message asks about them."""
        if not asks_about_reminders(self.view.text):
            return ""
        if not self.view.reminders:
            return say.text("no_reminders", self.chinese)
        items = [self._due(r.due_at) + " " + second_person(r.content) for r in self.view.reminders]
        return say.text("reminders_list", self.chinese, items=say.join_items(items, self.chinese))

    def _due(self, due: datetime) -> str:
        local = self.view.local_now
        return say.when_text(due.astimezone(local.tzinfo), local, self.view.timezone, self.chinese)

    def answer(self, ask: RecallAsk | None) -> str:
        past = past_ask(self.view.text)
        if past is not None:
            said = best_round(past, self.view)
            if said is not None:
                return self._quoted(said, past.side)
            notes = _answers(ask, self.view) if ask is not None else []
            if not notes:
                return say.text("not_said", self.chinese)
        if ask is None:
            if asks_about_bot(self.view.text):
                return say.text("intro", self.chinese, bot=self.view.bot_name)
            return ""
        notes = _answers(ask, self.view)
        if not notes and not ask.about_user:
            said = best_round(PastAsk(USER_SIDE, ask.terms), self.view, needs_words=True)
            if said is not None:
                return self._quoted(said, USER_SIDE)
        if ask.tentative and not notes:
            return ""
        if ask.about_user:
            name = _name_in(next((n.content for n in self.view.known if n.predicate == "name"), ""))
            pool = _unique([*(notes or self.view.recalled), *self.view.newest])
            others = [n for n in pool if n.predicate != "name"][:MAX_ANSWERS]
            if not (name or others):
                return say.text("stranger", self.chinese)
            if not others:
                return say.text("about_user_name", self.chinese, **say.name_values(name))
            items = say.join_items([self.echo(n.content) for n in others], self.chinese)
            line = say.text("about_user", self.chinese, items=items, **say.name_values(name))
            more = self.view.memory_count - len(others) - (1 if name else 0)
            return f"{line} {say.text('more_known', self.chinese, count=str(more))}" if more > 0 else line
        if not notes:
            return say.text("dont_know", self.chinese, **say.asked_what([p for _, p in ask.keys], self.chinese))
        quoted = any(language_of(n.content).chinese != self.chinese for n in notes)
        items = say.join_items([n.content if quoted else self.echo(n.content) for n in notes], self.chinese)
        items = items if self.chinese or quoted else items[:1].upper() + items[1:]
        return say.text("answer_quoted" if quoted else "answer", self.chinese, items=items)

    def _quoted(self, said: RoundNote, side: str) -> str:
        """A round quoted with its day: the user's line, the bot's reply, or both."""
        day = say.day_text(said.said_at.astimezone(self.view.local_now.tzinfo), self.view.local_now, self.chinese)
        terms = past_terms(self.view.text)
        line, reply = excerpt(said.line, terms, QUOTED_CHARS), excerpt(said.reply or "", terms, QUOTED_CHARS)
        if side == BOT_SIDE and reply:
            return say.text("said_bot", self.chinese, day=day, reply=reply)
        if side == EITHER_SIDE and reply:
            return say.text("said_both", self.chinese, day=day, line=line, reply=reply)
        return say.text("said_user", self.chinese, day=day, line=line)

    def small_talk(self) -> str:
        kinds = [sentence.kind for sentence in sentences(self.view.text)]
        name = _name_in(next((n.content for n in self.view.known if n.predicate == "name"), "")) or None
        if "closing" in kinds:  # "thanks, that's all for now": a goodbye, with the thanks answered
            return self.pick("thanks_closing" if self.emotion.primary == "grateful" else "closing")
        if "thanks" in kinds:
            return self.pick("thanks")
        if _HOW_ARE_YOU.search(self.view.text):
            return self.pick("how_are_you")
        if "greeting" in kinds:
            key = "good_night" if _GOOD_NIGHT.search(self.view.text) else "greeting"
            return self.pick(key, **say.name_values(name))
        tone = strategy_for(self.emotion).tone
        line = self.pick(tone if tone in ("empathetic", "calm_reassuring", "patient", "warm", "enthusiastic")
                         else "neutral")
        if tone in ("warm", "enthusiastic") and self._may_ask():
            line += self.pick("follow_up")
        return line

    def unanswerable(self) -> str:
        """What it cannot do offline, when the message asks for it (not to someone who is upset)."""
        return say.text("offline_limits", self.chinese) if self._needs_answer() and not self._upset() else ""

    def model_hint(self, understood: bool) -> str:
        """The one-line hint on connecting a model, for the operator at their console only, when this turn needs
        one and it was not shown yet."""
        if not self.view.operator_console or self.view.hint_shown or self._upset():
            return ""
        statements = [s for s in sentences(self.view.text) if s.kind == "statement"]
        chatty = not understood and sum(len(s.body) for s in statements) >= LONG_MESSAGE_CHARS
        return say.text("model_hint", self.chinese) if self._needs_answer() or chatty else ""

    def _needs_answer(self) -> bool:
        """A question, request or hypothetical that neither memory, small talk nor the bot's introduction
        answers."""
        text = self.view.text
        ask = recall_ask(text)
        if (ask is not None and (not ask.tentative or _answers(ask, self.view))) or asks_about_bot(text) \
                or _HOW_ARE_YOU.search(text) or past_ask(text) is not None:
            return False
        if asks_about_reminders(text):
            return False
        return any(s.kind in ("request", "hypothetical", "question") for s in sentences(self.view.text))

    def _upset(self) -> bool:
        return self.emotion.category == "negative" and self.emotion.primary != "confused"

    def _may_ask(self) -> bool:
        """A follow-up question only where both this turn's and the session's strategy allow one."""
        return self.view.strategy.proactive_question and strategy_for(self.emotion).proactive_question


def known_count_notice(view: OfflineView, shown: int) -> Notice | None:
    """Under a model's answer to "what do you remember about me": how many memories there are and how to see
    them all, when its prompt showed fewer (the offline answer says it itself, ``more_known``)."""
    if view.memory_count <= shown:
        return None
    return Notice.of(NoticeCode.KNOWN_COUNT, count=view.memory_count)


def confirmation_notice(todo: TodoEntry, view: OfflineView) -> Notice:
    """"Okay — I'll remind you tomorrow at 09:00: …" (a deadline: "… is due …; I'll remind you ahead of it"): the
    reminder's words and its time on the user's clock."""
    if todo.due is None:  # the rules' reminders always have a time; a model's without one is not stored
        return Notice(NoticeCode.REMINDER_NEEDS_TIME)
    return Notice.of(NoticeCode.DEADLINE_SET if todo.deadline else NoticeCode.REMINDER_SET,
                     what=second_person(todo.content), due=todo.due, now=view.local_now.isoformat(), zone=view.timezone)


def reminder_confirmation(todo: TodoEntry, view: OfflineView) -> str:
    """The offline responder's answer to a reminder it set: :func:`confirmation_notice` in the language of the
    message."""
    return notice_text(confirmation_notice(todo, view), view.language.chinese)


def _answers(ask: RecallAsk, view: OfflineView) -> list[MemoryNote]:
    """The speaker's memories that answer ``ask``: its exact keys, then its open prefixes, then recalled
    memories that share a meaningful word with the question."""
    pool = _unique([*view.known, *view.recalled])
    exact = [n for key in ask.keys for n in pool if (n.type, n.predicate) == key]
    if exact:
        return _unique(exact)[:MAX_ANSWERS]
    wanted = list(expanded(term for term in ask.terms if term not in GENERIC_TERMS))

    def shares_a_word(note: MemoryNote) -> bool:
        return bool(set(wanted) & set(query_terms(note.content)))

    open_matches = [n for n in pool for kind, part in ask.prefixes if n.type == kind and n.predicate
                    and (n.predicate.startswith(part) if not part.startswith("_") else n.predicate.endswith(part))]
    if open_matches:
        chosen = [n for n in open_matches if shares_a_word(n)] if wanted else open_matches
        if chosen:
            return _unique(chosen)[:MAX_ANSWERS]
    return [n for n in view.recalled if wanted and shares_a_word(n)][:MAX_ANSWERS]


def best_round(past: PastAsk, view: OfflineView, *, needs_words: bool = False) -> RoundNote | None:
    """The round that answers a question about what was said: of the rounds said in the time it names (all,
    when it names none), the one whose asked side shares the most of its words; with no words to go by, the
    best-ranked round of the time it names (also when its words only name the time); None when nothing fits."""
    span = asked_span(view.text, view.local_now)
    pool = [said for said in view.rounds if (span is None or span.holds(said.said_at))
            and (past.side == BOT_SIDE or _tells_something(said.line))]
    wanted = set(expanded(term for term in past.terms if term not in GENERIC_TERMS))
    if not wanted:
        return pool[0] if pool and span is not None and not needs_words else None

    def shared(said: RoundNote) -> int:
        sides = {USER_SIDE: said.line, BOT_SIDE: said.reply or ""}.get(past.side, f"{said.line} {said.reply or ''}")
        return len(wanted & set(query_terms(sides)))

    scored = [(shared(said), -place, said) for place, said in enumerate(pool)]
    best = max(scored, default=None, key=lambda item: item[:2])
    if best is not None and best[0] > 0:
        return best[2]
    return pool[0] if pool and span is not None and not needs_words else None  # the words named the day


def _tells_something(line: str) -> bool:
    """A line that says something (not only asks): an earlier asking of the same question is no answer to it."""
    return any(sentence.kind != "question" for sentence in sentences(line))


def past_terms(text: str) -> tuple[str, ...]:
    """The words of a question to cut a quoted round around."""
    return tuple(query_terms(text))


def _unique(notes: list[MemoryNote]) -> list[MemoryNote]:
    """The notes without repeats of the same text (a memory can be both known and recalled)."""
    first: dict[str, MemoryNote] = {}
    for note in notes:
        first.setdefault(note.content, note)
    return list(first.values())


def _name_in(content: str) -> str:
    """The name in a stored "我叫小红" / "My name is Ana", or "" when there is none."""
    return next((s.value for s in read_statements(content) if s.predicate == "name"), "")
