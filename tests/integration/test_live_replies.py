"""Live replies through the real client libraries: a model writing a few tokens a second (the fake OpenAI server)
is shown as it writes, on Telegram (python-telegram-bot against the fake Bot API: a draft in a private chat, then
the message; in a group a message edited as it grows), on Discord (discord.py against the fake REST API: the first
words, then edits no more often than once a second) and on the console. A model that stops mid-JSON, after words
that turn out unusable, leaves nothing of them: the offline answer takes their place."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import replace
from datetime import timedelta

import pytest
from telegram.ext import Application

from bench.fakes.discord_api import FakeDiscord
from bench.fakes.llm_personalities import PERSONALITIES
from bench.fakes.openai_server import FakeOpenAI
from bench.fakes.telegram_api import FakeTelegram, chat_object, user_object
from bot.console import chat_loop
from bot.live_reply import LIVE_EDIT_SECONDS
from shared.commands.service import MemoryCommands
from shared.conversation.config import ConversationConfig
from shared.conversation.service import ConversationService
from shared.llm.client import ChatModel
from tests.builders import typed
from tests.integration.test_conversation import turn
from tests.integration.test_discord_bot import ALICE as DISCORD_ALICE
from tests.integration.test_discord_bot import CHANNEL, GUILD, Bot
from tests.integration.test_telegram_bot import all_fetched, run_bot
from tests.waiting import until

pytestmark = pytest.mark.committed  # the bots answer on worker threads with units of work of their own

LONG_REPLY = ("That sounds like a wonderful walk by the lake. I remember you said the autumn light there is the "
              "best of the year, and that you like to stop at the little tea house on the far shore. Did you go "
              "all the way round this time, or did the wind turn you back before the bridge?")
TOKENS_PER_SECOND = 30  # four characters a token: the reply takes about two seconds to write
ALICE = user_object(1001, "Alice", username="alice", language_code="en")
GROUP = chat_object(-1001234567890, "Friends")
CONFIG = ConversationConfig(bot_name="Mnemo", personality="a warm friend", emotion_enabled=True, retrieval_limit=5,
                            memory_budget_tokens=700, history_turns=15, idle=timedelta(minutes=30),
                            default_timezone="Asia/Shanghai")
STOPS_MID_JSON = replace(PERSONALITIES["stops-mid-json"], stops_after=len('{"response": "4182735 2'))
"""The model writes the first figures of its reply and stops there: the object never closes."""


def service_with(uow_factory, llm: FakeOpenAI, config: ConversationConfig = CONFIG) -> ConversationService:
    model = ChatModel(base_url=llm.base_url, api_key="k", model="fake-chat", timeout_seconds=20)
    return ConversationService(uow_factory, config, chat_model=model)


def answer(response: str) -> dict:
    """The turn as a grammar-constrained server writes it: the schema's order, the reply first."""
    return {"response": response} | turn(response)


def shortest_gap(times: list[float]) -> float:
    return min(later - earlier for earlier, later in itertools.pairwise(times))


def slow_model(**options) -> FakeOpenAI:
    return FakeOpenAI(models=("fake-chat",), tokens_per_second=TOKENS_PER_SECOND, **options)


# -- Telegram ---------------------------------------------------------------------------------------------------


@pytest.fixture
def telegram():
    with FakeTelegram() as server:
        yield server


@pytest.fixture
def settings(telegram, monkeypatch):
    from pydantic import SecretStr

    from shared.settings import Settings

    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    return Settings(_env_file=None, telegram_token=SecretStr(telegram.token), telegram_api_base_url=telegram.base_url,
                    default_timezone="Asia/Shanghai")


