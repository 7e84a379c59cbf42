"""Who the Discord bot answers, through the real discord.py against the fake Discord: refused messages
and commands cost no model call and store nothing; operators change the lists with /access."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from sqlalchemy import func, select

from bench.fakes.discord_api import EPHEMERAL, FakeDiscord
from bench.fakes.openai_server import FakeOpenAI
from bot.discord_bot import MnemoBot, use_api
from shared.access.rule import Entry, Facts, Policy
from shared.access.service import AccessService
from shared.access.texts import refusal_text
from shared.commands import texts
from shared.commands.service import MemoryCommands
from shared.conversation.messages import IncomingMessage
from shared.conversation.service import ConversationService
from shared.db.models import ConversationTurn, Identity
from shared.llm.client import ChatModel
from tests.integration.test_discord_bot import ALICE, BOB, CHANNEL, CONFIG, GUILD, MESSAGE, ZH, Bot, alice
from tests.waiting import until

OPERATOR, ROLE = "300000000000000009", "800000000000000001"
BASELINE = Policy(frozenset({Entry("allow", "role", "discord", ROLE)}), frozenset({("discord", OPERATOR)}))
"""Only the members of one role (and the operator) may talk to the bot on Discord."""


class GatedBot(Bot):
    """:class:`Bot` behind access lists, in a server it knows (with its roles), as after GUILD_CREATE."""

    def __init__(self, fake: FakeDiscord, conversation: ConversationService, memory: MemoryCommands,
                 access: AccessService) -> None:
        self.fake = fake
        use_api(fake.base_url)
        self.client = MnemoBot(conversation, memory, access=access)

    async def __aenter__(self) -> GatedBot:
        await super().__aenter__()
        self.client._connection.parse_guild_create(self.fake.guild_create(GUILD, (ROLE,)))
        return self

    async def command(self, name: str, options: dict | None = None, *, user: str = ALICE, guild: str | None = None,
                      locale: str = "en-US", roles: tuple[str, ...] = ()) -> None:
        payload = self.fake.slash_command(name, options, user_id=user, guild_id=guild,
                                          channel_id=CHANNEL if guild else None, locale=locale, roles=roles)
        self.client._connection.parse_interaction_create(payload)
        await self.settle()


@pytest.fixture
def fake_discord():
    with FakeDiscord() as server:
        yield server


@pytest.fixture
def llm():
    with FakeOpenAI(models=("fake-chat",)) as server:
        yield server


@pytest.fixture
def memory(uow_factory) -> MemoryCommands:
    return MemoryCommands(uow_factory, default_timezone="Asia/Shanghai")


@pytest.fixture
def run(fake_discord, uow_factory, memory, llm):
    """``run(scenario)`` with a bot that talks to the fake model, behind the access lists of ``BASELINE``."""
    model = ChatModel(base_url=llm.base_url, api_key="test", model="fake-chat", timeout_seconds=10)
    conversation = ConversationService(uow_factory, CONFIG, chat_model=model)
    access = AccessService(uow_factory, BASELINE)

    def runner(scenario):
        async def main():
            async with GatedBot(fake_discord, conversation, memory, access) as bot:
                return await scenario(bot)
        return asyncio.run(main())
    return runner


def stored(uow_factory, model) -> int:
    with uow_factory() as uow:
        return uow.session.scalar(select(func.count()).select_from(model))


def llm_reply(text: str) -> dict:
    return {"emotion": {"primary": "neutral", "category": "neutral", "confidence": 0.9, "indicators": []},
            "response": text, "memory_update": {"should_store": False, "entries": []}, "todos": []}


def test_a_direct_message_from_outside_the_allow_list_gets_the_refusal_in_its_language_and_costs_nothing(
        run, fake_discord, llm, uow_factory):
    run(lambda bot: bot.receive(fake_discord.incoming_message("你好，记住我喜欢茶", user_id=ALICE)))

    [answer] = fake_discord.messages_in(fake_discord.dm_channel(ALICE))
    assert answer["content"] == refusal_text("zh", known=False)
    assert llm.chat_requests() == [] and fake_discord.typing == []
    assert stored(uow_factory, Identity) == 0 and stored(uow_factory, ConversationTurn) == 0


def test_in_a_server_a_refused_mention_gets_no_answer_and_a_member_of_the_allowed_role_is_answered(
        run, fake_discord, llm, uow_factory):
    me = fake_discord.bot_user
    llm.queue_reply(llm_reply("Hello, role member!"))

    async def scenario(bot: GatedBot) -> None:
        logged_in = len(fake_discord.requests)
        await bot.receive(fake_discord.incoming_message(f"<@{me['id']}> hi", user_id=BOB, guild_id=GUILD,
                                                        channel_id=CHANNEL, mentions=(me,)))
        assert fake_discord.requests[logged_in:] == []  # silence: no reply, no typing
        await bot.receive(fake_discord.incoming_message(f"<@{me['id']}> hi", user_id=ALICE, guild_id=GUILD,
                                                        channel_id=CHANNEL, mentions=(me,), roles=(ROLE,)))

    run(scenario)

    [answer] = fake_discord.messages_in(CHANNEL)
    assert answer["content"] == "Hello, role member!" and len(llm.chat_requests()) == 1
    with uow_factory() as uow:
        assert uow.users.identity("discord", BOB) is None


def test_a_refused_slash_command_is_answered_privately_and_changes_nothing(run, fake_discord, uow_factory):
    run(lambda bot: bot.command("remember", {"text": "I like jazz"}, user=BOB, locale=ZH))

    [answer] = fake_discord.interaction_responses
    assert answer["type"] == MESSAGE and answer["flags"] == EPHEMERAL
    assert answer["content"] == refusal_text("zh-CN", known=False)
    assert stored(uow_factory, Identity) == 0


def test_a_refused_user_still_sees_exports_and_forgets_what_the_bot_already_holds(
        run, fake_discord, memory, uow_factory):
    memory.remember(alice(), "I like jazz")  # remembered while the bot was open to Alice

    async def scenario(bot: GatedBot) -> None:
        await bot.command("memories")
        await bot.command("export")
        await bot.command("remember", {"text": "and tea"})

    run(scenario)

    listing, exported = fake_discord.followups
    [(_name, data)] = exported["files"].items()
    assert "I like jazz" in listing["content"] and "I like jazz" in data.decode()
    refused = fake_discord.interaction_responses[-1]
    assert refused["type"] == MESSAGE and refused["content"] == refusal_text("en-US", known=True)
    assert [item.content for item in memory.list_memories(alice()).items] == ["I like jazz"]


def test_an_operator_blocks_a_member_of_the_allowed_role_with_access_and_it_holds_at_once(
        run, fake_discord, llm, uow_factory):
    me = fake_discord.bot_user

    async def scenario(bot: GatedBot) -> None:
        await bot.command("access", {"action": "block", "kind": "user", "target": f"<@{ALICE}>"}, user=OPERATOR,
                          guild=GUILD)
        await bot.command("access", user=ALICE, guild=GUILD, roles=(ROLE,))
        await bot.command("access", {"action": "list"}, user=OPERATOR)
        await bot.receive(fake_discord.incoming_message(f"<@{me['id']}> hi", user_id=ALICE, guild_id=GUILD,
                                                        channel_id=CHANNEL, mentions=(me,), roles=(ROLE,)))

    run(scenario)

    blocked, refused, listing = fake_discord.followups[0], fake_discord.interaction_responses[1], \
        fake_discord.followups[1]
    assert blocked["content"] == f"Put user discord:{ALICE} on the block list."
    assert refused["type"] == MESSAGE and refused["content"] == refusal_text("en-US", known=False)
    assert f"• user discord:{ALICE} · added by discord:{OPERATOR}" in listing["content"]
    assert "Discord: only the allow list gets in" in listing["content"]
    assert fake_discord.messages_in(CHANNEL) == [] and llm.chat_requests() == []


def test_access_from_an_allowed_user_who_is_not_an_operator_is_refused_in_their_words(run, fake_discord):
    run(lambda bot: bot.command("access", {"action": "block", "kind": "user", "target": BOB}, guild=GUILD,
                                roles=(ROLE,), locale=ZH))

    [answer] = fake_discord.followups
    assert answer["content"] == texts.ERRORS["access_operators_only"][1]


def test_an_answer_owed_since_before_a_restart_is_not_given_to_someone_blocked_meanwhile(
        run, fake_discord, llm, uow_factory):
    said = IncomingMessage(platform="discord", chat_id=CHANNEL, user_id=ALICE, text="which tram goes to Belém?",
                           sent_at=datetime.now(UTC), is_private=False, message_id=fake_discord.new_id())
    llm.queue_reply(llm_reply("never delivered"), delay=30)
    model = ChatModel(base_url=llm.base_url, api_key="test", model="fake-chat", timeout_seconds=30)

    async def stopped_mid_turn() -> None:  # recorded while Alice was let in; killed during the LLM call
        turn = asyncio.create_task(ConversationService(uow_factory, CONFIG, chat_model=model).handle_message(said))
        await until(lambda: llm.chat_requests())
        turn.cancel()

    asyncio.run(stopped_mid_turn())
    AccessService(uow_factory, BASELINE).run(Facts("console", "operator"), f"block user discord:{ALICE}")

    async def ready(bot: GatedBot) -> None:
        bot.client.dispatch("ready")
        await until(lambda: bot.client.answering is not None)
        await bot.client.answering

    run(ready)

    assert fake_discord.messages_in(CHANNEL) == [] and len(llm.chat_requests()) == 1
