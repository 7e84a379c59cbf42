"""The Discord front-end through the real discord.py: gateway payloads in, REST calls out.

The gateway cannot run here, so the fake Discord (``bench/fakes/discord_api.py``) makes the payloads
Discord would send (INTERACTION_CREATE, MESSAGE_CREATE). They go through discord.py's own parsing
(``ConnectionState.parse_*``) to the command tree, the buttons and ``on_message``; every answer the
bot gives is a real HTTP request to the fake on loopback, checked there. The services behind it run
on real PostgreSQL.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from datetime import UTC, datetime, timedelta

import discord
import pytest
from prometheus_client import REGISTRY
from pydantic import SecretStr
from sqlalchemy import select

from bench.fakes.discord_api import EPHEMERAL, FakeDiscord
from bench.fakes.openai_server import FakeOpenAI
from bot.discord_bot import MnemoBot, chat_intents, run_discord, sync_commands, use_api
from bot.discord_render import jump_url, plain_text, reply_messages, slash_spelling, split_message, warning_line
from shared.accounts.user_data import MAX_IMPORT_BYTES
from shared.commands import texts
from shared.commands.service import Caller, MemoryCommands, ReminderChange
from shared.conversation.config import ConversationConfig
from shared.conversation.messages import IncomingMessage, Reply
from shared.conversation.service import ConversationService
from shared.conversation.warning_texts import OFFLINE_WARNING, TurnWarning, WarningCode
from shared.db.engine import make_engine, session_factory
from shared.db.memory_models import Memory, Todo
from shared.db.models import Chat, ConversationTurn
from shared.emotion import PLAIN_STRATEGY, UNKNOWN
from shared.errors import ConfirmationInvalid, InvalidCommand, NotFound
from shared.llm.client import ChatModel
from shared.repositories.uow import UnitOfWork
from shared.settings import Settings
from tests.fakes.database_outage import DatabaseOutage
from tests.waiting import until

ALICE, BOB = "300000000000000001", "300000000000000002"
GUILD, CHANNEL = "600000000000000001", "700000000000000001"
EN, ZH = "en-US", "zh-CN"
DEFERRED, MESSAGE, DEFERRED_UPDATE = 5, 4, 6
WORK_TASKS = ("CommandTree-invoker", "discord-ui-view-dispatch", "discord-ui-dynamic-item", "discord.py: on_")
CONFIG = ConversationConfig(bot_name="Mnemo", personality="a warm friend", emotion_enabled=True, retrieval_limit=5,
                            memory_budget_tokens=700, history_turns=15, idle=timedelta(minutes=30),
                            default_timezone="Asia/Shanghai")


def alice(locale: str = EN) -> Caller:
    return Caller(platform="discord", platform_user_id=ALICE, locale=locale)


class Bot:
    """A logged-in :class:`MnemoBot` fed with the fake's gateway payloads, as the gateway would."""

    def __init__(self, fake: FakeDiscord, conversation: ConversationService, memory: MemoryCommands) -> None:
        self.fake = fake
        use_api(fake.base_url)
        self.client = MnemoBot(conversation, memory)

    async def __aenter__(self) -> Bot:
        await self.client.login(self.fake.token)
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.client.close()

    async def command(self, name: str, options: dict | None = None, *, user: str = ALICE, guild: str | None = None,
                      locale: str = EN, settle: bool = True) -> None:
        """Run ``/name`` as ``user``, and wait for its handlers unless ``settle`` is False."""
        payload = self.fake.slash_command(name, options, user_id=user, guild_id=guild,
                                          channel_id=CHANNEL if guild else None, locale=locale)
        self.client._connection.parse_interaction_create(payload)
        if settle:
            await self.settle()

    async def press(self, message_id: str, custom_id: str, *, user: str = ALICE, locale: str = EN) -> None:
        payload = self.fake.button_press(self.fake.bot_message(message_id), custom_id, user_id=user, locale=locale)
        self.client._connection.parse_interaction_create(payload)
        await self.settle()

    async def receive(self, message: dict) -> None:
        self.client._connection.parse_message_create(message)
        await self.settle()

    async def settle(self) -> None:
        await settle()


@pytest.fixture
def fake_discord():
    with FakeDiscord() as server:
        yield server


