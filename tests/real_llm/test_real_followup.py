"""Follow-ups composed by the real model (llama.cpp server, Gemma 3 270M): one call for each, with the thread, its day
and the user's memories after a worked example; the model's words when a person can read them (else the template),
sent once to the fake Telegram; each call counted as usage kind ``followup``.

Gemma 3 270M as packaged here is the pretrained model, not the instruction-tuned one: it continues a pattern
rather than following an instruction, and goes on past its message. Asked at temperature 0 (``LLM_EXTRA_BODY``,
so that a run is repeatable), it wrote a usable first question for 5 of 8 threads tried; the rest were the
worked example's words, the prompt's fields or no question, and got the template. The test prints what it wrote
and what was sent."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from bench.fakes.telegram_api import FakeTelegram
from shared.db.memory_models import Memory
from shared.db.thread_models import OpenThread
from shared.db.usage_models import UsageCall
from shared.delivery.platform_api import TelegramSender
from shared.followups.compose import FollowupFacts, instructions_of, offline_text, usable_followup
from shared.followups.delivery import FollowupRules, claim_due_followups, deliver_followup
from shared.llm.client import ChatModel
from tests.fakes.recording_proxy import RecordingProxy
from tests.real_llm.conftest import MODEL_ALIAS, SYSTEM_ROLE

pytestmark = [pytest.mark.real_llm, pytest.mark.timeout(1500)]

HAPPENS = datetime(2026, 11, 27, 1, 0, tzinfo=UTC)  # Friday 09:00 in Shanghai, 01:00 in London
NOW = HAPPENS + timedelta(hours=12)  # 21:00 in Shanghai, 13:00 in London: outside both quiet hours
SECONDS = 400
"""Generous: the model shares two cores with everything else the machine runs."""
THREADS = (  # (user, what, its zone, Chinese, what the user said about it)
    ("2001", "面试", "Asia/Shanghai", True, "最担心英文自我介绍"),
    ("2002", "your driving test", "Europe/London", False, "worried about parallel parking"),
    ("2003", "the doctor's visit", "Europe/London", False, None),
    ("2004", "科目二", "Asia/Shanghai", True, "练了一个月倒车入库"),
)


def test_the_real_model_writes_follow_ups_and_only_what_is_fit_to_read_is_sent(real_llm_url, uow_factory):
    facts = [add_thread(uow_factory, *thread) for thread in THREADS]
    rules = FollowupRules(lease=timedelta(seconds=SECONDS))
    with RecordingProxy(real_llm_url) as proxy, FakeTelegram() as telegram:
        model = ChatModel(proxy.base_url, None, MODEL_ALIAS, SECONDS, system_role=SYSTEM_ROLE,
                          extra_body={"temperature": 0})
        claims = sorted(claim_due_followups(uow_factory, NOW, rules), key=lambda claim: claim.thread_id)
        sender = {"telegram": TelegramSender(telegram.base_url, telegram.token)}
        outcomes = [deliver_followup(uow_factory, sender, claim.thread_id, claim.attempt, NOW, rules=rules,
                                     chat_model=model) for claim in claims]
        again = [deliver_followup(uow_factory, sender, claim.thread_id, claim.attempt, NOW, rules=rules,
                                  chat_model=model) for claim in claims]
        requests = proxy.chat_requests()
        sent = {str(message["chat_id"]): message["text"] for message in telegram.sent}
    assert [outcome.kind for outcome in outcomes] == ["sent"] * len(THREADS)
    assert [outcome.kind for outcome in again] == ["skipped"] * len(THREADS)
    assert len(requests) == len(THREADS) and len(telegram.sent) == len(THREADS)
    by_model = 0
    for (user, *_), thread_facts, request in zip(THREADS, facts, requests, strict=True):
        written, prompt = request.content(), json.dumps(request.body, ensure_ascii=False)
        assert request.status == 200 and thread_facts.what in prompt
        assert all(memory in prompt for memory in thread_facts.memories)
        usable = usable_followup(written, thread_facts, instructions_of(request.body["messages"]))
        template = offline_text(thread_facts, NOW)
        print(json.dumps({"what": thread_facts.what, "model_wrote": written, "sent": sent[user],
                          "by_model": usable is not None}, ensure_ascii=False))
        assert sent[user] == (usable or template)  # the model's words when fit to read, else the template
        by_model += usable is not None
    assert by_model >= 1, "no follow-up the model wrote was fit to send"
    with uow_factory() as uow:
        assert [call.kind for call in uow.session.scalars(select(UsageCall))] == ["followup"] * len(THREADS)


def add_thread(uow_factory, user: str, what: str, zone: str, chinese: bool, said: str | None) -> FollowupFacts:
    with uow_factory() as uow:
        identity = uow.users.identify("telegram", user, locale="zh-hans" if chinese else "en")
        chat = uow.chats.get_or_create("telegram", user, "private")
        uow.users.get(identity.user_id).followups_on_at = HAPPENS - timedelta(days=1)
        memory = uow.memories.add(Memory(user_id=identity.user_id, type="event", subject="user", predicate="worry",
                                         content=said, source="user_stated")) if said else None
        uow.threads.add(OpenThread(user_id=identity.user_id, chat_id=chat.id, what=what, happens_at=HAPPENS,
                                   timezone=zone, language="zh" if chinese else "en",
                                   memory_id=memory.id if memory else None))
        uow.commit()
    return FollowupFacts(what, HAPPENS, zone, chinese, (said,) if said else ())