def alice_is_answered_in_private(telegram, settings, uow_factory, llm: FakeOpenAI) -> list[dict]:
    """Alice's one message answered by ``llm`` (writing ``LONG_REPLY``) through the bot; the drafts she saw."""
    llm.queue_reply(answer(LONG_REPLY))

    async def scenario(_app: Application) -> None:
        telegram.push_message(1001, ALICE, "I walked round the lake today")
        await until(lambda: telegram.messages_to(1001), seconds=20)

    run_bot(settings, service_with(uow_factory, llm), MemoryCommands(uow_factory), scenario)
    return [draft for draft in telegram.drafts if draft["chat_id"] == 1001]


def test_a_private_chat_sees_drafts_as_the_model_writes_then_the_whole_reply_as_one_message(
        telegram, settings, uow_factory):
    with slow_model() as llm:
        drafts = alice_is_answered_in_private(telegram, settings, uow_factory, llm)

    [final] = telegram.messages_to(1001)
    assert final["text"] == LONG_REPLY
    assert len(drafts) >= 2 and {draft["draft_id"] for draft in drafts} == {drafts[0]["draft_id"]} != {0}
    assert all(LONG_REPLY.startswith(draft["text"]) for draft in drafts)  # words of the reply only, never JSON
    assert len(drafts[0]["text"]) < len(drafts[-1]["text"]) <= len(LONG_REPLY)
    [sent] = telegram.calls_to("sendMessage")
    assert drafts[-1]["at"] < sent.at
    assert shortest_gap([draft["at"] for draft in drafts]) >= LIVE_EDIT_SECONDS * 0.95  # within the timer's grain


def test_the_message_that_replaces_a_draft_does_not_wait_out_the_drafts_pace(telegram, settings, uow_factory):
    with FakeOpenAI(models=("fake-chat",), tokens_per_second=400) as llm:  # the whole reply within 0.2 s
        drafts = alice_is_answered_in_private(telegram, settings, uow_factory, llm)

    [sent] = telegram.calls_to("sendMessage")
    assert drafts and sent.params["text"] == LONG_REPLY
    assert sent.at - drafts[0]["at"] < LIVE_EDIT_SECONDS / 2  # a draft is no message: nothing to keep a pace with


def test_in_a_group_the_first_words_are_posted_and_edited_into_the_reply(telegram, settings, uow_factory):
    with slow_model() as llm:
        llm.queue_reply(answer(LONG_REPLY))

        async def scenario(_app: Application) -> None:
            mention = telegram.push_message(GROUP, ALICE, "@mnemo_test_bot I walked round the lake today",
                                            entities=[{"type": "mention", "offset": 0, "length": 15}])
            await until(lambda: any(m["text"] == LONG_REPLY for m in telegram.messages_to(GROUP["id"])), seconds=20)
            [answer] = telegram.messages_to(GROUP["id"])
            assert answer["reply_to_message"]["message_id"] == mention["message_id"]

        run_bot(settings, service_with(uow_factory, llm), MemoryCommands(uow_factory), scenario)

    [posted] = telegram.calls_to("sendMessage")
    edits = telegram.calls_to("editMessageText")
    assert telegram.drafts == [] and LONG_REPLY.startswith(posted.params["text"]) and len(edits) >= 2
    assert edits[-1].params["text"] == LONG_REPLY
    times = [posted.at] + [edit.at for edit in edits]
    assert shortest_gap(times) >= LIVE_EDIT_SECONDS * 0.95


