"""A follow-up composed by the real model (llama.cpp server, Gemma 3 270M): one call with the thread and the user's
memories, its words sent once to the fake Telegram, counted as usage kind ``followup``."""

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
from shared.followups.compose import FollowupFacts, compose_followup, offline_text
from shared.followups.delivery import FollowupRules, claim_due_followups, deliver_followup
from shared.llm.client import ChatModel
from tests.fakes.recording_proxy import RecordingProxy
from tests.real_llm.conftest import MODEL_ALIAS

pytestmark = [pytest.mark.real_llm, pytest.mark.timeout(1500)]

HAPPENS = datetime(2026, 11, 27, 1, 0, tzinfo=UTC)  # Friday 09:00 in Shanghai
NOW = HAPPENS + timedelta(hours=4)
SECONDS = 400
"""Generous: the model shares two cores with everything else the machine runs."""


def test_the_real_model_writes_a_follow_up_about_the_thread_and_it_is_sent_once(real_llm_url, uow_factory):
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
    with RecordingProxy(real_llm_url) as proxy, FakeTelegram() as telegram:
        model = ChatModel(proxy.base_url, None, MODEL_ALIAS, SECONDS)
        facts = FollowupFacts("面试", HAPPENS, "Asia/Shanghai", True, ("最担心英文自我介绍",))
        words, spent, by_model = compose_followup(model, facts, NOW)
        [claim] = claim_due_followups(uow_factory, NOW, rules)
        sender = {"telegram": TelegramSender(telegram.base_url, telegram.token)}
        outcome = deliver_followup(uow_factory, sender, claim.thread_id, claim.attempt, NOW, rules=rules,
                                   chat_model=model)
        again = deliver_followup(uow_factory, sender, claim.thread_id, claim.attempt, NOW, rules=rules,
                                 chat_model=model)
        requests = proxy.chat_requests()
        sent = [message["text"] for message in telegram.sent]
    print(json.dumps({"composed": words, "by_model": by_model, "sent": sent,
                      "statuses": [request.status for request in requests]}, ensure_ascii=False))
    assert by_model and words != offline_text(facts, NOW) and len(spent) == 1 and spent[0].kind == "followup"
    assert not words.lstrip().startswith(("{", "["))
    assert (outcome.kind, again.kind) == ("sent", "skipped") and len(sent) == 1 and sent[0]
    assert len(requests) == 2 and {request.status for request in requests} == {200}  # one call per follow-up
    prompt = json.dumps(requests[-1].body, ensure_ascii=False)
    assert "面试" in prompt and "最担心英文自我介绍" in prompt
    with uow_factory() as uow:
        assert [call.kind for call in uow.session.scalars(select(UsageCall))] == ["followup"]
