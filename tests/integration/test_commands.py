"""The memory-command service on real PostgreSQL (15 without pgvector, 18 with it).

Forgetting really deletes (vectors included) and leaves only tombstones in the audit; confirmations
are single-use, expire and belong to one user; pausing keeps the hot path from storing anything;
links merge two identities' data only once both accounts agreed; reminders parse times in the caller's
zone; hostile arguments get a clear error and change nothing.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import text

from shared.commands.memories import MAX_VERSIONS_FOLLOWED
from shared.commands.panel import PanelService
from shared.commands.service import Account, Caller, MemoryCommands
from shared.commands.texts import error_text
from shared.conversation.service import ConversationService
from shared.conversation.warning_texts import TurnWarning, WarningCode
from shared.db.memory_models import Episode, Todo
from shared.errors import ConfirmationInvalid, InvalidCommand, NotFound
from shared.memory.writes import StatedMemory, store_stated_memories
from tests import builders
from tests.conftest import APP_TABLES, audit_of

START = datetime(2026, 11, 22, 2, 0, tzinfo=UTC)  # 10:00 in Shanghai, a Sunday
ALICE = Caller("telegram", "1001", display_name="Alice", locale="zh-CN")
BOB = Caller("telegram", "2002", display_name="Bob", locale="en")
ALICE_ON_DISCORD = Caller("discord", "555000111", display_name="alice#1", locale="zh-CN")
MALLORY = Caller("discord", "666000999", display_name="mallory", locale="en")
CONFIG = builders.conversation_config(default_timezone="Asia/Shanghai")
HUGE = "记" * 100_000


class Clock(builders.Clock):
    def __init__(self, now: datetime = START) -> None:
        super().__init__(now)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def commands(uow_factory, clock) -> MemoryCommands:
    return MemoryCommands(uow_factory, default_timezone="Asia/Shanghai", clock=clock)


@pytest.fixture
def conversation(uow_factory, clock) -> ConversationService:
    return builders.conversation(uow_factory, CONFIG, clock=clock)


def say(service: ConversationService, caller: Caller, words: str, message_id: str | None = None):
    """One message through the hot path in offline mode (rule-based extraction, no LLM)."""
    return builders.said(service, caller, words, START, message_id=message_id)


def user_of(uow_factory, caller: Caller) -> int:
    with uow_factory() as uow:
        return uow.users.identity(caller.platform, caller.platform_user_id).user_id


def count(uow_factory, sql: str, **params) -> int:
    with uow_factory() as uow:
        return uow.session.scalar(text(sql), params)


def fingerprint(uow_factory) -> dict[str, list]:
    """Every row of every table: what "nothing changed" is checked against."""
    with uow_factory() as uow:
        return {table: [tuple(row) for row in uow.session.execute(text(f"SELECT * FROM {table} ORDER BY 1"))]
                for table in APP_TABLES}


def rows_of_user(uow_factory, user_id: int) -> dict[str, list]:
    """Every row that belongs to one user, table by table."""
    with uow_factory() as uow:
        return {table: [tuple(row) for row in uow.session.execute(text(
                    f"SELECT * FROM {table} WHERE {'id' if table == 'users' else 'user_id'} = :u ORDER BY 1"),
                    {"u": user_id})]
                for table in APP_TABLES if table != "chats"}


def has_vectors(uow_factory) -> bool:
    return count(uow_factory, "SELECT count(*) FROM information_schema.columns "
                              "WHERE table_name = 'memories' AND column_name = 'embedding'") == 1


def give_vectors(uow_factory) -> None:
    """An embedding for every memory and episode, as the workers would store them (PG18 only)."""
    with uow_factory() as uow:
        for table in ("memories", "episodes"):
            uow.session.execute(text(f"UPDATE {table} SET embedding = array_fill(0.1::real, ARRAY[384])::vector"))
        uow.commit()


def memories_of(commands: MemoryCommands, caller: Caller) -> list[str]:
    return [item.content for item in commands.list_memories(caller, page_size=50).items]


# Listing and explaining


def test_memories_are_listed_newest_first_in_pages_with_a_type_filter_and_search(commands):
    for number in range(23):
        commands.remember(ALICE, f"fact number {number}")
    commands.remember(ALICE, "preference: oolong tea")
    first = commands.list_memories(ALICE, page_size=10)
    assert (first.page, first.pages, first.total) == (1, 3, 24)
    assert first.items[0].content == "oolong tea"
    assert first.items[0].source == "user_stated"
    last = commands.list_memories(ALICE, page=3, page_size=10)
    assert len(last.items) == 4
    assert last.items[-1].content == "fact number 0"
    assert commands.list_memories(ALICE, page=99, page_size=10).page == 3
    assert [i.content for i in commands.list_memories(ALICE, type_="偏好").items] == ["oolong tea"]
    assert commands.list_memories(ALICE, search="number 2").total == 4  # 2, 20, 21, 22


def test_another_users_memories_are_never_listed_or_explained(commands):
    secret = commands.remember(ALICE, "我的银行密码提示是小猫")
    commands.remember(BOB, "likes jazz")
    assert memories_of(commands, BOB) == ["likes jazz"]
    with pytest.raises(NotFound) as theirs:
        commands.why(BOB, secret.id)
    with pytest.raises(NotFound) as missing:
        commands.why(BOB, secret.id + 1000)
    assert error_text(theirs.value, "en") == error_text(missing.value, "en")


def test_why_shows_the_message_a_memory_came_from(commands, conversation):
    reply = say(conversation, ALICE, "我喜欢乌龙茶", message_id="77")
    memory_id = reply.stored_memory_ids[0]
    origin = commands.why(ALICE, f"#{memory_id}")
    assert origin.memory.content == "我喜欢乌龙茶"
    assert origin.message_text == "我喜欢乌龙茶"
    assert (origin.platform, origin.platform_chat_id, origin.platform_message_id) == ("telegram", "1001", "77")
    assert commands.why(ALICE, commands.remember(ALICE, "manual").id).message_text is None


def memory_id_of(uow_factory, content: str) -> int:
    return count(uow_factory, "SELECT id FROM memories WHERE content = :c", c=content)


def test_why_on_a_replaced_memory_shows_its_message_and_the_versions_that_replaced_it(commands, conversation,
                                                                                        uow_factory):
    for n, city in enumerate(("广州", "深圳", "厦门")):
        say(conversation, ALICE, f"我住在{city}", message_id=f"8{n}")
    oldest, middle, newest = (memory_id_of(uow_factory, f"我住在{city}") for city in ("广州", "深圳", "厦门"))

    origin = commands.why(ALICE, oldest)

    assert (origin.memory.content, origin.message_text, origin.platform_message_id) == (
        "我住在广州", "我住在广州", "80")
    assert (origin.replaced_by.id, origin.replaced_by.content) == (middle, "我住在深圳")
    assert (origin.current.id, origin.current.content, origin.forgotten_at) == (newest, "我住在厦门", None)
    latest_but_one = commands.why(ALICE, middle)
    assert (latest_but_one.replaced_by.id, latest_but_one.current) == (newest, None)
    assert commands.why(ALICE, newest).replaced_by is None
    with pytest.raises(NotFound):
        commands.why(BOB, oldest)


def test_why_follows_replacements_only_a_few_steps_and_never_round_a_loop(commands, uow_factory):
    steps = MAX_VERSIONS_FOLLOWED + 2
    chain = [{"id": n, "type": "fact", "content": f"version {n}", "superseded_by": n + 1 if n < steps else None}
             for n in range(1, steps + 1)]
    loop = [{"id": 90, "type": "fact", "content": "loop a", "superseded_by": 91},
            {"id": 91, "type": "fact", "content": "loop b", "superseded_by": 90}]
    commands.import_data(ALICE, json.dumps({"format": "mnemo-export", "version": 1,
                                            "memories": chain + loop}).encode())

    far = commands.why(ALICE, memory_id_of(uow_factory, "version 1"))
    near = commands.why(ALICE, memory_id_of(uow_factory, f"version {steps - MAX_VERSIONS_FOLLOWED}"))
    looped = commands.why(ALICE, memory_id_of(uow_factory, "loop a"))

    assert (far.replaced_by.content, far.current) == ("version 2", None)
    assert near.current.content == f"version {steps}"
    assert (looped.replaced_by.content, looped.current) == ("loop b", None)


def test_why_on_a_forgotten_memory_says_when_it_was_set_aside(commands, uow_factory):
    document = {"format": "mnemo-export", "version": 1, "memories": [
        {"id": 5, "type": "preference", "content": "likes durian", "deleted_at": "2026-10-03T08:00:00+00:00"}]}
    commands.import_data(ALICE, json.dumps(document).encode())
    origin = commands.why(ALICE, memory_id_of(uow_factory, "likes durian"))

    assert origin.memory.content == "likes durian"
    assert origin.forgotten_at == START.replace(month=10, day=3, hour=8)
    assert origin.replaced_by is None
    assert memories_of(commands, ALICE) == []


# Remembering


def test_remember_stores_a_confirmed_stated_fact_with_full_confidence_search_tokens_and_an_audit_entry(commands,
                                                                                                      uow_factory):
    item = commands.remember(ALICE, "我的猫叫咪咪")
    assert (item.type, item.source, item.verified, item.confidence) == ("fact", "user_stated", True, 1.0)
    with uow_factory() as uow:
        user_id = uow.users.identity("telegram", "1001").user_id
        assert [m.id for m, _ in uow.memories.text_candidates(user_id, ["咪咪"])] == [item.id]
        events = audit_of(uow, user_id, item.id)
    assert [(e.action, e.actor, e.after["content"]) for e in events] == [("add", "user", "我的猫叫咪咪")]


def test_remember_reads_a_leading_type_word_in_either_language(commands):
    assert commands.remember(ALICE, "preference: oolong tea").type == "preference"
    assert commands.remember(ALICE, "规则：不要在晚上十点后提醒我").type == "rule"
    unknown = commands.remember(ALICE, "note: the word is not a type")
    assert (unknown.type, unknown.content) == ("fact", "note: the word is not a type")


def test_remembering_the_same_thing_twice_keeps_one_memory(commands):
    first = commands.remember(ALICE, "likes tea")
    assert commands.remember(ALICE, "  likes tea ").id == first.id
    assert memories_of(commands, ALICE) == ["likes tea"]


# Forgetting


def test_forget_one_asks_first_then_deletes_it_and_its_audit_keeps_only_a_tombstone(commands, uow_factory):
    keep = commands.remember(ALICE, "lives in Shanghai")
    gone = commands.remember(ALICE, "喜欢乌龙茶")
    confirmation = commands.request_forget(ALICE, f"#{gone.id}")
    assert (confirmation.count, confirmation.preview, confirmation.everything) == (1, ("喜欢乌龙茶",), False)
    assert len(confirmation.token) <= 32
    assert confirmation.expires_at == START + timedelta(minutes=5)
    assert len(memories_of(commands, ALICE)) == 2  # nothing happens before the confirmation
    assert commands.confirm(ALICE, confirmation.token) == 1
    assert memories_of(commands, ALICE) == ["lives in Shanghai"]
    with uow_factory() as uow:
        user_id = uow.users.identity("telegram", "1001").user_id
        events = [(e.action, e.actor, e.before, e.after, e.reason) for e in audit_of(uow, user_id, gone.id)]
        assert audit_of(uow, user_id, keep.id)[0].after["content"] == "lives in Shanghai"
    assert events == [("add", "user", None, None, "forgotten by the user"),
                      ("forget", "user", None, None, "forgotten by the user")]
    assert count(uow_factory, "SELECT count(*) FROM memory_events WHERE cast(before AS text) LIKE '%乌龙%' "
                              "OR cast(after AS text) LIKE '%乌龙%' OR reason LIKE '%乌龙%'") == 0


def test_forgetting_a_value_also_forgets_the_older_values_it_replaced(commands, uow_factory):
    user_id = user_of_after(commands, uow_factory, ALICE)
    with uow_factory() as uow:
        for city in ("北京", "上海"):
            store_stated_memories(uow, user_id, [StatedMemory("fact", "user", "lives_in", f"我住在{city}")],
                                  now=START, source_turn_id=None, session_id=None)
        uow.commit()
    current = commands.list_memories(ALICE).items[0]
    assert current.content == "我住在上海"
    assert commands.confirm(ALICE, commands.request_forget(ALICE, str(current.id)).token) == 1
    assert count(uow_factory, "SELECT count(*) FROM memories WHERE user_id = :u", u=user_id) == 0


def test_forget_by_search_deletes_only_the_matching_memories(commands):
    for words in ("喜欢乌龙茶", "喜欢绿茶", "住在上海"):
        commands.remember(ALICE, words)
    commands.remember(BOB, "喜欢红茶")
    confirmation = commands.request_forget(ALICE, "茶")
    assert confirmation.count == 2
    assert set(confirmation.preview) == {"喜欢乌龙茶", "喜欢绿茶"}
    assert commands.confirm(ALICE, confirmation.token) == 2
    assert memories_of(commands, ALICE) == ["住在上海"]
    assert memories_of(commands, BOB) == ["喜欢红茶"]


@pytest.mark.pgvector
def test_forget_all_leaves_no_row_of_the_users_memories_vectors_turns_or_episodes_but_keeps_other_users(
        commands, conversation, uow_factory, request):
    for caller in (ALICE, BOB):
        say(conversation, caller, "我喜欢乌龙茶", message_id="1")
        say(conversation, caller, "我住在上海", message_id="2")
        commands.add_reminder(caller, "明天早上9点 开会")
    alice, bob = user_of(uow_factory, ALICE), user_of(uow_factory, BOB)
    with uow_factory() as uow:
        for user_id in (alice, bob):
            uow.episodes.add(Episode(user_id=user_id, summary="聊了乌龙茶", started_at=START, ended_at=START))
            uow.profiles.save(user_id, "喜欢茶的人", {"focus": "茶"}, START)
        uow.commit()
    vectors = has_vectors(uow_factory)
    assert vectors == (request.node.callspec.params["migrated_url"] == "embedded")
    if vectors:
        give_vectors(uow_factory)
    bob_before = rows_of_user(uow_factory, bob)
    confirmation = commands.request_forget(ALICE, "all")
    assert confirmation.everything
    assert confirmation.count == 2
    assert commands.confirm(ALICE, confirmation.token) == 2
    for table in ("memories", "conversation_turns", "episodes", "sessions", "profiles", "jobs_outbox"):
        assert count(uow_factory, f"SELECT count(*) FROM {table} WHERE user_id = :u", u=alice) == 0, table
    assert count(uow_factory, "SELECT count(*) FROM memory_events WHERE user_id = :u AND (before IS NOT NULL "
                              "OR after IS NOT NULL OR reason <> 'forgotten by the user')", u=alice) == 0
    assert count(uow_factory, "SELECT count(*) FROM memory_events WHERE user_id = :u AND action = 'forget'",
                 u=alice) == 2
    if vectors:
        assert count(uow_factory, "SELECT count(*) FROM memories WHERE embedding IS NOT NULL") == 2  # Bob's
        assert count(uow_factory, "SELECT count(*) FROM episodes WHERE embedding IS NOT NULL") == 1
    assert len(commands.list_reminders(ALICE)) == 1  # reminders are not memories
    assert rows_of_user(uow_factory, bob) == bob_before


def test_a_confirmation_is_refused_to_another_user_and_still_works_for_its_owner(commands):
    memory = commands.remember(ALICE, "secret")
    confirmation = commands.request_forget(ALICE, str(memory.id))
    with pytest.raises(ConfirmationInvalid):
        commands.confirm(BOB, confirmation.token)
    with pytest.raises(ConfirmationInvalid):
        commands.cancel(BOB, confirmation.token)
    assert memories_of(commands, ALICE) == ["secret"]
    assert commands.confirm(ALICE, confirmation.token) == 1


def test_a_confirmation_cannot_be_used_twice_after_it_expired_or_after_cancel(commands, clock):
    for word in ("one", "two", "three"):
        commands.remember(ALICE, word)
    used = commands.request_forget(ALICE, "one")
    commands.confirm(ALICE, used.token)
    with pytest.raises(ConfirmationInvalid):
        commands.confirm(ALICE, used.token)
    cancelled = commands.request_forget(ALICE, "two")
    commands.cancel(ALICE, cancelled.token)
    with pytest.raises(ConfirmationInvalid):
        commands.confirm(ALICE, cancelled.token)
    late = commands.request_forget(ALICE, "three")
    clock.now += timedelta(minutes=5, seconds=1)
    with pytest.raises(ConfirmationInvalid):
        commands.confirm(ALICE, late.token)
    assert sorted(memories_of(commands, ALICE)) == ["three", "two"]


# Pause and resume


def test_a_paused_users_facts_are_not_stored_until_they_resume(commands, conversation, uow_factory):
    commands.pause(ALICE)
    assert commands.is_paused(ALICE)
    assert not commands.is_paused(BOB)
    reply = say(conversation, ALICE, "我喜欢乌龙茶", message_id="1")
    assert reply.stored_memory_ids == ()
    assert TurnWarning(WarningCode.REMEMBERING_PAUSED) in reply.warnings
    alice = user_of(uow_factory, ALICE)
    assert count(uow_factory, "SELECT count(*) FROM memories WHERE user_id = :u", u=alice) == 0
    assert count(uow_factory, "SELECT count(*) FROM jobs_outbox WHERE user_id = :u AND task = 'extract_turn'",
                 u=alice) == 0
    say(conversation, BOB, "我喜欢红茶", message_id="1")
    assert memories_of(commands, BOB) == ["我喜欢红茶"]
    commands.resume(ALICE)
    assert not commands.is_paused(ALICE)
    assert say(conversation, ALICE, "我喜欢绿茶", message_id="2").stored_memory_ids != ()
    assert memories_of(commands, ALICE) == ["我喜欢绿茶"]


def test_pausing_twice_keeps_the_first_pause_time_and_remember_still_works_when_asked_explicitly(
        commands, clock, uow_factory):
    commands.pause(ALICE)
    clock.now += timedelta(hours=1)
    commands.pause(ALICE)
    with uow_factory() as uow:
        assert uow.users.get(user_of(uow_factory, ALICE)).paused_at == START
    assert commands.remember(ALICE, "explicitly asked").content == "explicitly asked"


# Linking identities


def join(commands: MemoryCommands, owner: Caller, joining: Caller) -> Account:
    """The whole /link flow: a code on ``owner``, entered on ``joining``, confirmed back on ``owner``."""
    request = commands.link(joining, commands.link_code(owner).code)
    return commands.confirm_link(owner, request.code)


def test_link_moves_the_identity_and_merges_its_previous_users_data(commands, conversation, uow_factory):
    commands.remember(ALICE_ON_DISCORD, "likes jazz")
    say(conversation, ALICE, "我喜欢乌龙茶", message_id="1")
    telegram_user, discord_user = user_of(uow_factory, ALICE), user_of(uow_factory, ALICE_ON_DISCORD)
    code = commands.link_code(ALICE_ON_DISCORD)
    assert len(code.code) == 8
    assert not set(code.code) & set("01OI")
    request = commands.link(ALICE, code.code.lower())
    assert request.owner == (Account("discord", "alice#1"),)
    assert request.code != code.code
    assert user_of(uow_factory, ALICE) == telegram_user  # nothing joined before the owner confirms
    assert commands.confirm_link(ALICE_ON_DISCORD, request.code) == Account("telegram", "Alice")
    assert user_of(uow_factory, ALICE) == discord_user
    assert sorted(memories_of(commands, ALICE)) == sorted(memories_of(commands, ALICE_ON_DISCORD)) == [
        "likes jazz", "我喜欢乌龙茶"]
    for table in ("users", "memories", "memory_events", "conversation_turns", "sessions", "jobs_outbox"):
        column = "id" if table == "users" else "user_id"
        assert count(uow_factory, f"SELECT count(*) FROM {table} WHERE {column} = :u", u=telegram_user) == 0, table
    assert count(uow_factory, "SELECT count(*) FROM conversation_turns WHERE user_id = :u", u=discord_user) == 2
    with pytest.raises(ConfirmationInvalid):
        commands.link(BOB, code.code)  # used
    with pytest.raises(ConfirmationInvalid):
        commands.confirm_link(ALICE_ON_DISCORD, request.code)  # used


def test_a_code_entered_by_a_stranger_joins_nothing_until_its_owner_confirms_naming_the_stranger(
        commands, uow_factory):
    commands.remember(ALICE, "my diary password hint")
    alices_user = user_of(uow_factory, ALICE)
    request = commands.link(MALLORY, commands.link_code(ALICE).code)  # Alice was talked into sharing her code

    assert request.owner == (Account("telegram", "Alice"),)  # Mallory is told whose account it is
    assert memories_of(commands, MALLORY) == []
    assert user_of(uow_factory, MALLORY) != alices_user
    for stranger in (MALLORY, BOB):  # the second code works on the first code's owner only
        with pytest.raises(ConfirmationInvalid):
            commands.confirm_link(stranger, request.code)
    assert user_of(uow_factory, MALLORY) != alices_user
    assert commands.confirm_link(ALICE, request.code) == Account("discord", "mallory")  # Alice is told who joined


def test_link_is_refused_for_your_own_code_an_expired_code_or_a_second_account_of_one_platform(commands, clock):
    own = commands.link_code(ALICE)
    with pytest.raises(InvalidCommand, match="link_self"):
        commands.link(ALICE, own.code)
    with pytest.raises(InvalidCommand, match="link_same_platform"):
        commands.link(BOB, own.code)  # Alice's user already has a Telegram identity
    request = commands.link(ALICE_ON_DISCORD, own.code)  # the refusals did not use the code up
    with pytest.raises(ConfirmationInvalid):
        commands.confirm_link(ALICE, own.code)  # the first code does not confirm
    clock.now += timedelta(minutes=5, seconds=1)
    with pytest.raises(ConfirmationInvalid):
        commands.confirm_link(ALICE, request.code)  # expired
    expired = commands.link_code(BOB)
    clock.now += timedelta(minutes=5, seconds=1)
    with pytest.raises(ConfirmationInvalid):
        commands.link(Caller("discord", "777"), expired.code)
    join(commands, ALICE, ALICE_ON_DISCORD)
    with pytest.raises(InvalidCommand, match="link_unlink_first"):
        commands.link(ALICE_ON_DISCORD, commands.link_code(BOB).code)


def test_wrong_codes_are_limited_per_account_and_a_new_code_does_not_reset_the_count(commands, clock):
    valid = commands.link_code(ALICE)
    for wrong in ("ABCDEFGH", "HGFEDCBA", "KKKKKKKK"):
        with pytest.raises(ConfirmationInvalid):
            commands.link(MALLORY, wrong)
    for wrong in ("MMMMMMMM", "NNNNNNNN"):  # wrong confirmations count too
        with pytest.raises(ConfirmationInvalid):
            commands.confirm_link(MALLORY, wrong)
    commands.link_code(MALLORY)
    clock.now += timedelta(minutes=1)

    with pytest.raises(InvalidCommand, match="link_too_many_tries") as refused:
        commands.link(MALLORY, commands.link_code(ALICE).code)  # even a right code, until the hour is over
    assert "5" in error_text(refused.value, "en")
    assert "60" in error_text(refused.value, "zh")
    request = commands.link(ALICE_ON_DISCORD, commands.link_code(ALICE).code)  # others are not limited
    assert request.owner == (Account("telegram", "Alice"),)
    assert valid.code != request.code

    clock.now += timedelta(hours=1)
    assert commands.link(MALLORY, commands.link_code(BOB).code).owner == (Account("telegram", "Bob"),)


def test_one_time_tokens_are_stored_only_as_their_sha256_and_still_work(commands, uow_factory):
    commands.remember(ALICE, "keeps bees on the roof")
    confirmation = commands.request_forget(ALICE, "bees")
    code = commands.link_code(BOB).code
    [sign_in] = parse_qs(urlsplit(commands.panel_link(ALICE_ON_DISCORD).url).query)["token"]
    with uow_factory() as uow:
        stored = set(uow.session.scalars(text("SELECT token FROM one_time_tokens")))
    for secret in (confirmation.token, code, sign_in):
        assert secret not in stored
        assert hashlib.sha256(secret.encode()).hexdigest() in stored
    assert commands.confirm(ALICE, confirmation.token) == 1
    request = commands.link(ALICE_ON_DISCORD, code.lower())
    with uow_factory() as uow:
        stored = set(uow.session.scalars(text("SELECT token FROM one_time_tokens")))
    assert request.code not in stored
    assert hashlib.sha256(request.code.encode()).hexdigest() in stored
    commands.confirm_link(BOB, request.code)
    assert user_of(uow_factory, ALICE_ON_DISCORD) == user_of(uow_factory, BOB)


def test_unlink_gives_the_identity_a_fresh_user_and_the_data_stays_with_the_other(commands, uow_factory):
    commands.remember(ALICE, "likes tea")
    join(commands, ALICE, ALICE_ON_DISCORD)
    commands.add_reminder(ALICE_ON_DISCORD, "tomorrow 9am call mom")
    commands.unlink(ALICE_ON_DISCORD)
    assert user_of(uow_factory, ALICE) != user_of(uow_factory, ALICE_ON_DISCORD)
    assert memories_of(commands, ALICE) == ["likes tea"]
    assert memories_of(commands, ALICE_ON_DISCORD) == []
    assert [r.content for r in commands.list_reminders(ALICE_ON_DISCORD)] == ["call mom"]  # pings on Discord
    with pytest.raises(InvalidCommand, match="unlink_only_identity"):
        commands.unlink(ALICE_ON_DISCORD)


# Reminders


def test_a_chinese_reminder_is_due_at_nine_tomorrow_in_the_default_time_zone(commands, uow_factory):
    item = commands.add_reminder(ALICE, "明天早上9点 开会")
    assert item.due_at == datetime(2026, 11, 23, 9, 0, tzinfo=ZoneInfo("Asia/Shanghai"))
    assert (item.content, item.timezone, item.status) == ("开会", "Asia/Shanghai", "pending")
    with uow_factory() as uow:
        chat = uow.session.execute(text("SELECT c.platform, c.platform_chat_id, c.kind FROM todos t "
                                        "JOIN chats c ON c.id = t.chat_id")).one()
    assert tuple(chat) == ("telegram", "1001", "private")


def test_an_english_reminder_follows_the_callers_own_time_zone_and_chat(commands, uow_factory):
    with uow_factory() as uow:
        uow.users.identify("telegram", "2002", timezone="America/New_York")
        uow.commit()
    in_group = Caller("telegram", "2002", locale="en", platform_chat_id="-100123", chat_kind="group")
    item = commands.add_reminder(in_group, "tomorrow at 9am call mom")
    assert item.due_at == datetime(2026, 11, 22, 9, 0, tzinfo=ZoneInfo("America/New_York"))  # 21:00 Sat there
    assert item.content == "call mom"
    assert item.timezone == "America/New_York"
    assert count(uow_factory, "SELECT count(*) FROM chats WHERE platform_chat_id = '-100123' AND kind = 'group'") == 1


def test_reminders_are_listed_soonest_first_and_can_be_cancelled_done_and_snoozed(commands, clock, uow_factory):
    later = commands.add_reminder(BOB, "in 2 hours water the plants")
    sooner = commands.add_reminder(BOB, "in 20 minutes stretch")
    third = commands.add_reminder(BOB, "tomorrow 8am run")
    assert [r.id for r in commands.list_reminders(BOB)] == [sooner.id, later.id, third.id]
    assert commands.cancel_reminder(BOB, sooner.id).status == "cancelled"
    assert commands.complete_reminder(BOB, f"#{later.id}").status == "done"
    assert [r.id for r in commands.list_reminders(BOB)] == [third.id]
    with pytest.raises(InvalidCommand, match="reminder_not_pending"):
        commands.cancel_reminder(BOB, sooner.id)
    clock.now = START + timedelta(days=1)
    with uow_factory() as uow:
        claimed = uow.todos.claim_due(clock.now)
        uow.todos.mark_sent(claimed[0].user_id, claimed[0].id, claimed[0].attempts, clock.now)
        uow.commit()
    snoozed = commands.snooze_reminder(BOB, third.id, 15)
    assert snoozed.status == "pending"
    assert snoozed.due_at == clock.now + timedelta(minutes=15)
    with uow_factory() as uow:
        assert uow.todos.get(user_of(uow_factory, BOB), third.id).claimed_until is None
        assert [t.id for t in uow.todos.claim_due(clock.now + timedelta(minutes=15))] == [third.id]


@pytest.mark.parametrize("due, minutes, kept", [
    (datetime(9998, 12, 31, 20, 0, tzinfo=UTC), 300, False),
    (datetime(9998, 12, 31, 20, 0, tzinfo=UTC), 120, True),
    (datetime(9998, 12, 27, 6, 0, tzinfo=UTC), 7 * 24 * 60, False),
    (datetime(9998, 12, 31, 23, 59, tzinfo=UTC), 1, False),
])
def test_a_snooze_never_moves_a_reminder_past_the_range_of_stored_times(commands, uow_factory, due, minutes, kept):
    commands.list_reminders(BOB)
    with uow_factory() as uow:
        user_id = uow.users.identify(BOB.platform, BOB.platform_user_id).user_id
        todo = uow.todos.add(Todo(user_id=user_id, content="renew the lease", due_at=due, remind_at=due,
                                  timezone="America/Los_Angeles", status="sent", source="command",
                                  created_at=START, updated_at=START))
        uow.commit()
    if kept:
        change = commands.remind(BOB, f"snooze {todo.id} {minutes}")
        assert change.item.due_at == due + timedelta(minutes=minutes)
    else:
        with pytest.raises(InvalidCommand, match="snooze_out_of_range"):
            commands.remind(BOB, f"snooze {todo.id} {minutes}")
        assert commands.list_reminders(BOB) == ()  # still sent, unchanged
    assert commands.import_data(BOB, commands.export_data(BOB).data).refused == ()  # its export reads back


def test_reminder_times_that_are_missing_or_past_are_refused_with_a_hint(commands):
    with pytest.raises(InvalidCommand, match="reminder_no_time"):
        commands.add_reminder(ALICE, "买牛奶")
    with pytest.raises(InvalidCommand, match="reminder_past"):
        commands.add_reminder(ALICE, "今天早上8点 开会")
    with pytest.raises(InvalidCommand, match="reminder_no_content"):
        commands.add_reminder(ALICE, "明天早上9点")
    assert commands.list_reminders(ALICE) == ()


def test_another_users_reminder_cannot_be_touched(commands):
    theirs = commands.add_reminder(ALICE, "明天早上9点 开会")
    for change in (commands.cancel_reminder, commands.complete_reminder, commands.snooze_reminder):
        with pytest.raises(NotFound):
            change(BOB, theirs.id)
    assert commands.list_reminders(ALICE)[0].status == "pending"


# Hostile input

HOSTILE_TEXTS = ("", "   ", HUGE, "a\x00b", "bell\x07", "esc\x1b[31m", "lone \ud800 surrogate", None, 12, b"bytes")
HOSTILE_IDS = (-1, 0, "-1", "999999999999999999999", 10**30, "#", "", "abc", None, True, 1.5, HUGE, "1; DROP TABLE x",
               "\x00", "９９９９９９９")  # full-width digits read as a number: one nobody has


@pytest.fixture
def seeded(commands, conversation):
    """Both users have memories, turns and a reminder; returns Bob's memory and reminder ids."""
    commands.remember(ALICE, "喜欢乌龙茶")
    say(conversation, ALICE, "我住在上海", message_id="1")
    commands.add_reminder(ALICE, "明天早上9点 开会")
    bob_memory = commands.remember(BOB, "likes jazz")
    bob_reminder = commands.add_reminder(BOB, "tomorrow 9am call mom")
    return bob_memory.id, bob_reminder.id


