"""The fake unit of work (tests/fakes/uow.py) keeps to what PostgreSQL does.

Every method of a fake repository is a method of the real repository under the same ``uow`` name,
with the same parameters; and small scenarios observed through both units of work (a migrated
PostgreSQL, and the fake) see the same rows: scoping by user, what an uncommitted block leaves,
leased claims, a chat that moved, search, the supersede chain and ``ON DELETE``, one-time tokens, the outbox's keys.
Observations name rows by their content, never by id.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from shared.db.memory_models import Memory, MemoryEvent, OutboxJob, Todo
from shared.db.models import Base, ConversationTurn
from shared.db.usage_models import UsageCall
from shared.llm.metering import CallUsage
from shared.repositories.uow import UnitOfWork
from tests.fakes.uow import FakeDatabase, FakeUnitOfWork

NOW = datetime(2026, 11, 22, 2, 0, tzinfo=UTC)
EVERY_STATUS = ("pending", "sent", "done", "cancelled")


def public_methods(cls: type) -> dict[str, inspect.Signature]:
    return {name: inspect.signature(member) for name, member in vars(cls).items()
            if callable(member) and not name.startswith("_")}


def parameters(signature: inspect.Signature) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default) for p in signature.parameters.values()]


def real_repositories() -> dict[str, type]:
    """The real unit of work's repository classes by attribute, from a unit of work over no session."""
    uow = UnitOfWork(lambda: None).__enter__()  # builds the repositories; nothing connects
    return {name: type(value) for name, value in vars(uow).items() if not name.startswith("_") and name != "session"}


def fake_repositories() -> dict[str, type]:
    uow = FakeDatabase().unit_of_work().__enter__()
    return {name: type(value) for name, value in vars(uow).items() if not name.startswith("_") and name != "database"}


@pytest.mark.parametrize("name", sorted(fake_repositories()))
def test_every_fake_repository_method_is_a_real_one_with_the_same_parameters(name):
    real, fake = real_repositories()[name], fake_repositories()[name]
    real_methods = public_methods(real)
    for method, signature in public_methods(fake).items():
        assert method in real_methods, f"{fake.__name__}.{method} is not a method of {real.__name__}"
        assert parameters(signature) == parameters(real_methods[method]), f"{fake.__name__}.{method}"


def test_the_fake_unit_of_works_own_methods_are_the_real_ones():
    real = public_methods(UnitOfWork)
    for method, signature in public_methods(FakeUnitOfWork).items():
        assert parameters(signature) == parameters(real[method]), method


# The same scenarios on both


@dataclass(frozen=True)
class Backend:
    uow_factory: Callable[[], object]
    rows: Callable[[type[Base]], list]
    """Every committed row of a model, in key order."""


def real_backend(uow_factory) -> Backend:
    def rows(model: type[Base]) -> list:
        with uow_factory() as uow:
            key = model.__mapper__.primary_key[0]
            return list(uow.session.scalars(select(model).order_by(key)))
    return Backend(uow_factory, rows)


def fake_backend() -> Backend:
    database = FakeDatabase(lambda: NOW)
    return Backend(database.unit_of_work, database.rows)


def two_users(db: Backend) -> tuple[int, int, int]:
    """Alice's and Bob's user ids, and a chat."""
    with db.uow_factory() as uow:
        alice, bob = uow.users.identify("telegram", "1"), uow.users.identify("telegram", "2")
        chat = uow.chats.get_or_create("telegram", "1", "private")
        uow.commit()
    return alice.user_id, bob.user_id, chat.id


def todo(user_id: int, chat_id: int | None, content: str, remind_at: datetime = NOW) -> Todo:
    return Todo(user_id=user_id, chat_id=chat_id, content=content, due_at=remind_at, remind_at=remind_at,
                timezone="Asia/Shanghai", created_at=NOW, updated_at=NOW)


def memory(user_id: int, content: str, type_: str = "fact") -> Memory:
    return Memory(user_id=user_id, type=type_, content=content, source="manual", created_at=NOW, updated_at=NOW)