@pytest.fixture
def memory(uow_factory):
    return MemoryCommands(uow_factory, default_timezone="Asia/Shanghai")


@pytest.fixture
def conversation(uow_factory):
    return ConversationService(uow_factory, CONFIG, chat_model=None)


@pytest.fixture
def run(fake_discord, conversation, memory):
    """``run(scenario)``: ``await scenario(bot)`` with a logged-in bot, in a fresh event loop."""
    def runner(scenario, *, service=None, chat=None):
        async def main():
            async with Bot(fake_discord, chat or conversation, service or memory) as bot:
                return await scenario(bot)
        return asyncio.run(main())
    return runner


def only_followup(fake: FakeDiscord) -> dict:
    [followup] = fake.followups
    return followup


def buttons(message: dict) -> list[dict]:
    return [button for row in message["components"] for button in row["components"]]


# -- commands: ephemeral, deferred, in the user's language -------------------------------------------------------

def test_help_answers_at_once_ephemerally_in_the_users_language(run, fake_discord):
    run(lambda bot: bot.command("help", locale=ZH))

    [response] = fake_discord.interaction_responses
    assert response["type"] == MESSAGE and response["flags"] == EPHEMERAL
    assert response["content"] == slash_spelling(texts.help_text(ZH))[:2000] and fake_discord.followups == []


def test_remember_defers_ephemerally_then_follows_up_with_what_was_stored(run, fake_discord, memory):
    run(lambda bot: bot.command("remember", {"text": "I drink green tea every morning"}, guild=GUILD))

    [response] = fake_discord.interaction_responses
    assert response["type"] == DEFERRED and response["flags"] == EPHEMERAL
    followup = only_followup(fake_discord)
    assert followup["flags"] & EPHEMERAL and followup["at"] > response["at"]
    [item] = memory.list_memories(alice()).items
    assert item.content == "I drink green tea every morning"
    assert followup["content"] == texts.remembered_text(item, EN)


def test_a_slow_command_is_deferred_while_the_work_is_still_running_and_answered_when_done(
        run, fake_discord, uow_factory):
    database_answers = threading.Event()

    class SlowMemoryCommands(MemoryCommands):
        def list_reminders(self, caller):
            database_answers.wait(30)  # a slow database: Discord must hear from the bot before it answers
            return super().list_reminders(caller)

    async def scenario(bot: Bot) -> None:
        await bot.command("reminders", settle=False)
        await until(lambda: fake_discord.interaction_responses, what="the deferral while the database is busy")
        assert fake_discord.followups == []
        database_answers.set()
        await bot.settle()

    try:
        run(scenario, service=SlowMemoryCommands(uow_factory))
    finally:
        database_answers.set()

    [response] = fake_discord.interaction_responses
    followup = only_followup(fake_discord)
    assert response["type"] == DEFERRED and response["flags"] == EPHEMERAL
    assert followup["content"] == texts.reminders_text((), EN)


def test_memories_pages_with_buttons_that_only_the_owner_can_turn(run, fake_discord, memory):
    for number in range(23):
        memory.remember(alice(), f"fact number {number}")

    async def scenario(bot: Bot):
        await bot.command("memories")
        first = fake_discord.followups[-1]
        previous, following = buttons(first)
        assert (previous["disabled"], following.get("disabled", False)) == (True, False)
        await bot.press(first["message_id"], following["custom_id"])
        await bot.press(first["message_id"], following["custom_id"], user=BOB)

    run(scenario)

    first, turned = fake_discord.followups
    assert first["content"] == texts.memory_page_text(memory.list_memories(alice(), page=1), EN)
    assert turned["method"] == "PATCH" and turned["message_id"] == first["message_id"]
    assert turned["content"] == texts.memory_page_text(memory.list_memories(alice(), page=2), EN)
    pressed, refused = fake_discord.interaction_responses[1:]
    assert pressed["type"] == DEFERRED_UPDATE
    assert refused["type"] == MESSAGE and refused["flags"] == EPHEMERAL