def test_a_model_that_stops_mid_json_leaves_the_offline_answer_in_place_of_its_words(telegram, settings, uow_factory):
    with slow_model(personality=STOPS_MID_JSON) as llm:
        llm.set_responder(lambda _request: answer("4182735 2026 is my answer to that"))

        async def scenario(_app: Application) -> None:
            telegram.push_message(1001, ALICE, "I walked round the lake today")
            telegram.push_message(GROUP, ALICE, "@mnemo_test_bot I walked round the lake today",
                                  entities=[{"type": "mention", "offset": 0, "length": 15}])
            await until(lambda: telegram.messages_to(1001) and telegram.calls_to("editMessageText"), seconds=20)
            await all_fetched(telegram)

        run_bot(settings, service_with(uow_factory, llm), MemoryCommands(uow_factory), scenario)

    assert [draft["text"] for draft in telegram.drafts][-1].startswith("4182735")  # shown while written
    [private] = telegram.messages_to(1001)
    [group] = telegram.messages_to(GROUP["id"])  # the message shown in part, edited: no second message
    for final in (private, group):
        assert "4182735" not in final["text"] and "offline mode" in final["text"]  # the italic note says so
    [posted] = [call for call in telegram.calls_to("sendMessage") if str(call.params["chat_id"]) == str(GROUP["id"])]
    assert posted.params["text"].startswith("4182735")  # the group's first words, then edited


def test_with_stream_replies_off_the_reply_goes_whole(telegram, settings, uow_factory):
    with slow_model() as llm:
        llm.queue_reply(answer(LONG_REPLY))

        async def scenario(_app: Application) -> None:
            telegram.push_message(1001, ALICE, "I walked round the lake today")
            await until(lambda: telegram.messages_to(1001), seconds=20)

        run_bot(settings, service_with(uow_factory, llm, replace(CONFIG, stream_replies=False)),
                MemoryCommands(uow_factory), scenario)

    assert telegram.drafts == [] and [m["text"] for m in telegram.messages_to(1001)] == [LONG_REPLY]


def alice_is_answered_twice_in_private(telegram, settings, uow_factory) -> None:
    """Two messages of Alice's, each answered in full by a slow model writing ``LONG_REPLY``."""
    with slow_model() as llm:
        llm.set_responder(lambda _request: answer(LONG_REPLY))

        async def scenario(_app: Application) -> None:
            telegram.push_message(1001, ALICE, "I walked round the lake today")
            await until(lambda: telegram.messages_to(1001), seconds=20)
            telegram.push_message(1001, ALICE, "and then I had tea")
            await until(lambda: len(telegram.messages_to(1001)) == 2 and
                        telegram.messages_to(1001)[-1]["text"] == LONG_REPLY, seconds=20)

        run_bot(settings, service_with(uow_factory, llm), MemoryCommands(uow_factory), scenario)


def test_a_bot_whose_drafts_telegram_refuses_edits_a_message_from_the_next_reply_on(telegram, settings, uow_factory):
    refusals: list[dict] = []

    def refuse(params: dict) -> bool:
        from bench.fakes.telegram_api import TelegramApiError

        refusals.append(params)
        raise TelegramApiError(400, "Bad Request: method is available only for bots with forum topic mode enabled")

    telegram.methods["sendMessageDraft"] = refuse
    alice_is_answered_twice_in_private(telegram, settings, uow_factory)

    assert len(refusals) == 1  # the first reply went whole after the refusal
    assert [m["text"] for m in telegram.messages_to(1001)] == [LONG_REPLY, LONG_REPLY]
    assert telegram.calls_to("editMessageText")  # the second was shown as it grew, in a message


def test_a_draft_that_meets_flood_control_is_not_sent_again_and_the_next_reply_is_a_draft_again(
        telegram, settings, uow_factory):
    telegram.fail_next(429, retry_after=5, method="sendMessageDraft")
    alice_is_answered_twice_in_private(telegram, settings, uow_factory)

    [first_sent, second_sent] = telegram.calls_to("sendMessage")
    assert [m["text"] for m in telegram.messages_to(1001)] == [LONG_REPLY, LONG_REPLY]
    assert not [draft for draft in telegram.drafts if draft["at"] < first_sent.at]  # refused, and shown no more
    assert len([call for call in telegram.calls_to("sendMessageDraft") if call.at < first_sent.at]) == 1
    assert [draft for draft in telegram.drafts if draft["at"] > first_sent.at]  # drafts again for the next
    assert telegram.calls_to("editMessageText") == []


# -- Discord ----------------------------------------------------------------------------------------------------