def refused_without_change(uow_factory, call, *errors) -> None:
    before = fingerprint(uow_factory)
    with pytest.raises(errors or (InvalidCommand, NotFound, ConfirmationInvalid)):
        call()
    assert fingerprint(uow_factory) == before


@pytest.mark.parametrize("text", ["\u200b\u200c", "\u2060 \ufeff", "\u202e", "preference: \u200d\u2066"])
def test_remembering_invisible_text_is_refused_with_a_clear_message(commands, seeded, uow_factory, text):
    refused_without_change(uow_factory, lambda: commands.remember(ALICE, text), InvalidCommand)
    with pytest.raises(InvalidCommand) as refused:
        commands.remember(ALICE, text)
    assert refused.value.key == "invisible_text"
    assert "invisible" in error_text(refused.value, "en")
    assert "不可见" in error_text(refused.value, "zh")


@pytest.mark.parametrize("text", ["\u3164\u115f", "\u2800", "fact: \u0300\u20e3", "\U000e01ef", "\u034f",
                                  "\ufffc\ufffc", "\U00100001", "preference: \uf8ff\u2028"])
def test_remembering_fillers_lone_marks_or_private_use_is_refused_as_invisible(commands, seeded, uow_factory, text):
    refused_without_change(uow_factory, lambda: commands.remember(ALICE, text), InvalidCommand)
    with pytest.raises(InvalidCommand) as refused:
        commands.remember(ALICE, text)
    assert refused.value.key == "invisible_text"