def a_todo_is_the_users_alone_and_gets_the_databases_defaults(db: Backend) -> dict:
    alice, bob, chat = two_users(db)
    with db.uow_factory() as uow:
        added = uow.todos.add(todo(alice, chat, "drink\x00 water"))
        uow.commit()
    with db.uow_factory() as uow:
        return {"alice": [t.content for t in uow.todos.for_user(alice)], "bob": uow.todos.for_user(bob),
                "bob gets it": uow.todos.get(bob, added.id), "alice gets it": uow.todos.get(alice, added.id).content,
                "defaults": [(t.status, t.source, t.attempts, t.claimed_until, t.sent_at, t.last_error)
                             for t in db.rows(Todo)]}


def only_a_commit_keeps_changes(db: Backend) -> dict:
    alice, _, chat = two_users(db)
    seen = {}
    with db.uow_factory() as uow:
        kept = uow.todos.add(todo(alice, chat, "kept"))
        uow.commit()
        kept.status = "done"  # after the commit, and never committed
        uow.todos.add(todo(alice, chat, "added after the commit"))
    seen["a loaded row stays readable"] = kept.content
    with db.uow_factory() as uow:
        uow.todos.add(todo(alice, chat, "never committed"))
        uow.todos.get(alice, kept.id).status = "cancelled"
    with pytest.raises(ZeroDivisionError), db.uow_factory() as uow:
        uow.todos.get(alice, kept.id).status = "sent"
        raise ZeroDivisionError
    with db.uow_factory() as uow:
        uow.todos.get(alice, kept.id).content = "rolled back"
        uow.rollback()
        seen["after a rollback"] = uow.todos.get(alice, kept.id).content
    seen["rows"] = [(t.content, t.status) for t in db.rows(Todo)]
    with db.uow_factory() as uow:
        uow.todos.get(alice, kept.id).status = "done"
        uow.commit()
    seen["committed"] = [(t.content, t.status) for t in db.rows(Todo)]
    return seen


def due_reminders_are_claimed_under_a_lease(db: Backend) -> dict:
    alice, bob, chat = two_users(db)
    with db.uow_factory() as uow:
        for user, content, at in ((alice, "due", NOW), (bob, "bob's", NOW - timedelta(minutes=1)),
                                  (alice, "later", NOW + timedelta(hours=1))):
            uow.todos.add(todo(user, chat, content, at))
        uow.commit()
    seen = {}
    with db.uow_factory() as uow:
        claimed = uow.todos.claim_due(NOW, lease=timedelta(seconds=30))
        seen["claimed"] = sorted((t.content, t.attempts, t.claimed_until) for t in claimed)
        uow.commit()
    due, bobs = (next(t for t in claimed if t.content == content) for content in ("due", "bob's"))
    with db.uow_factory() as uow:
        seen["within the lease"] = uow.todos.claim_due(NOW + timedelta(seconds=29))
        seen["marks"] = [uow.todos.mark_sent(bob, due.id, 1, NOW), uow.todos.mark_sent(alice, due.id, 2, NOW),
                         uow.todos.mark_sent(alice, due.id, 1, NOW), uow.todos.mark_sent(alice, due.id, 1, NOW)]
        seen["failures"] = [uow.todos.note_failure(bob, bobs.id, 1, "x" * 2000, NOW,
                                                   hold_until=NOW + timedelta(seconds=10)),
                            uow.todos.note_failure(bob, bobs.id, 1, "429", NOW, hold_until=NOW + timedelta(hours=1))]
        seen["refusals"] = [uow.todos.cancel_refused(alice, bobs.id, 1, "blocked", NOW)]
        uow.commit()
    with db.uow_factory() as uow:
        seen["sent"] = [t.content for t in uow.todos.sent_on_platform(alice, "telegram", NOW - timedelta(1), NOW)]
        seen["nothing sent on discord"] = uow.todos.sent_on_platform(alice, "discord", NOW - timedelta(1), NOW)
        seen["locked, whoever's it is"] = uow.todos.lock_for_delivery(bobs.id).content
        uow.todos.move_pending_to_chat(chat, uow.chats.get_or_create("telegram", "2", "private").id)
        uow.commit()
    seen["rows"] = [(t.content, t.status, t.attempts, t.claimed_until, t.sent_at, t.last_error, t.chat_id == chat)
                    for t in db.rows(Todo)]
    return seen