def discord_reply(uow_factory, llm: FakeOpenAI, guild: str | None) -> FakeDiscord:
    with FakeDiscord() as fake:
        async def main() -> None:
            async with Bot(fake, service_with(uow_factory, llm), MemoryCommands(uow_factory)) as bot:
                mention = f"<@{fake.bot_user['id']}> " if guild else ""
                payload = fake.incoming_message(f"{mention}I walked round the lake today", user_id=DISCORD_ALICE,
                                                channel_id=CHANNEL if guild else None, guild_id=guild,
                                                mentions=(dict(fake.bot_user),) if guild else ())
                await bot.receive(payload)

        asyncio.run(main())
        return fake


def test_on_discord_the_first_words_are_posted_and_edited_at_most_once_a_second(uow_factory):
    with slow_model() as llm:
        llm.queue_reply(answer(LONG_REPLY))
        fake = discord_reply(uow_factory, llm, GUILD)
    [message] = fake.messages_in(CHANNEL)
    edits = fake.edits
    assert message["content"] == LONG_REPLY and message["type"] == 19  # a reply to the user's message
    assert len(edits) >= 2 and edits[-1]["content"] == LONG_REPLY
    assert all(LONG_REPLY.startswith(edit["content"]) for edit in edits)
    posted = next(r.at for r in fake.requests if r.method == "POST" and r.path.endswith(f"{CHANNEL}/messages"))
    times = [posted] + [edit["at"] for edit in edits]
    assert shortest_gap(times) >= LIVE_EDIT_SECONDS * 0.95


def test_on_discord_a_model_that_stops_mid_json_leaves_one_message_with_the_offline_answer(uow_factory):
    with slow_model(personality=STOPS_MID_JSON) as llm:
        llm.set_responder(lambda _request: answer("4182735 2026 is my answer to that"))
        fake = discord_reply(uow_factory, llm, None)
    [message] = fake.messages  # the one message shown in part, edited into the offline answer
    [posted] = [r for r in fake.requests if r.method == "POST" and r.path.endswith("/messages")]
    assert posted.json["content"].startswith("4182735") and fake.edits[-1]["content"] == message["content"]
    assert "4182735" not in message["content"] and "offline" in message["content"].lower()


# -- the console --------------------------------------------------------------------------------------------------


def console_transcript(uow_factory, llm: FakeOpenAI, lines: list[str]) -> tuple[str, list[str]]:
    """What a terminal would show, and each streamed write."""
    read_line, shown, streamed = typed(lines), [], []

    def stream(text: str) -> None:
        streamed.append(text)
        shown.append(text)

    asyncio.run(chat_loop(service_with(uow_factory, llm), user_id="lin", bot_name="Mnemo", read_line=read_line,
                          write=lambda line: shown.append(line + "\n"), stream=stream))
    return "".join(shown), streamed


def test_the_console_prints_the_reply_as_it_is_written(uow_factory):
    with slow_model() as llm:
        llm.queue_reply(answer(LONG_REPLY))
        shown, streamed = console_transcript(uow_factory, llm, ["I walked round the lake today"])
    assert f"\nMnemo> {LONG_REPLY}\nBye.\n" in shown
    assert streamed[0].startswith("Mnemo> ") and len(streamed) >= 4  # first words, then more as they came


def test_the_console_prints_the_offline_answer_after_words_that_turned_out_unusable(uow_factory):
    with slow_model(personality=STOPS_MID_JSON) as llm:
        llm.set_responder(lambda _request: answer("4182735 2026 is my answer to that"))
        shown, streamed = console_transcript(uow_factory, llm, ["I walked round the lake today"])
    assert streamed[0].startswith("Mnemo> 4182735")
    [final] = [line for line in shown.splitlines() if line.startswith("Mnemo (offline)> ")]
    assert "4182735" not in final and "The model's answer was unusable (only a number)" in shown
