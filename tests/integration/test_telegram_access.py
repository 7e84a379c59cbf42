"""Who the Telegram bot answers, through the real python-telegram-bot against the fake Bot API: refused
messages cost no model call and store nothing, refused users keep their own data's commands, and
operators change the lists with /access."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import pytest
from sqlalchemy import func, select
from telegram.ext import Application

from bench.fakes.telegram_api import FakeTelegram, user_object
from shared.access.texts import refusal_text
from shared.commands import texts
from shared.conversation.messages import IncomingMessage
from shared.db.models import ConversationTurn, Identity
from shared.settings import Settings
from tests.builders import telegram_settings
from tests.integration.test_telegram_bot import (
    ALICE,
    ALICE_CALLER,
    BOB,
    GROUP,
    all_fetched,
    buttons,
    conversation,
    llm_turn,
    run_bot,
)
from tests.waiting import until

OLGA = user_object(1003, "Olga", language_code="en")
"""The operator."""
MENTION = [{"type": "mention", "offset": 0, "length": 15}]

pytestmark = pytest.mark.committed


@pytest.fixture
def settings(telegram: FakeTelegram, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The bot answers in the group only (and its operator anywhere); Bob is blocked."""
    return telegram_settings(telegram, monkeypatch, default_timezone="UTC", telegram_allow_chats=str(GROUP["id"]),
                             access_block_users="telegram:1002", access_operators="telegram:1003")


def stored(uow_factory, model) -> int:
    with uow_factory() as uow:
        return uow.session.scalar(select(func.count()).select_from(model))


def test_outside_the_allowed_group_a_private_message_gets_the_refusal_and_costs_nothing(
        telegram, settings, commands, uow_factory, llm):
    async def scenario(_app: Application) -> None:
        telegram.push_message(1001, ALICE, "hello, I love green tea")
        telegram.push_message(1002, BOB, "/start")
        await until(lambda: telegram.messages_to(1001) and telegram.messages_to(1002))

    run_bot(settings, conversation(uow_factory, settings, llm), commands, scenario)

    assert [m["text"] for m in telegram.messages_to(1001)] == [refusal_text("en", known=False)]
    assert [m["text"] for m in telegram.messages_to(1002)] == [refusal_text("zh-hans", known=False)]
    assert llm.chat_requests() == [] and telegram.chat_actions == []
    assert stored(uow_factory, Identity) == 0 and stored(uow_factory, ConversationTurn) == 0


def test_in_the_allowed_group_a_member_is_answered_and_a_blocked_one_gets_silence(
        telegram, settings, commands, uow_factory, llm):
    llm.queue_reply(llm_turn("Hi Alice!"))

    telegram.forbid_chat(1002)  # Bob never opened a private chat with the bot

    async def scenario(_app: Application) -> None:
        telegram.push_message(GROUP, BOB, "@mnemo_test_bot hello", entities=MENTION)
        telegram.push_message(GROUP, BOB, "/remember@mnemo_test_bot I like jazz")
        telegram.push_message(GROUP, ALICE, "@mnemo_test_bot hello", entities=MENTION)
        await until(lambda: telegram.messages_to(GROUP["id"]))
        await all_fetched(telegram)

    run_bot(settings, conversation(uow_factory, settings, llm), commands, scenario)

    assert [m["text"] for m in telegram.messages_to(GROUP["id"])] == ["Hi Alice!"]
    assert telegram.messages_to(1002) == [] and len(llm.chat_requests()) == 1
    tried = sorted(str(call.params["chat_id"]) for call in telegram.calls_to("sendMessage"))
    assert tried == sorted(["1002", str(GROUP["id"])])  # the refusal, tried in private only; Alice's answer
    with uow_factory() as uow:
        assert uow.users.identity("telegram", "1002") is None


