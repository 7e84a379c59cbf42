"""The daily token quota under concurrency, on real PostgreSQL with the fake OpenAI server: messages of one
user arriving at once, on two replicas, spend at most one call's worth beyond the allowance, because each
call is held on the allowance before it is made and settled after (shared/usage/quota.py)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from bench.fakes.openai_server import FakeOpenAI
from shared.conversation.messages import IncomingMessage
from shared.conversation.service import ConversationService
from shared.llm.client import ChatModel
from shared.usage.policy import QuotaPolicy
from shared.usage.quota import call_ceiling
from tests.integration.test_usage_recording import CONFIG, TURN
from tests.told import told

pytestmark = pytest.mark.committed

NOW = datetime(2026, 11, 23, 9, 15, tzinfo=UTC)
MAX_OUTPUT = 256


@pytest.fixture
def llm():
    with FakeOpenAI(latency=0.3) as server:  # every call in flight long enough for the others to start
        server.set_responder(lambda _request: TURN)
        yield server


def replica(uow_factory, llm, quota: QuotaPolicy) -> ConversationService:
    model = ChatModel(base_url=llm.base_url, api_key="test", model="fake-chat", timeout_seconds=20,
                      max_output_tokens=MAX_OUTPUT)
    return ConversationService(uow_factory, replace(CONFIG, quota=quota), chat_model=model, clock=lambda: NOW)


def message(number: int, *, user: str = "carol", chat: str | None = None) -> IncomingMessage:
    return IncomingMessage(platform="discord", chat_id=chat or f"dm-{user}", user_id=user,
                           text=f"Note number {number}: the plants on the balcony need water", sent_at=NOW,
                           is_private=chat is None, display_name="Carol", message_id=f"{user}-{number}")


async def all_at_once(replicas: list[ConversationService], messages: list[IncomingMessage]):
    return await asyncio.gather(*(replicas[index % len(replicas)].handle_message(item)
                                  for index, item in enumerate(messages)))


def spent_today(uow_factory, platform_user_id: str) -> int:
    with uow_factory() as uow:
        user_id = uow.users.identify("discord", platform_user_id).user_id
        return uow.usage.tokens_on(user_id, NOW.date())


def most_one_call_costs(llm) -> int:
    return max(call_ceiling(request["messages"], MAX_OUTPUT) for request in llm.chat_requests())


def test_concurrent_messages_on_two_replicas_spend_at_most_one_call_beyond_the_allowance(uow_factory, llm):
    allowance = 2_200
    replicas = [replica(uow_factory, llm, QuotaPolicy(per_user=allowance)) for _ in range(2)]
    replies = asyncio.run(all_at_once(replicas, [message(number) for number in range(14)]))
    asked = len(llm.chat_requests())
    assert 1 <= asked <= 3, f"{asked} model calls for a {allowance}-token allowance"
    assert sum(not reply.offline for reply in replies) == asked
    assert all("allowance" in told(reply) for reply in replies if reply.offline)
    assert spent_today(uow_factory, "carol") <= allowance + most_one_call_costs(llm)


def test_what_was_held_is_given_back_so_the_day_counts_only_what_was_spent(uow_factory, llm):
    replicas = [replica(uow_factory, llm, QuotaPolicy(per_user=1_000_000))]
    asyncio.run(all_at_once(replicas, [message(number, user="dmitri") for number in range(5)]))
    with uow_factory() as uow:
        user_id = uow.users.identify("discord", "dmitri").user_id
        [(_, totals)] = uow.usage.by_day(NOW.date(), user_id=user_id)
    assert totals.calls == 5
    assert totals.messages == 5
    assert spent_today(uow_factory, "dmitri") == sum(
        call.prompt_tokens + call.completion_tokens for call in _calls(uow_factory, user_id))


def test_a_group_chats_allowance_holds_against_several_members_at_once(uow_factory, llm):
    allowance = 1_500
    replicas = [replica(uow_factory, llm, QuotaPolicy(per_chat=allowance)) for _ in range(2)]
    members = [message(number, user=f"member{number}", chat="garden-club") for number in range(10)]
    asyncio.run(all_at_once(replicas, members))
    asked = len(llm.chat_requests())
    assert 1 <= asked <= 2, f"{asked} model calls for a {allowance}-token group allowance"
    with uow_factory() as uow:
        chat_id = uow.chats.get_or_create("discord", "garden-club", "group").id
        assert uow.usage.chat_tokens_on(chat_id, NOW.date()) <= allowance + most_one_call_costs(llm)


def _calls(uow_factory, user_id: int):
    with uow_factory() as uow:
        return uow.usage.recent_calls(user_id, 100)