def one_users_backlog_leaves_room_for_everyone_elses_reminders(db: Backend) -> dict:
    alice, bob, chat = two_users(db)
    with db.uow_factory() as uow:
        for n in range(7):
            uow.todos.add(todo(alice, chat, f"old {n}", NOW - timedelta(days=300 - n)))
        uow.todos.add(todo(bob, chat, "bob's", NOW - timedelta(minutes=1)))
        uow.todos.add(todo(alice, chat, "done already", NOW - timedelta(days=400))).status = "done"
        uow.commit()
    seen = {}
    with db.uow_factory() as uow:
        seen["counts"] = (uow.todos.count_pending(alice), uow.todos.count_pending(bob))
        seen["first scan"] = sorted(t.content for t in uow.todos.claim_due(NOW, limit=4, per_user=3))
        seen["second scan"] = sorted(t.content for t in uow.todos.claim_due(NOW, limit=4, per_user=3))
        seen["third scan"] = sorted(t.content for t in uow.todos.claim_due(NOW, limit=4, per_user=3))
        uow.commit()
    with db.uow_factory() as uow:
        seen["deleted"] = uow.todos.delete_for_user(alice)
        uow.commit()
    seen["left"] = [t.content for t in db.rows(Todo)]
    return seen


def memories_are_paged_searched_and_purged_with_their_history(db: Backend) -> dict:
    alice, bob, _ = two_users(db)
    with db.uow_factory() as uow:
        rows = {text: uow.memories.add(memory(alice, text, type_)) for text, type_ in (
            ("Likes Oolong tea", "preference"), ("100% sure_of it", "fact"), ("lives in Beijing", "fact"),
            ("lives in Shanghai", "fact"), ("lives in Hangzhou", "fact"))}
        uow.memories.add(memory(bob, "likes oolong tea too", "preference"))
        rows["lives in Beijing"].superseded_by = rows["lives in Shanghai"].id
        rows["lives in Shanghai"].superseded_by = rows["lives in Hangzhou"].id
        uow.commit()
    name = {row.id: text for text, row in rows.items()}
    seen = {}
    with db.uow_factory() as uow:
        for label, kwargs in {"all": {}, "tea": {"search": "OOLONG"}, "percent": {"search": "100%"},
                              "underscore": {"search": "e_o"}, "wildcard": {"search": "s%i"},
                              "facts, second page": {"type_": "fact", "limit": 1, "offset": 1}}.items():
            page, total = uow.memories.page(alice, **kwargs)
            seen[label] = ([name[m.id] for m in page], total)
        seen["count"] = uow.memories.count_active(alice)
        seen["same content"] = uow.memories.active_with_content(alice, "fact", "lives in Hangzhou").content
        seen["old one"] = [uow.memories.get(alice, rows["lives in Beijing"].id),
                           uow.memories.get(alice, rows["lives in Beijing"].id, include_inactive=True).content]
        seen["bob asks"] = uow.memories.get(bob, rows["lives in Hangzhou"].id)
        chain = uow.memories.with_earlier_versions(alice, [rows["lives in Hangzhou"].id])
        seen["history"] = sorted(name[memory_id] for memory_id in chain)
        seen["bob's history"] = uow.memories.with_earlier_versions(bob, [rows["lives in Hangzhou"].id])
        purged = uow.memories.purge(alice, [rows["lives in Hangzhou"].id])
        seen["purged"] = [name[memory_id] for memory_id in purged]
        uow.commit()
    with db.uow_factory() as uow:  # ON DELETE SET NULL: the row it replaced counts again
        seen["after purging the newest"] = sorted(m.content for m in uow.memories.page(alice, limit=50)[0])
        seen["bob purges alice's"] = uow.memories.purge(bob, [rows["lives in Shanghai"].id])
        seen["alice purges all"] = len(uow.memories.purge(alice))
        uow.commit()
    seen["left"] = [m.content for m in db.rows(Memory)]
    return seen