def test_remembered_text_loses_its_direction_controls_and_keeps_emoji_joiners(commands, uow_factory):
    family = "\U0001F468\u200d\U0001F469\u200d\U0001F466"
    shown = commands.remember(ALICE, f"my file is \u202egpj.exe\u202c {family}")
    assert shown.content == f"my file is gpj.exe {family}"
    assert memories_of(commands, ALICE) == [f"my file is gpj.exe {family}"]
    assert commands.remember(ALICE, "\u2067my file is gpj.exe\u2069 " + family).id == shown.id  # the same memory


def test_hostile_text_arguments_are_refused_and_change_nothing(commands, seeded, uow_factory):
    for value in HOSTILE_TEXTS:
        for call in (commands.remember, commands.add_reminder, commands.request_forget, commands.link):
            refused_without_change(uow_factory, lambda call=call, value=value: call(ALICE, value), InvalidCommand)
        kind = "x" if value in ("", "   ", None) else value
        refused_without_change(uow_factory, lambda kind=kind: commands.list_memories(ALICE, type_=kind))
        if value not in ("", "   ", None):  # an empty search means no search
            refused_without_change(uow_factory, lambda value=value: commands.list_memories(ALICE, search=value))
    for value in ("'; DROP TABLE memories; --", "%", "_", "\\", "🍵🐱" * 3, "a:* & !b"):
        refused_without_change(uow_factory, lambda value=value: commands.request_forget(ALICE, value), InvalidCommand)
        assert commands.list_memories(ALICE, search=value).total == 0
    assert commands.remember(ALICE, "'); DROP TABLE memories; --").content == "'); DROP TABLE memories; --"
    assert commands.remember(ALICE, "🍵🐱").content == "🍵🐱"