def test_a_refused_user_still_sees_exports_and_forgets_what_the_bot_holds_but_adds_nothing(
        telegram, settings, commands, uow_factory):
    commands.remember(ALICE_CALLER, "likes green tea")  # said while the bot was open to her

    async def scenario(_app: Application) -> None:
        telegram.push_message(1001, ALICE, "/memories")
        telegram.push_message(1001, ALICE, "/export")
        await until(lambda: len(telegram.messages_to(1001)) == 2)  # the page, and the file
        telegram.push_message(1001, ALICE, "/remember I like coffee too")
        await until(lambda: len(telegram.messages_to(1001)) == 3)
        telegram.push_message(1001, ALICE, "/forget all")
        [question] = await until(lambda: [m for m in telegram.messages_to(1001) if buttons(m)])
        telegram.push_callback(ALICE, question, buttons(question)[0]["callback_data"])
        await until(lambda: telegram.message(1001, question["message_id"]) != question)

    run_bot(settings, conversation(uow_factory, settings), commands, scenario)

    answers = telegram.messages_to(1001)
    [listing] = [m for m in answers[:2] if "text" in m]  # /memories and /export are answered concurrently
    refused, question = answers[2:]
    assert "likes green tea" in listing["text"] and refused["text"] == refusal_text("en", known=True)
    assert "likes green tea" in json.dumps(json.loads(telegram.documents[0]["data"]))
    assert telegram.message(1001, question["message_id"])["text"] == texts.forgotten_text(1, "en")
    assert commands.list_memories(ALICE_CALLER).total == 0


def test_an_operator_blocks_from_chat_and_the_block_holds_at_once(telegram, settings, commands, uow_factory, llm):
    async def scenario(_app: Application) -> None:
        telegram.push_message(1003, OLGA, "/access block user 1001")
        await until(lambda: telegram.messages_to(1003))
        telegram.push_message(GROUP, ALICE, "@mnemo_test_bot hello", entities=MENTION)
        telegram.push_message(1003, OLGA, "/access list")
        await until(lambda: len(telegram.messages_to(1003)) == 2)
        await all_fetched(telegram)

    run_bot(settings, conversation(uow_factory, settings, llm), commands, scenario)

    changed, listing = (m["text"] for m in telegram.messages_to(1003))
    assert changed == "Put user telegram:1001 on the block list."
    assert "• user telegram:1001 · added by telegram:1003" in listing
    assert "• user telegram:1002 · setting ACCESS_BLOCK_USERS" in listing
    assert telegram.messages_to(GROUP["id"]) == [] and llm.chat_requests() == []


def test_access_from_someone_who_is_not_an_operator_changes_nothing(telegram, settings, commands, uow_factory):
    async def scenario(_app: Application) -> None:
        telegram.push_message(GROUP, ALICE, "/access@mnemo_test_bot block user 1003")
        telegram.push_message(1002, BOB, "/access block user 1001")
        await until(lambda: telegram.messages_to(1001) and telegram.messages_to(1002))

    run_bot(settings, conversation(uow_factory, settings), commands, scenario)

    assert [m["text"] for m in telegram.messages_to(1001)] == [texts.ERRORS["access_operators_only"][0]]
    assert [m["text"] for m in telegram.messages_to(1002)] == [refusal_text("zh", known=False)]
    with uow_factory() as uow:
        assert uow.access.entries() == []


def test_an_answer_owed_since_before_a_restart_is_not_given_to_someone_blocked_meanwhile(
        telegram, settings, commands, uow_factory, llm):
    said = IncomingMessage(platform="telegram", chat_id=str(GROUP["id"]), user_id="1002", text="我们去哪儿吃饭？",
                           sent_at=datetime.now(UTC), is_private=False, message_id="4321", locale="zh-hans")
    llm.queue_reply(llm_turn("never delivered"), delay=30)

    async def stopped_mid_turn() -> None:  # recorded while Bob was let in; the bot was killed during the LLM call
        turn = asyncio.create_task(conversation(uow_factory, settings, llm).handle_message(said))
        await until(lambda: llm.chat_requests())
        turn.cancel()

    asyncio.run(stopped_mid_turn())

    async def scenario(app: Application) -> None:
        await until(lambda: app.post_init.answering.done(), what="the owed answers to be looked at")

    run_bot(settings, conversation(uow_factory, settings, llm), commands, scenario)

    assert telegram.calls_to("sendMessage") == [] and len(llm.chat_requests()) == 1