def forgetting_leaves_tombstones_and_deletes_what_was_learnt(db: Backend) -> dict:
    alice, bob, _ = two_users(db)
    with db.uow_factory() as uow:
        for user in (alice, bob):
            added = uow.memories.add(memory(user, "secret"))
            uow.events.record(user, added.id, "add", "user", after={"content": "secret"}, reason="typed it")
            uow.outbox.add("embed_memory", {"memory_id": added.id}, dedup_key=f"embed:{added.id}", user_id=user)
        uow.commit()
    with db.uow_factory() as uow:
        deleted = uow.memories.purge(alice)
        uow.events.tombstone(alice, None, "forgotten")
        uow.events.record_forgotten(alice, deleted, "user", "forgotten")
        uow.accounts.delete_learnt(alice)
        uow.commit()
    return {"events": [(e.user_id == alice, e.action, e.before, e.after, e.reason) for e in db.rows(MemoryEvent)],
            "jobs": [(j.user_id == alice, j.task, j.status, j.attempts) for j in db.rows(OutboxJob)],
            "memories": [m.user_id == alice for m in db.rows(Memory)]}


def one_time_tokens_are_the_owners_and_single_use(db: Backend) -> dict:
    alice, bob, _ = two_users(db)
    later = NOW + timedelta(minutes=5)
    with db.uow_factory() as uow:
        issued = [uow.tokens.issue("t" * 16, alice, "confirm", {"n": [1]}, now=NOW, expires_at=later),
                  uow.tokens.issue("t" * 16, bob, "confirm", {}, now=NOW, expires_at=later),
                  uow.tokens.issue("old" * 6, alice, "confirm", {}, now=NOW - timedelta(hours=1), expires_at=NOW)]
        uow.commit()
    with db.uow_factory() as uow:
        used = [uow.tokens.use("t" * 16, "link", NOW), uow.tokens.use("t" * 16, "confirm", NOW, user_id=bob),
                uow.tokens.use("old" * 6, "confirm", NOW, user_id=alice)]
        owners = uow.tokens.use("t" * 16, "confirm", NOW, user_id=alice)
        used += [(owners.payload, owners.used_at), uow.tokens.use("t" * 16, "confirm", NOW)]
        uow.tokens.drop_expired(bob, NOW)
        kept = uow.tokens.issue("old" * 6, bob, "confirm", {}, now=NOW, expires_at=later)
        uow.tokens.drop_expired(alice, NOW)
        reissued = uow.tokens.issue("old" * 6, bob, "confirm", {}, now=NOW, expires_at=later)
        uow.tokens.issue("p" * 16, alice, "panel", {}, now=NOW, expires_at=later)
        uow.tokens.issue("q" * 16, bob, "panel", {}, now=NOW, expires_at=later)
        uow.commit()
    with db.uow_factory() as uow:
        uow.tokens.withdraw(alice, "panel", NOW)
        uow.commit()
    with db.uow_factory() as uow:
        withdrawn = [uow.tokens.use("p" * 16, "panel", NOW) is None, uow.tokens.use("q" * 16, "panel", NOW) is None]
    return {"issued": issued, "used": used, "taken while not expired": kept, "free once dropped": reissued,
            "withdrawn": withdrawn}


def users_chats_and_jobs_are_found_again(db: Backend) -> dict:
    alice, bob, chat = two_users(db)
    with db.uow_factory() as uow:
        again = uow.users.identify("telegram", "1", display_name="Al\x00ice", locale="zh-CN-x-very-long-tag")
        discord = uow.users.identify("discord", "1")
        uow.users.set_paused(alice, NOW)
        uow.users.set_timezone(alice, "UTC+05:30")
        told = [uow.users.mark_zone_told(alice, NOW), uow.users.mark_zone_told(alice, NOW)]
        seen = {"same user": again.user_id == alice, "new user": discord.user_id not in (alice, bob),
                "identity": (again.display_name, again.locale), "zone": (uow.users.get(alice).timezone, told),
                "on telegram": uow.users.identity_on(alice, "telegram").platform_user_id,
                "on discord": uow.users.identity_on(alice, "discord"),
                "same chat": uow.chats.get_or_create("telegram", "1", "group", title="t\x00").id == chat,
                "locked": sorted(uow.chats.lock_by_platform_ids("telegram", ["1", "404"])),
                "jobs": [uow.outbox.add("extract_turn", {}, dedup_key="k") is not None,
                         uow.outbox.add("extract_turn", {}, dedup_key="k"),
                         *(uow.outbox.add("extract_turn", {}) is not None for _ in range(2))]}
        uow.commit()
    with db.uow_factory() as uow:
        found = uow.chats.get(chat)
        seen["chat"] = (found.kind, found.title, found.settings)
        seen["paused"] = uow.users.get(alice).paused_at
        seen["nobody"] = (uow.users.get(10**12), uow.chats.get(10**12), uow.users.identity("telegram", "404"))
    return seen