def test_forget_all_asks_first_and_only_the_requester_can_confirm_even_after_a_restart(
        fake_discord, conversation, memory):
    for text in ("likes cats", "lives in Hangzhou", "plays the piano"):
        memory.remember(alice(), text)

    async def ask():
        async with Bot(fake_discord, conversation, memory) as bot:
            await bot.command("forget", {"target": "all"}, guild=GUILD)

    async def answer_in_a_new_process(custom_id: str, message_id: str):
        async with Bot(fake_discord, conversation, memory) as bot:  # the buttons outlive the process
            await bot.press(message_id, custom_id, user=BOB)
            assert memory.list_memories(alice()).total == 3
            await bot.press(message_id, custom_id)

    asyncio.run(ask())
    question = only_followup(fake_discord)
    yes, no = buttons(question)
    assert yes["custom_id"].startswith(f"mnemo:forget:yes:{ALICE}:") and no["custom_id"].startswith("mnemo:forget:no:")
    assert question["flags"] & EPHEMERAL and (yes["label"], no["label"]) == texts.confirm_button_labels(EN)
    asyncio.run(answer_in_a_new_process(yes["custom_id"], question["message_id"]))

    refusal, confirmed = fake_discord.interaction_responses[1:]
    assert refusal["type"] == MESSAGE and refusal["flags"] == EPHEMERAL
    assert confirmed["type"] == DEFERRED_UPDATE
    edited = fake_discord.followups[-1]
    assert edited["method"] == "PATCH" and edited["content"] == texts.forgotten_text(3, EN)
    assert edited["components"] == [] and memory.list_memories(alice()).total == 0


def test_forget_no_cancels_and_nothing_is_deleted(run, fake_discord, memory):
    memory.remember(alice(), "likes cats")

    async def scenario(bot: Bot):
        await bot.command("forget", {"target": "cats"})
        question = fake_discord.followups[-1]
        await bot.press(question["message_id"], buttons(question)[1]["custom_id"])

    run(scenario)

    assert memory.list_memories(alice()).total == 1
    assert [r["type"] for r in fake_discord.interaction_responses] == [DEFERRED, DEFERRED_UPDATE]  # handled once
    assert fake_discord.followups[-1]["content"] == texts.cancelled_text(EN)
    assert fake_discord.followups[-1]["components"] == []


def test_export_sends_the_users_data_as_a_json_attachment(run, fake_discord, memory):
    memory.remember(alice(), "allergic to peanuts")

    run(lambda bot: bot.command("export"))

    [(filename, data)] = only_followup(fake_discord)["files"].items()
    assert filename.endswith(".json") and "allergic to peanuts" in json.dumps(json.loads(data), ensure_ascii=False)


def test_import_reads_the_attached_file_and_reports_what_it_loaded(run, fake_discord, memory):
    memory.remember(alice(), "allergic to peanuts")
    exported = memory.export_data(alice())
    attachment = fake_discord.add_attachment(exported.filename, exported.data)

    run(lambda bot: bot.command("import", {"file": attachment}, user=BOB))

    bob = Caller(platform="discord", platform_user_id=BOB)
    assert [item.content for item in memory.list_memories(bob).items] == ["allergic to peanuts"]
    assert only_followup(fake_discord)["content"].strip()


