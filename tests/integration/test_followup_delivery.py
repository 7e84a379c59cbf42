"""Follow-up delivery on real PostgreSQL: leased claims, exactly-once sends to the fake platforms, only with
consent, never early, in quiet hours, twice a day or to a blocked, paused or over-quota user; the follow-up is a
turn of the conversation and counted as usage kind ``followup``."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from bench.fakes.discord_api import FakeDiscord
from bench.fakes.openai_server import FakeOpenAI
from bench.fakes.telegram_api import FakeTelegram
from shared.db.memory_models import Memory
from shared.db.models import ConversationTurn
from shared.db.thread_models import OpenThread
from shared.db.usage_models import UsageCall
from shared.delivery.platform_api import ConsoleSender, DiscordSender, TelegramSender
from shared.followups.delivery import (
    FollowupClaim,
    FollowupRules,
    claim_due_followups,
    console_followups_sent_since,
    deliver_followup,
)
from shared.llm.client import ChatModel
from shared.llm.metering import CallUsage
from shared.reminders.service import DeliveryOutcome, ReminderSender
from shared.usage.policy import QuotaPolicy

SHANGHAI_OFFSET = timedelta(hours=8)
HAPPENS = datetime(2026, 11, 27, 1, 0, tzinfo=UTC)  # Friday 09:00 in Shanghai
NOW = HAPPENS + timedelta(hours=4)  # 13:00 in Shanghai
RULES = FollowupRules(lease=timedelta(seconds=30))


def senders_for(telegram: FakeTelegram, discord: FakeDiscord | None = None) -> dict[str, ReminderSender]:
    senders: dict[str, ReminderSender] = {"telegram": TelegramSender(telegram.base_url, telegram.token)}
    if discord is not None:
        senders["discord"] = DiscordSender(discord.base_url, discord.token)
    return senders


def add_thread(uow_factory, what: str = "面试", *, user: str = "1001", platform: str = "telegram",
               happens_at: datetime = HAPPENS, consent: bool = True, language: str = "zh", chat: str | None = None,
               kind: str = "private", quiet: str | None = None) -> int:
    with uow_factory() as uow:
        identity = uow.users.identify(platform, user, locale="zh-hans" if language == "zh" else "en")
        chat_row = uow.chats.get_or_create(platform, chat or user, kind)
        person = uow.users.get(identity.user_id)
        person.followups_on_at = HAPPENS - timedelta(days=1) if consent else None
        person.quiet_hours = quiet
        thread = uow.threads.add(OpenThread(user_id=identity.user_id, chat_id=chat_row.id, what=what,
                                            happens_at=happens_at, timezone="Asia/Shanghai", language=language))
        uow.commit()
        return thread.id


def thread_row(uow_factory, thread_id: int) -> OpenThread:
    with uow_factory() as uow:
        return uow.session.get(OpenThread, thread_id)


def claim_one(uow_factory, now: datetime = NOW) -> FollowupClaim:
    [claim] = claim_due_followups(uow_factory, now, RULES)
    return claim


def deliver(uow_factory, senders, claim: FollowupClaim, now: datetime = NOW, **options) -> DeliveryOutcome:
    return deliver_followup(uow_factory, senders, claim.thread_id, claim.attempt, now, rules=RULES, **options)


def test_a_due_follow_up_is_sent_once_in_the_users_language_and_becomes_a_turn_of_the_conversation(
        uow_factory, telegram):
    thread_id = add_thread(uow_factory)

    outcome = deliver(uow_factory, senders_for(telegram), claim_one(uow_factory))

    assert outcome == DeliveryOutcome("sent")
    assert [m["text"] for m in telegram.sent] == ["你今天的面试怎么样了？"]
    thread = thread_row(uow_factory, thread_id)
    assert (thread.status, thread.asked_at, thread.claimed_until) == ("asked", NOW, None)
    with uow_factory() as uow:
        turn = uow.session.get(ConversationTurn, thread.followup_turn_id)
        assert (turn.role, turn.text, turn.chat_id) == ("assistant", "你今天的面试怎么样了？", thread.chat_id)
        assert uow.sessions.open_for(thread.user_id, thread.chat_id).id == turn.session_id
    assert claim_due_followups(uow_factory, NOW + timedelta(days=2), RULES) == []  # asked: never again


def test_delivering_the_same_claim_twice_sends_once(uow_factory, telegram):
    add_thread(uow_factory)
    claim, senders = claim_one(uow_factory), senders_for(telegram)

    outcomes = [deliver(uow_factory, senders, claim), deliver(uow_factory, senders, claim)]

    assert [o.kind for o in outcomes] == ["sent", "skipped"] and len(telegram.sent) == 1


def test_nothing_is_claimed_before_its_time_without_consent_or_from_a_paused_user(uow_factory):
    add_thread(uow_factory, user="1001", happens_at=NOW)  # asked about from three hours after
    add_thread(uow_factory, user="1002", consent=False)
    paused = add_thread(uow_factory, user="1003")
    with uow_factory() as uow:
        uow.users.set_paused(thread_row(uow_factory, paused).user_id, NOW)
        uow.commit()

    assert claim_due_followups(uow_factory, NOW, RULES) == []


def test_a_thread_in_quiet_hours_is_held_until_the_morning_and_sent_then(uow_factory, telegram):
    evening = HAPPENS + timedelta(hours=11)  # 20:00 in Shanghai
    thread_id = add_thread(uow_factory, happens_at=evening)
    night = evening + timedelta(hours=4)  # midnight

    assert claim_due_followups(uow_factory, night, RULES) == []
    morning = datetime(2026, 11, 28, 1, 0, tzinfo=UTC)  # 09:00 in Shanghai
    assert thread_row(uow_factory, thread_id).claimed_until == morning  # not looked at again before then
    assert claim_due_followups(uow_factory, morning - timedelta(minutes=1), RULES) == []
    assert deliver(uow_factory, senders_for(telegram), claim_one(uow_factory, morning), morning).kind == "sent"


def test_a_thread_a_week_past_when_follow_ups_were_turned_on_expires_unsent(uow_factory):
    thread_id = add_thread(uow_factory, happens_at=NOW - timedelta(days=8))

    assert claim_due_followups(uow_factory, NOW, RULES) == []
    thread = thread_row(uow_factory, thread_id)
    assert (thread.status, thread.closed_reason) == ("closed", "expired")


def test_the_users_own_quiet_hours_hold_a_follow_up_the_default_would_send(uow_factory):
    add_thread(uow_factory, quiet="12-15")
    assert claim_due_followups(uow_factory, NOW, RULES) == []


def test_a_scan_claims_one_follow_up_per_user_and_the_next_waits_for_the_next_local_day(uow_factory, telegram):
    add_thread(uow_factory, "面试")
    add_thread(uow_factory, "考试")
    [first] = claim_due_followups(uow_factory, NOW, RULES)
    assert deliver(uow_factory, senders_for(telegram), first).kind == "sent"

    assert claim_due_followups(uow_factory, NOW + timedelta(hours=1), RULES) == []  # the same local day
    tomorrow = NOW + timedelta(days=1)
    assert deliver(uow_factory, senders_for(telegram), claim_one(uow_factory, tomorrow), tomorrow).kind == "sent"
    assert len(telegram.sent) == 2


@pytest.mark.committed
def test_two_workers_delivering_two_threads_of_one_user_at_once_send_one_follow_up(uow_factory, telegram):
    add_thread(uow_factory, "面试")
    add_thread(uow_factory, "考试")
    with uow_factory() as uow:  # both claimed (as by two scans whose leases overlapped)
        claims = [FollowupClaim(t.id, t.attempts) for t in uow.threads.claim_due(NOW, RULES.after, RULES.lease)]
        uow.commit()
    start = threading.Barrier(2)

    def worker(claim: FollowupClaim) -> str:
        start.wait()
        return deliver(uow_factory, senders_for(telegram), claim).kind

    with ThreadPoolExecutor(2) as pool:
        kinds = sorted(pool.map(worker, claims))

    assert kinds == ["sent", "skipped"] and len(telegram.sent) == 1


def test_none_to_a_user_who_wrote_within_the_hour(uow_factory, telegram):
    thread_id = add_thread(uow_factory)
    with uow_factory() as uow:
        thread = uow.session.get(OpenThread, thread_id)
        session = uow.sessions.start(thread.user_id, thread.chat_id, NOW)
        uow.turns.add(ConversationTurn(user_id=thread.user_id, chat_id=thread.chat_id, session_id=session.id,
                                       role="user", text="hi", created_at=NOW - timedelta(minutes=10)))
        uow.commit()

    assert claim_due_followups(uow_factory, NOW, RULES) == []
    later = NOW + timedelta(minutes=51)
    assert deliver(uow_factory, senders_for(telegram), claim_one(uow_factory, later), later).kind == "sent"


def test_none_in_a_group_unless_the_group_turned_them_on(uow_factory, telegram):
    thread_id = add_thread(uow_factory, chat="-100500", kind="group")
    assert claim_due_followups(uow_factory, NOW, RULES) == []
    with uow_factory() as uow:
        chat = uow.chats.get(thread_row(uow_factory, thread_id).chat_id)
        chat.settings = {"followups": True}
        uow.commit()
    later = NOW + timedelta(days=1)  # a group without follow-ups is looked at again a day later

    assert deliver(uow_factory, senders_for(telegram), claim_one(uow_factory, later), later).kind == "sent"
    assert [m["chat_id"] for m in telegram.sent] == [-100500]


def test_a_thread_closed_after_its_claim_or_consent_withdrawn_is_not_sent(uow_factory, telegram):
    closed = add_thread(uow_factory, user="1001")
    withdrawn = add_thread(uow_factory, user="1002")
    claims = claim_due_followups(uow_factory, NOW, RULES)
    with uow_factory() as uow:
        uow.threads.close(thread_row(uow_factory, closed).user_id, closed, "cancelled", NOW)
        uow.users.get(thread_row(uow_factory, withdrawn).user_id).followups_on_at = None
        uow.commit()

    outcomes = [deliver(uow_factory, senders_for(telegram), claim) for claim in claims]

    assert [o.kind for o in outcomes] == ["skipped", "skipped"] and telegram.sent == []
    assert thread_row(uow_factory, withdrawn).status == "open"


def test_blocked_and_over_quota_users_get_none(uow_factory, telegram):
    blocked = add_thread(uow_factory, user="1001")
    spent = add_thread(uow_factory, user="1002")
    claims = {c.thread_id: c for c in claim_due_followups(uow_factory, NOW, RULES)}
    with uow_factory() as uow:
        uow.usage.record(thread_row(uow_factory, spent).user_id, None, [_call(5000)], NOW)
        uow.commit()
    quota = QuotaPolicy(per_user=1000)

    refused = deliver(uow_factory, senders_for(telegram), claims[blocked], quota=quota,
                      blocked=lambda accounts: ("telegram", "1001") in set(accounts))
    over = deliver(uow_factory, senders_for(telegram), claims[spent], quota=quota)

    assert (refused.kind, over.kind) == ("skipped", "skipped") and telegram.sent == []
    assert thread_row(uow_factory, blocked).status == "closed" and thread_row(uow_factory, spent).status == "open"


def test_a_refused_follow_up_closes_its_thread(uow_factory, telegram):
    thread_id = add_thread(uow_factory)
    telegram.forbid_chat(1001)

    outcome = deliver(uow_factory, senders_for(telegram), claim_one(uow_factory))

    assert outcome.kind == "refused"
    thread = thread_row(uow_factory, thread_id)
    assert thread.status == "closed" and thread.closed_reason.startswith("refused: ")


def test_on_discord_the_follow_up_goes_to_the_users_dm_in_english(uow_factory, telegram, discord):
    user = "300000000000000001"
    add_thread(uow_factory, "your exam", user=user, platform="discord", language="en")

    assert deliver(uow_factory, senders_for(telegram, discord), claim_one(uow_factory)).kind == "sent"

    [message] = discord.messages
    assert message["content"] == "How did your exam go today?"
    assert message["channel_id"] == discord.dm_channel_of(user)


def test_the_model_writes_the_follow_up_from_the_thread_and_memories_and_it_counts_as_its_own_usage(
        uow_factory, telegram):
    thread_id = add_thread(uow_factory)
    with uow_factory() as uow:
        memory = uow.memories.add(Memory(user_id=thread_row(uow_factory, thread_id).user_id, type="event",
                                         subject="user", predicate="worry", content="最担心英文自我介绍",
                                         source="user_stated"))
        uow.session.get(OpenThread, thread_id).memory_id = memory.id
        uow.commit()
    written = "你周五的面试怎么样了？上次你说最担心英文自我介绍。"
    with FakeOpenAI(models=("fake-chat",)) as llm:
        llm.queue_reply(written)
        model = ChatModel(base_url=llm.base_url, api_key="test", model="fake-chat", timeout_seconds=10)
        outcome = deliver(uow_factory, senders_for(telegram), claim_one(uow_factory), chat_model=model)
        [request] = llm.chat_requests()

    assert outcome.kind == "sent" and [m["text"] for m in telegram.sent] == [written]
    prompt = "\n".join(str(message["content"]) for message in request["messages"])
    assert "面试" in prompt and "最担心英文自我介绍" in prompt
    with uow_factory() as uow:
        assert [call.kind for call in uow.session.scalars(select(UsageCall))] == ["followup"]


def test_a_console_follow_up_is_shown_by_the_console_once_in_its_window_and_only_to_its_user(uow_factory):
    written: list[str] = []
    add_thread(uow_factory, "your exam", user="ann", platform="console", language="en")
    add_thread(uow_factory, "面试", user="bob", platform="console")
    senders = {"console": ConsoleSender(written.append)}
    for claim in claim_due_followups(uow_factory, NOW, RULES):
        assert deliver(uow_factory, senders, claim).kind == "sent"
    with uow_factory() as uow:
        ann = uow.users.identity("console", "ann").user_id

    assert console_followups_sent_since(uow_factory, ann, NOW - timedelta(seconds=1), NOW) == [
        (NOW, "How did your exam go today?")]
    assert console_followups_sent_since(uow_factory, ann, NOW, NOW + timedelta(minutes=1)) == []
    assert len(written) == 2


@pytest.mark.committed
def test_two_workers_deliver_each_of_forty_follow_ups_exactly_once(uow_factory, telegram):
    thread_ids = {add_thread(uow_factory, f"面试 {n}", user=str(2000 + n)) for n in range(40)}
    start = threading.Barrier(2)

    def worker() -> int:
        start.wait()
        sent, senders = 0, senders_for(telegram)
        while claims := claim_due_followups(uow_factory, NOW, RULES, limit=5):
            for claim in claims:
                sent += deliver(uow_factory, senders, claim).kind == "sent"
                sent += deliver(uow_factory, senders, claim).kind == "sent"  # a redelivered task: skipped
        return sent

    with ThreadPoolExecutor(2) as pool:
        counts = [f.result() for f in [pool.submit(worker), pool.submit(worker)]]

    assert sum(counts) == 40 and len(telegram.sent) == 40
    assert sorted(m["chat_id"] for m in telegram.sent) == list(range(2000, 2040))
    with uow_factory() as uow:
        assert {t.id: t.status for t in uow.session.scalars(select(OpenThread))} == dict.fromkeys(thread_ids, "asked")


def _call(tokens: int) -> CallUsage:
    return CallUsage("turn", "fake-chat", tokens, 0)