def a_message_ending_an_open_conversation_is_owed_an_answer(db: Backend) -> dict:
    alice, bob, chat = two_users(db)
    with db.uow_factory() as uow:
        for user, words in ((alice, ("hi", "still there?")), (bob, ("answered",))):
            session = uow.sessions.start(user, chat, NOW)
            for number, text in enumerate(words):
                uow.turns.add(ConversationTurn(user_id=user, chat_id=chat, session_id=session.id, role="user",
                                               platform_message_id=f"{user}-{number}", text=text, created_at=NOW))
        uow.turns.add(ConversationTurn(user_id=bob, chat_id=chat, session_id=session.id, role="assistant",
                                       text="yes", created_at=NOW))
        uow.commit()

    def owed(platform: str = "telegram", since: datetime = NOW, **only) -> list:
        with db.uow_factory() as uow:
            return [(row.turn.text, row.chat.platform_chat_id, row.identity.platform_user_id)
                    for row in uow.turns.unanswered(platform, since, 10, **only)]

    seen = {"owed": owed(), "alice": owed(platform_user_id="1"), "bob": owed(platform_user_id="2"),
            "on discord": owed("discord"), "idle since": owed(since=NOW + timedelta(minutes=1))}
    with db.uow_factory() as uow:
        uow.sessions.close(uow.sessions.start(alice, chat, NOW).id, NOW)
        uow.commit()
    seen["closed"] = owed()
    return seen


def usage_is_summed_per_user_day_kind_and_chat(db: Backend) -> dict:
    alice, bob, chat = two_users(db)
    turn = CallUsage("turn", "m", prompt_tokens=100, completion_tokens=20, cached_tokens=60, latency_ms=5)
    guess = CallUsage("turn", "m", prompt_tokens=50, completion_tokens=5, estimated=True)
    with db.uow_factory() as uow:
        uow.usage.record(alice, chat, [turn, guess], NOW, messages=1)
        uow.usage.record(alice, chat, [], NOW, messages=1)
        uow.usage.record(alice, None, [CallUsage("review", "m", 30, 3)], NOW + timedelta(days=1))
        uow.usage.record(bob, chat, [CallUsage("extraction", "m", 10, 1)], NOW)
        uow.commit()
    with db.uow_factory() as uow:
        uow.usage.record(bob, chat, [CallUsage("extraction", "m", 999, 1)], NOW)  # never committed
    since, names, chats = NOW.date(), {alice: "alice", bob: "bob"}, {chat: "chat", None: None}
    with db.uow_factory() as uow:
        return {"alice today": uow.usage.tokens_on(alice, since), "bob today": uow.usage.tokens_on(bob, since),
                "chat today": uow.usage.chat_tokens_on(chat, since),
                "alice by day": uow.usage.by_day(since, user_id=alice), "by kind": uow.usage.by_kind(since),
                "alice's kinds": uow.usage.by_kind(since, user_id=alice),
                "top": [(names[user], totals) for user, totals in uow.usage.top_users(since, 1)],
                "calls": [(names[c.user_id], c.kind, chats[c.chat_id], c.prompt_tokens, c.cached_tokens, c.estimated)
                          for c in db.rows(UsageCall)]}


SCENARIOS = [a_todo_is_the_users_alone_and_gets_the_databases_defaults, only_a_commit_keeps_changes,
             due_reminders_are_claimed_under_a_lease, one_users_backlog_leaves_room_for_everyone_elses_reminders,
             memories_are_paged_searched_and_purged_with_their_history,
             forgetting_leaves_tombstones_and_deletes_what_was_learnt, one_time_tokens_are_the_owners_and_single_use,
             users_chats_and_jobs_are_found_again, a_message_ending_an_open_conversation_is_owed_an_answer,
             usage_is_summed_per_user_day_kind_and_chat]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda scenario: scenario.__name__)
def test_the_fake_sees_what_postgresql_sees(scenario, uow_factory):
    assert scenario(fake_backend()) == scenario(real_backend(uow_factory))