def test_hostile_ids_and_another_users_ids_are_refused_and_change_nothing(commands, seeded, uow_factory):
    bob_memory, bob_reminder = seeded
    for value in (*HOSTILE_IDS, bob_memory, str(bob_memory), f"#{bob_memory}"):
        refused_without_change(uow_factory, lambda value=value: commands.why(ALICE, value))
        if not isinstance(value, str) or value.strip():
            refused_without_change(uow_factory, lambda value=value: commands.request_forget(ALICE, value))
    for value in (*HOSTILE_IDS, bob_reminder):
        for change in (commands.cancel_reminder, commands.complete_reminder, commands.snooze_reminder):
            refused_without_change(uow_factory, lambda change=change, value=value: change(ALICE, value))
    own = commands.list_reminders(ALICE)[0].id
    for minutes in (0, -5, 10**9, "10", True, 1.5, None):
        refused_without_change(uow_factory, lambda minutes=minutes: commands.snooze_reminder(ALICE, own, minutes),
                               InvalidCommand)
    for page in (0, -1, "2", True, 1.5, 10**30):
        refused_without_change(uow_factory, lambda page=page: commands.list_memories(ALICE, page=page), InvalidCommand)
    refused_without_change(uow_factory, lambda: commands.list_memories(ALICE, page_size=10_000), InvalidCommand)


