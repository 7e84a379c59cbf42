"""The caller's rounds of conversation through the API (FastAPI's test client on real PostgreSQL): a page of
what was said, newest first and searchable by either side, deleting one round (both sides), and nothing of
another user's to list or delete (404, exactly like a missing one)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.api.app import create_app
from bot.api.auth import SignInLimiter
from shared.commands.panel import PanelService
from shared.commands.service import MemoryCommands
from shared.db.memory_models import Memory
from shared.db.models import ConversationTurn
from tests.integration.test_api import ADMIN, ANN, BASE, BOB, Api

ROUNDS = "/api/v1/conversation/rounds"
SAID = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


@pytest.fixture
def api(uow_factory) -> Api:
    panel = PanelService(uow_factory, session_lifetime=timedelta(hours=1))
    app = create_app(panel, admin_token=ADMIN, public_url=BASE, limiter=SignInLimiter(per_address=100))
    return Api(app, MemoryCommands(uow_factory, panel_url=BASE), uow_factory)


def a_round(api: Api, caller, line: str, reply: str, minutes: int = 0) -> int:
    """The caller's line and the bot's reply in their private chat; the line's id."""
    api.link(caller)  # makes the user
    with api.uow_factory() as uow:
        user_id = uow.users.identity(caller.platform, caller.platform_user_id).user_id
        chat = uow.chats.get_or_create(caller.platform, caller.platform_user_id, "private")
        said = uow.turns.add(ConversationTurn(user_id=user_id, chat_id=chat.id, role="user", text=line,
                                              created_at=SAID + timedelta(minutes=minutes)))
        uow.turns.add(ConversationTurn(user_id=user_id, chat_id=chat.id, role="assistant", text=reply,
                                       reply_to_turn_id=said.id, created_at=SAID + timedelta(minutes=minutes)))
        uow.commit()
        return said.id


def test_the_caller_sees_their_rounds_newest_first_with_both_sides_and_a_search_of_either_side(api):
    a_round(api, ANN, "I adopted a greyhound", "Greyhounds are gentle souls.")
    a_round(api, ANN, "Any film tonight?", "Try Spirited Away.", minutes=5)
    ann = api.signed_in(ANN)
    page = ann.get(ROUNDS, params={"limit": 1}).json()
    assert (page["total"], page["limit"], page["offset"]) == (2, 1, 0)
    [newest] = page["items"]
    assert (newest["line"], newest["reply"], newest["recalled"]) == ("Any film tonight?", "Try Spirited Away.", True)
    assert newest["said_at"].startswith("2026-11-20T09:05")
    by_reply = ann.get(ROUNDS, params={"q": "gentle"}).json()
    assert [r["line"] for r in by_reply["items"]] == ["I adopted a greyhound"]


def test_deleting_a_round_removes_both_sides_and_keeps_the_memory_drawn_from_it(api):
    line_id = a_round(api, ANN, "I live in Berlin", "Berlin is lovely.")
    with api.uow_factory() as uow:
        user_id = uow.turns.get(api.user_id(ANN), line_id).user_id
        memory = uow.memories.add(Memory(user_id=user_id, type="fact", content="Lives in Berlin", source="user_stated",
                                         source_turn_id=line_id))
        uow.commit()
    ann = api.signed_in(ANN)
    assert ann.delete(f"{ROUNDS}/{line_id}").json() == {"deleted": 1}
    assert ann.get(ROUNDS).json()["total"] == 0
    assert ann.delete(f"{ROUNDS}/{line_id}").status_code == 404
    with api.uow_factory() as uow:
        kept = uow.memories.get(user_id, memory.id)
        assert kept is not None
        assert kept.source_turn_id is None


def test_one_user_cannot_list_or_delete_another_users_round(api):
    bobs = a_round(api, BOB, "My violin recital is Friday", "Good luck!")
    a_round(api, ANN, "hello", "Hello Ann.")
    ann = api.signed_in(ANN)
    assert [r["line"] for r in ann.get(ROUNDS).json()["items"]] == ["hello"]
    assert ann.get(ROUNDS, params={"q": "violin"}).json() == {"items": [], "total": 0, "limit": 20, "offset": 0}
    refused = ann.delete(f"{ROUNDS}/{bobs}")
    assert refused.status_code == 404
    assert refused.json()["code"] == "round_not_found"
    bob = api.signed_in(BOB)
    assert [r["line"] for r in bob.get(ROUNDS).json()["items"]] == ["My violin recital is Friday"]


def test_a_bad_page_or_id_is_refused_and_signing_in_is_needed(api):
    ann = api.signed_in(ANN)
    assert ann.get(ROUNDS, params={"limit": 0}).status_code == 422
    assert ann.delete(f"{ROUNDS}/0").status_code == 404
    assert api.client().get(ROUNDS).status_code == 401
    operator = api.client().get(ROUNDS, headers={"Authorization": f"Bearer {ADMIN}"})
    assert operator.status_code == 422  # an operator names the user
