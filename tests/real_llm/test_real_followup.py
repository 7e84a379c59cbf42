"""A follow-up composed by the real model (llama.cpp server, Gemma 3 270M): one call with the thread and the user's
memories; its words, when a person can read them (else the template), sent once to the fake Telegram; the call
counted as usage kind ``followup``. Gemma 3 270M often writes something no one should read (a chat template's
markup, a list in two languages): the test prints what it wrote and what was sent."""

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
from shared.followups.compose import FollowupFacts, offline_text, usable_followup
from shared.followups.delivery import FollowupRules, claim_due_followups, deliver_followup
from shared.llm.client import ChatModel
from tests.fakes.recording_proxy import RecordingProxy
from tests.real_llm.conftest import MODEL_ALIAS, SYSTEM_ROLE

pytestmark = [pytest.mark.real_llm, pytest.mark.timeout(1500)]

HAPPENS = datetime(2026, 11, 27, 1, 0, tzinfo=UTC)  # Friday 09:00 in Shanghai
NOW = HAPPENS + timedelta(hours=4)
SECONDS = 400
"""Generous: the model shares two cores with everything else the machine runs."""


def test_the_real_model_is_asked_once_for_a_follow_up_and_what_is_sent_is_fit_to_read(real_llm_url, uow_factory):
    with uow_factory() as uow:
        identity = uow.users.identify("telegram", "1002", locale="zh-hans")
        chat = uow.chats.get_or_create("telegram", "1002", "private")
        uow.users.get(identity.user_id).followups_on_at = HAPPENS - timedelta(days=1)
        memory = uow.memories.add(Memory(user_id=identity.user_id, type="event", subject="user", predicate="worry",
                                         content="最担心英文自我介绍", source="user_stated"))
        uow.threads.add(OpenThread(user_id=identity.user_id, chat_id=chat.id, what="面试", happens_at=HAPPENS,
                                   timezone="Asia/Shanghai", language="zh", memory_id=memory.id))
        uow.commit()
    rules = FollowupRules(lease=timedelta(seconds=SECONDS))
    facts = FollowupFacts("面试", HAPPENS, "Asia/Shanghai", True, ("最担心英文自我介绍",))
    with RecordingProxy(real_llm_url) as proxy, FakeTelegram() as telegram:
        model = ChatModel(proxy.base_url, None, MODEL_ALIAS, SECONDS, system_role=SYSTEM_ROLE)
        [claim] = claim_due_followups(uow_factory, NOW, rules)
        sender = {"telegram": TelegramSender(telegram.base_url, telegram.token)}
        outcome = deliver_followup(uow_factory, sender, claim.thread_id, claim.attempt, NOW, rules=rules,
                                   chat_model=model)
        again = deliver_followup(uow_factory, sender, claim.thread_id, claim.attempt, NOW, rules=rules,
                                 chat_model=model)
        [request] = proxy.chat_requests()
        sent = [message["text"] for message in telegram.sent]
    written = request.content()
    template = offline_text(facts, NOW)
    print(json.dumps({"model_wrote": written, "sent": sent, "by_model": sent != [template]}, ensure_ascii=False))
    assert request.status == 200 and (outcome.kind, again.kind) == ("sent", "skipped") and len(sent) == 1
    prompt = json.dumps(request.body, ensure_ascii=False)
    assert "面试" in prompt and "最担心英文自我介绍" in prompt  # the thread and the memory it relates to
    instructions = request.body["messages"][0]["content"]
    assert sent[0] == (usable_followup(written, facts, instructions) or template)  # the model's, when fit to read
    with uow_factory() as uow:
        assert [call.kind for call in uow.session.scalars(select(UsageCall))] == ["followup"]