def test_hostile_tokens_codes_and_callers_are_refused_and_change_nothing(commands, seeded, uow_factory):
    bobs = commands.request_forget(BOB, "jazz")
    for token in (*HOSTILE_TEXTS, "A" * 33, "../../etc/passwd", bobs.token, bobs.token.upper()):
        refused_without_change(uow_factory, lambda token=token: commands.confirm(ALICE, token), ConfirmationInvalid)
        refused_without_change(uow_factory, lambda token=token: commands.cancel(ALICE, token), ConfirmationInvalid)
    for code in ("O0O0O0O0", "ABC", HUGE, "ABCD\x00EFG"):
        refused_without_change(uow_factory, lambda code=code: commands.link(ALICE, code), InvalidCommand)
        refused_without_change(uow_factory, lambda code=code: commands.confirm_link(ALICE, code), InvalidCommand)
    before = fingerprint(uow_factory)
    with pytest.raises(ConfirmationInvalid):
        commands.link(ALICE, "ABCDEFGH")  # well formed but wrong: only counted as a wrong try
    after = fingerprint(uow_factory)
    assert {table for table in APP_TABLES if before[table] != after[table]} == {"one_time_tokens"}
    for caller in (Caller("myspace", "1"), Caller("telegram", ""), Caller("telegram", HUGE),
                   Caller("telegram", "1\x00"), Caller("telegram", "1", chat_kind="channel"),
                   Caller("telegram", "1", platform_chat_id="\x07"), "telegram:1", None):
        refused_without_change(uow_factory, lambda caller=caller: commands.list_memories(caller), InvalidCommand)
        refused_without_change(uow_factory, lambda caller=caller: commands.pause(caller), InvalidCommand)
    assert commands.confirm(BOB, bobs.token) == 1