def test_an_oversized_import_is_refused_before_it_is_downloaded(run, fake_discord, memory):
    attachment = fake_discord.add_attachment("big.json", b"{}")
    attachment["size"] = 50 * 1024 * 1024

    run(lambda bot: bot.command("import", {"file": attachment}))

    assert not any("/cdn/" in request.path for request in fake_discord.requests)
    refusal = only_followup(fake_discord)
    assert refusal["flags"] & EPHEMERAL
    assert refusal["content"] == texts.error_text(InvalidCommand("import_too_large", limit_mb=MAX_IMPORT_BYTES
                                                                 // (1024 * 1024)), EN)
    assert memory.list_memories(alice()).total == 0


def test_domain_errors_and_hostile_arguments_get_the_users_words_and_change_nothing(run, fake_discord, memory):
    memory.remember(Caller(platform="discord", platform_user_id=BOB), "Bob's secret")
    bobs = memory.list_memories(Caller(platform="discord", platform_user_id=BOB)).items[0].id

    async def scenario(bot: Bot):
        await bot.command("memories_why", {"memory_id": bobs}, locale=ZH)
        await bot.command("forget", {"target": str(bobs)})
        await bot.command("remember", {"text": "   "})
        await bot.command("remember", {"text": "x" * 6000})
        await bot.command("remember", {"text": "bell\x07"})
        await bot.command("remind", {"when": "yesterday", "what": "\u202e"})

    run(scenario)

    contents = [followup["content"] for followup in fake_discord.followups]
    assert contents == [texts.error_text(NotFound("memory_not_found"), ZH),
                            texts.error_text(NotFound("memory_not_found"), EN),
                            texts.error_text(InvalidCommand("remember_empty"), EN),
                            texts.error_text(InvalidCommand("too_long", limit=500), EN),
                            texts.error_text(InvalidCommand("control_characters"), EN),
                            texts.error_text(InvalidCommand("reminder_past", when="yesterday", what="…"), EN)]
    assert all(followup["flags"] & EPHEMERAL for followup in fake_discord.followups)
    assert memory.list_memories(alice()).total == 0 and memory.list_reminders(alice()) == ()
    assert memory.list_memories(Caller(platform="discord", platform_user_id=BOB)).total == 1


def test_why_on_a_replaced_memory_shows_it_and_the_versions_that_replaced_it_to_its_owner_only(
        run, fake_discord, memory, uow_factory):
    document = {"format": "mnemo-export", "version": 1, "memories": [
        {"id": 21, "type": "fact", "content": "works at a bakery", "superseded_by": 22},
        {"id": 22, "type": "fact", "content": "works at a florist", "superseded_by": 23},
        {"id": 23, "type": "fact", "content": "works at a library"}]}
    memory.import_data(alice(), json.dumps(document).encode())
    with uow_factory() as uow:
        ids = {m.content: m.id for m in uow.session.scalars(select(Memory))}
    bakery = ids["works at a bakery"]

    async def scenario(bot: Bot):
        await bot.command("memories_why", {"memory_id": bakery})
        await bot.command("memories_why", {"memory_id": bakery}, user=BOB)

    run(scenario)

    mine, theirs = fake_discord.followups
    assert mine["flags"] & EPHEMERAL and theirs["flags"] & EPHEMERAL
    assert mine["content"].splitlines() == [
        f"#{bakery} · fact · works at a bakery", "You added this yourself (/remember or an import).",
        f"Replaced by #{ids['works at a florist']}: “works at a florist”",
        f"In use now: #{ids['works at a library']}: “works at a library”"]
    assert theirs["content"] == texts.error_text(NotFound("memory_not_found"), EN)


def test_remind_in_a_server_sets_a_reminder_that_pings_by_direct_message(run, fake_discord, memory, uow_factory):
    run(lambda bot: bot.command("remind", {"when": "in 2 hours", "what": "stretch"}, guild=GUILD))

    [reminder] = memory.list_reminders(alice())
    assert reminder.content == "stretch"
    assert only_followup(fake_discord)["content"] == texts.reminder_change_text(
        ReminderChange("add", reminder, default_zone="Asia/Shanghai"), EN)  # the first: which zone it used
    with uow_factory() as uow:
        todo = uow.session.scalars(select(Todo)).one()
        assert uow.session.get(Chat, todo.chat_id).kind == "private"


def test_timezone_shows_and_sets_the_zone_a_direct_message_can_set_it_too_and_reminders_follow(
        run, fake_discord, memory, uow_factory):
    async def scenario(bot: Bot):
        await bot.command("timezone", guild=GUILD)
        await bot.command("remind", {"when": "tomorrow 6:30am", "what": "feed the cat"}, locale=ZH)
        await bot.receive(fake_discord.incoming_message("I'm in Lisbon, by the way", user_id=ALICE))
        await bot.command("timezone", {"zone": "Atlantis"})
        await bot.command("timezone", {"zone": "GMT+9:30"}, locale=ZH)

    run(scenario)

    shown, reminded, unknown, offset = (answer["content"] for answer in fake_discord.followups)
    assert all(answer["flags"] & EPHEMERAL for answer in fake_discord.followups)
    assert shown.startswith("You haven't set a time zone, so I use Asia/Shanghai (UTC+08:00)")
    assert "06:30（Asia/Shanghai）" in reminded and "/timezone 城市名" in reminded
    [said] = fake_discord.messages_in(fake_discord.dm_channel(ALICE))
    assert "Time zone set to Europe/Lisbon" in said["content"] and "keeps its clock time" in said["content"]
    assert unknown == texts.error_text(InvalidCommand("zone_unknown", what="Atlantis"), EN)
    assert offset.startswith("时区已设为 UTC+09:30。1 个待提醒事项保持原来的钟点")
    [reminder] = memory.list_reminders(alice())
    assert (f"{reminder.due_at:%H:%M}", reminder.timezone) == ("06:30", "UTC+09:30")


def test_a_message_discord_stamped_minutes_ago_counts_its_reminder_from_then(run, fake_discord, uow_factory):
    sent = datetime.now(UTC) - timedelta(minutes=4)
    message = fake_discord.incoming_message("10分钟后提醒我收衣服", user_id=ALICE)
    message["id"] = str(discord.utils.time_snowflake(sent))  # Discord's message id carries when it was sent

    run(lambda bot: bot.receive(message))

    with uow_factory() as uow:
        [todo] = uow.session.scalars(select(Todo)).all()
    assert todo.content == "收衣服" and abs(todo.due_at - (sent + timedelta(minutes=10))) < timedelta(seconds=1)


def test_link_gives_a_code_and_link_unlink_is_unlink(run, fake_discord):
    async def scenario(bot: Bot):
        await bot.command("link")
        await bot.command("link", {"code": "unlink"})
        await bot.command("link", {"code": "confirm W3XR-8TQA"})

    run(scenario)

    code, unlinked, confirmed = fake_discord.followups
    assert code["flags"] & EPHEMERAL and code["content"].strip()
    assert unlinked["content"] == texts.error_text(InvalidCommand("unlink_only_identity"), EN)
    assert confirmed["content"] == texts.error_text(ConfirmationInvalid("link_code_invalid"), EN)


def test_panel_gives_a_sign_in_link_only_the_asker_sees(run, fake_discord):
    run(lambda bot: bot.command("panel", guild=GUILD))

    [answer] = fake_discord.followups
    assert answer["flags"] & EPHEMERAL and "/panel/sign-in?token=" in answer["content"]


def test_an_unexpected_failure_is_logged_with_its_traceback_and_the_user_told(run, fake_discord, uow_factory,
                                                                              caplog):
    class BrokenMemoryCommands(MemoryCommands):
        def pause(self, caller):
            raise RuntimeError("database on fire")

    with caplog.at_level(logging.ERROR, logger="bot.discord_commands"):
        run(lambda bot: bot.command("pause"), service=BrokenMemoryCommands(uow_factory))

    assert any(record.exc_info and "database on fire" in str(record.exc_info[1]) for record in caplog.records)
    followup = only_followup(fake_discord)
    assert followup["flags"] & EPHEMERAL and "database on fire" not in followup["content"]
    assert followup["content"] == texts.error_text(RuntimeError("database on fire"), EN)


# -- chat ------------------------------------------------------------------------------------------------------

def test_a_direct_message_is_answered_in_the_dm_with_typing_and_the_offline_label(run, fake_discord):
    run(lambda bot: bot.receive(fake_discord.incoming_message("hi, I love green tea", user_id=ALICE)))

    dm = fake_discord.dm_channel(ALICE)
    [answer] = fake_discord.messages_in(dm)
    assert fake_discord.typing == [dm]
    assert answer["content"].splitlines()[-1].startswith("*⚠ offline mode")
    assert "message_reference" not in answer


def test_the_warnings_under_a_chinese_reply_are_in_chinese_and_under_an_english_one_in_english(
        run, fake_discord, memory):
    memory.pause(alice())

    async def scenario(bot: Bot) -> None:
        await bot.receive(fake_discord.incoming_message("我搬到苏州了，我住在苏州", user_id=ALICE))
        await bot.receive(fake_discord.incoming_message("I live in Leeds now", user_id=ALICE))

    run(scenario)
    chinese, english = fake_discord.messages_in(fake_discord.dm_channel(ALICE))
    assert chinese["content"].splitlines()[-1] == "*⚠ 离线模式 · 记忆已暂停，没有记下新内容*"
    assert english["content"].splitlines()[-1] == "*⚠ offline mode · Remembering is paused; nothing new was stored*"


def test_a_rate_limit_discord_py_waits_out_by_itself_is_still_counted(run, fake_discord):
    counted = REGISTRY.get_sample_value
    labels = {"platform": "discord", "reason": "rate_limited"}
    before = counted("mnemo_platform_api_errors_total", labels) or 0.0
    fake_discord.fail_next(429, retry_after=0, path_contains="/messages")
    run(lambda bot: bot.receive(fake_discord.incoming_message("hi, I love green tea", user_id=ALICE)))

    assert len(fake_discord.messages_in(fake_discord.dm_channel(ALICE))) == 1  # sent on the second try
    assert counted("mnemo_platform_api_errors_total", labels) == before + 1


def test_a_mention_in_a_server_is_answered_as_a_reply_without_the_mention(run, fake_discord, uow_factory):
    me = fake_discord.bot_user
    said = fake_discord.incoming_message(f"<@{me['id']}> remember that I like jazz", user_id=ALICE,
                                         guild_id=GUILD, channel_id=CHANNEL, mentions=(me,))

    run(lambda bot: bot.receive(said))

    [answer] = fake_discord.messages_in(CHANNEL)
    assert str(answer["message_reference"]["message_id"]) == said["id"]
    assert answer["allowed_mentions"] == {"parse": [], "replied_user": True}
    with uow_factory() as uow:
        first = uow.session.scalars(select(ConversationTurn).order_by(ConversationTurn.id)).first()
        assert first.text == "remember that I like jazz" and first.platform_message_id == said["id"]


def test_a_chat_message_that_fails_is_logged_with_its_traceback_and_the_user_told(run, fake_discord, uow_factory,
                                                                                 caplog):
    class BrokenConversation(ConversationService):
        async def handle_message(self, message, **_options):
            raise RuntimeError("prompt on fire")

    broken = BrokenConversation(uow_factory, CONFIG, chat_model=None)
    with caplog.at_level(logging.ERROR, logger="bot.discord_bot"):
        run(lambda bot: bot.receive(fake_discord.incoming_message("我今天好累", user_id=ALICE)), chat=broken)

    assert any(record.exc_info and "prompt on fire" in str(record.exc_info[1]) for record in caplog.records)
    [answer] = fake_discord.messages_in(fake_discord.dm_channel(ALICE))
    assert answer["content"] == texts.error_text(RuntimeError("prompt on fire"), "zh")
    assert "prompt on fire" not in answer["content"]


def test_a_message_recorded_but_unanswered_when_the_bot_stopped_is_answered_as_a_reply_when_ready(
        run, fake_discord, uow_factory):
    said = fake_discord.incoming_message("qual é o melhor pastel de nata?", user_id=ALICE, guild_id=GUILD,
                                         channel_id=CHANNEL)
    incoming = IncomingMessage(platform="discord", chat_id=CHANNEL, user_id=ALICE, text=said["content"],
                               sent_at=datetime.now(UTC), is_private=False, message_id=said["id"])
    with FakeOpenAI(models=("fake-chat",)) as llm:
        llm.queue_reply({"response": "never delivered"}, delay=30)
        model = ChatModel(base_url=llm.base_url, api_key="test", model="fake-chat", timeout_seconds=30)

        async def stopped_mid_turn() -> None:  # what kill -9 during the LLM call leaves: the turn, no reply
            turn = asyncio.create_task(ConversationService(uow_factory, CONFIG, chat_model=model)
                                       .handle_message(incoming))
            await until(lambda: llm.chat_requests())
            turn.cancel()

        asyncio.run(stopped_mid_turn())

    async def ready(bot: Bot) -> None:
        bot.client.dispatch("ready")
        await until(lambda: bot.client.answering is not None)
        await bot.client.answering

    run(ready)
    run(ready)  # answered once: the next start owes nothing

    [answer] = fake_discord.messages_in(CHANNEL)
    assert str(answer["message_reference"]["message_id"]) == said["id"]
    assert answer["allowed_mentions"] == {"parse": [], "replied_user": True}


@pytest.mark.committed
def test_a_message_sent_while_the_database_is_away_is_kept_and_answered_when_it_is_back(
        fake_discord, memory, uow_factory, migrated_url):
    with DatabaseOutage(migrated_url) as outage:
        engine = make_engine(outage.url, pool_size=2, max_overflow=2)
        relayed = session_factory(engine)
        service = ConversationService(lambda: UnitOfWork(relayed), CONFIG, chat_model=None)
        dm = fake_discord.dm_channel(ALICE)

        async def scenario() -> None:
            async with Bot(fake_discord, service, memory) as bot:
                outage.down()
                answered = asyncio.create_task(bot.receive(fake_discord.incoming_message("我搬到成都了",
                                                                                         user_id=ALICE)))
                await until(lambda: fake_discord.messages_in(dm), what="the user to be told the message is kept")
                outage.up()
                await answered

        try:
            asyncio.run(scenario())
        finally:
            engine.dispose()

    kept, answer = fake_discord.messages_in(dm)
    assert kept["content"] == texts.waiting_for_database_text("zh")
    assert answer["content"] and answer["content"] != kept["content"]
    with uow_factory() as uow:
        assert [turn.role for turn in uow.session.scalars(select(ConversationTurn).order_by(ConversationTurn.id))] == [
            "user", "assistant"]


def test_server_messages_not_addressed_to_the_bot_and_other_bots_are_ignored(run, fake_discord):
    me = fake_discord.bot_user
    earlier = {**fake_discord.incoming_message("an earlier answer", user_id=me["id"], guild_id=GUILD,
                                               channel_id=CHANNEL, bot=True)}

    async def scenario(bot: Bot):
        logged_in = len(fake_discord.requests)
        await bot.receive(fake_discord.incoming_message("just chatting", user_id=ALICE, guild_id=GUILD,
                                                        channel_id=CHANNEL))
        await bot.receive(fake_discord.incoming_message(f"<@{me['id']}> hello", user_id=BOB, guild_id=GUILD,
                                                        channel_id=CHANNEL, mentions=(me,), bot=True))
        assert fake_discord.requests[logged_in:] == []
        await bot.receive(fake_discord.incoming_message("and what about tea?", user_id=ALICE, guild_id=GUILD,
                                                        channel_id=CHANNEL, reply_to=earlier))

    run(scenario)

    assert len(fake_discord.messages_in(CHANNEL)) == 1


def test_a_repeated_message_is_answered_once(run, fake_discord):
    said = fake_discord.incoming_message("hello there", user_id=ALICE)

    async def scenario(bot: Bot):
        await bot.receive(said)
        await bot.receive(said)

    run(scenario)

    assert len(fake_discord.messages_in(fake_discord.dm_channel(ALICE))) == 1


def test_a_long_reply_is_split_at_2000_characters_on_line_breaks(fake_discord, uow_factory, memory):
    paragraphs = [f"Paragraph {n}: " + "tea " * 120 + "end." for n in range(7)]  # 3,480 characters
    with FakeOpenAI(models=("fake-chat",)) as llm:
        llm.queue_reply({"emotion": {"primary": "neutral", "category": "neutral", "confidence": 0.9,
                                     "indicators": []}, "response": "\n".join(paragraphs),
                         "memory_update": {"should_store": False, "entries": []}, "todos": [], "topic": None,
                         "context_variables": []})
        chat = ConversationService(uow_factory, CONFIG, chat_model=ChatModel(
            base_url=llm.base_url, api_key="test", model="fake-chat", timeout_seconds=10))

        async def scenario():
            async with Bot(fake_discord, chat, memory) as bot:
                await bot.receive(fake_discord.incoming_message("tell me about tea", user_id=ALICE))

        asyncio.run(scenario())

    pieces = [message["content"] for message in fake_discord.messages_in(fake_discord.dm_channel(ALICE))]
    assert len(pieces) > 1 and all(len(piece) <= 2000 for piece in pieces)
    assert "\n".join(pieces) == "\n".join(paragraphs)
    assert all(piece.startswith("Paragraph") for piece in pieces)


# -- commands are synced once, by a CLI flag ---------------------------------------------------------------------

def test_commands_are_synced_to_a_development_guild_with_chinese_localizations(fake_discord):
    settings = Settings(_env_file=None, discord_token=SecretStr(fake_discord.token),
                        discord_api_base_url=fake_discord.base_url)

    names = asyncio.run(sync_commands(settings, guild_id=int(GUILD)))

    [sync] = fake_discord.command_syncs
    assert sync["guild_id"] == GUILD and sorted(names) == sorted(c["name"] for c in sync["commands"])
    assert {"memories", "memories_why", "memories_forgotten", "memories_restore", "forget", "remember", "reminders",
            "remind", "cancel", "done", "snooze", "export", "import", "pause", "resume", "link", "unlink", "panel",
            "usage", "timezone", "followups", "help", "access"} == set(names)
    memories = next(c for c in sync["commands"] if c["name"] == "memories")
    assert memories["description_localizations"]["zh-CN"]
    kind = next(option for option in memories["options"] if option["name"] == "type")
    assert {choice["name_localizations"]["zh-CN"] for choice in kind["choices"]} >= {"偏好", "事实"}


def test_mnemo_discord_sync_publishes_globally_once_and_exits(fake_discord, capsys):
    settings = Settings(_env_file=None, discord_token=SecretStr(fake_discord.token),
                        discord_api_base_url=fake_discord.base_url)

    assert run_discord(settings, sync=True) == 0

    assert [sync["guild_id"] for sync in fake_discord.command_syncs] == [None]
    assert [request.path for request in fake_discord.requests] == [
        "/users/@me", "/oauth2/applications/@me", f"/applications/{fake_discord.application['id']}/commands"]
    assert "Synced 23 commands" in capsys.readouterr().out


# -- rendering rules --------------------------------------------------------------------------------------------

def test_split_prefers_paragraphs_then_sentences_and_never_exceeds_the_limit():
    text = "First sentence. " * 100 + "\n\n" + "第二段。" * 400 + "x" * 4500
    pieces = split_message(text)
    assert [len(piece) for piece in pieces] == [1599, 1600, 2000, 2000, 500]
    assert pieces[0].endswith("sentence.") and pieces[1].startswith("第二段") and pieces[1].endswith("。")
    assert "".join(pieces).replace(" ", "").replace("\n", "") == text.replace(" ", "").replace("\n", "")


def test_warnings_become_one_short_italic_line_and_duplicates_send_nothing():
    reply = Reply(text="hello", emotion=UNKNOWN, strategy=PLAIN_STRATEGY,
                  warnings=(OFFLINE_WARNING, TurnWarning.of(WarningCode.REMINDERS_FULL, what="*bold*" + "!" * 400,
                                                            count=20), OFFLINE_WARNING))
    [message] = reply_messages(reply)
    text, line = message.split("\n")
    assert text == "hello" and line.startswith("*⚠ offline mode · Could not schedule a reminder for “\\*bold\\*")
    assert len(line) < 240 and line.count("offline mode") == 1
    assert warning_line(()) is None
    assert reply_messages(Reply(text="", emotion=UNKNOWN, strategy=PLAIN_STRATEGY, duplicate=True)) == []


def test_the_bots_mention_is_removed_and_other_mentions_read_as_names():
    assert plain_text("<@1> hey <@!1> <@22>, look", 1, {22: "Bob"}) == "hey @Bob, look"


def test_a_mention_longer_than_any_snowflake_is_left_as_text_rather_than_read_as_a_number():
    forged = "<@" + "9" * 5000 + ">"
    assert plain_text(f"hi {forged}", 1, {}) == f"hi {forged}"


def test_jump_links_point_into_the_server_or_the_dm():
    assert jump_url(600, "700", "800") == "https://discord.com/channels/600/700/800"
    assert jump_url(None, "700", "800") == "https://discord.com/channels/@me/700/800"


def test_the_bot_asks_for_no_privileged_intent():
    intents = chat_intents()
    assert intents.dm_messages and intents.guild_messages and not intents.message_content


async def settle() -> None:
    """Wait until discord.py's handlers (and the tasks they started) are done."""
    for _ in range(100):
        await asyncio.sleep(0)
        pending = [task for task in asyncio.all_tasks() if task.get_name().startswith(WORK_TASKS)]
        if not pending:
            return
        await asyncio.wait(pending, timeout=20)
    raise AssertionError("handlers did not finish")