def test_a_huge_display_name_or_odd_locale_is_cut_or_ignored_not_stored_whole(commands, uow_factory):
    commands.list_memories(Caller("discord", "42", display_name=HUGE, locale="zh-CN\x00'; --"))
    with uow_factory() as uow:
        identity = uow.users.identity("discord", "42")
    assert len(identity.display_name) <= 200
    assert identity.locale is None


def user_of_after(commands: MemoryCommands, uow_factory, caller: Caller) -> int:
    """The caller's user id, creating the user through the service first."""
    commands.is_paused(caller)
    return user_of(uow_factory, caller)



def test_forget_all_reminders_recovers_a_user_whose_rows_python_cannot_read_and_signs_them_out(
        commands, uow_factory, clock):
    commands.remember(ALICE, "喜欢乌龙茶")
    commands.add_reminder(ALICE, "明天早上9点 开会")
    commands.add_reminder(BOB, "tomorrow 9am call mom")
    alice = user_of(uow_factory, ALICE)
    with uow_factory() as uow:  # what an old import could store: year 10000 in UTC
        uow.session.execute(text("UPDATE todos SET due_at = '10000-01-01T09:00:00Z', remind_at = "
                                 "'10000-01-01T09:00:00Z' WHERE user_id = :u"), {"u": alice})
        uow.commit()
    panel = PanelService(uow_factory, session_lifetime=timedelta(hours=12), clock=clock)
    signed_in = panel.sign_in(commands.panel_link(ALICE).url.rsplit("=", 1)[1])
    unused = commands.panel_link(ALICE).url.rsplit("=", 1)[1]
    with pytest.raises(Exception):  # noqa: B017 (the failure this recovers from)
        commands.list_reminders(ALICE)

    confirmation = commands.request_forget(ALICE, "all reminders")
    assert confirmation.reminders == 1
    commands.confirm(ALICE, confirmation.token)

    assert commands.list_reminders(ALICE) == ()
    assert json.loads(commands.export_data(ALICE).data)["todos"] == []
    assert panel.session(signed_in.secret) is None
    with pytest.raises(ConfirmationInvalid):
        panel.sign_in(unused)
    assert [r.content for r in commands.list_reminders(BOB)] == ["call mom"]
