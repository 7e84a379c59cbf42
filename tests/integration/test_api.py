"""The memory API on real PostgreSQL (with and without pgvector), through FastAPI's test client.

Users sign in the way the panel does: a /panel link from the memory-command service, the sign-in
page, its form, the session cookie and the CSRF header.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient

from bot.api.app import create_app
from bot.api.auth import COOKIE, CSRF_HEADER, USER_HEADER, SignInLimiter
from shared.commands.panel import PanelService
from shared.commands.service import Caller, MemoryCommands
from shared.commands.texts import error_text
from shared.db.memory_models import MemoryEvent
from shared.errors import NotFound
from shared.memory.policy import MAX_LABEL_CHARS, MAX_MEMORY_CHARS
from tests.conftest import audit_of

BASE = "http://testserver"
ADMIN = "operator-token-0123456789abcdef"
ANN = Caller("telegram", "1001", display_name="Ann", locale="en")
BOB = Caller("discord", "2002", display_name="Bob", locale="zh-CN")
MEMORIES = "/api/v1/memory/long-term"


@dataclass
class Api:
    app: object
    commands: MemoryCommands
    uow_factory: object

    def client(self) -> TestClient:
        return TestClient(self.app, base_url=BASE)

    def link(self, caller: Caller) -> str:
        return self.commands.panel_link(caller).url

    def signed_in(self, caller: Caller) -> TestClient:
        client = self.client()
        response = client.post("/panel/sign-in", data={"token": token_of(self.link(caller))}, follow_redirects=False)
        assert response.status_code == 303
        assert response.headers["location"] == "/panel/"
        client.headers[CSRF_HEADER] = client.get("/api/v1/session").json()["csrf_token"]
        return client

    def user_id(self, caller: Caller) -> int:
        with self.uow_factory() as uow:
            return uow.users.identity(caller.platform, caller.platform_user_id).user_id


@pytest.fixture
def api(uow_factory) -> Api:
    panel = PanelService(uow_factory, session_lifetime=timedelta(hours=1))
    app = create_app(panel, admin_token=ADMIN, public_url=BASE, limiter=SignInLimiter(per_address=100))
    return Api(app, MemoryCommands(uow_factory, panel_url=BASE), uow_factory)


def token_of(url: str) -> str:
    return parse_qs(urlsplit(url).query)["token"][0]


def add(client: TestClient, content: str, **fields) -> dict:
    response = client.post(MEMORIES, json={"content": content, **fields})
    assert response.status_code == 201, response.text
    return response.json()


# Signing in


def test_the_sign_in_page_does_not_use_the_link_up_and_its_button_signs_in_once(api):
    client = api.client()
    link = api.link(ANN)
    assert link.startswith(f"{BASE}/panel/sign-in?token=")

    for _ in range(2):  # a link preview fetching the page leaves the link working
        page = client.get(urlsplit(link).path + "?" + urlsplit(link).query)
        assert page.status_code == 200
        assert 'method="post"' in page.text
        assert token_of(link) in page.text
        assert page.headers["cache-control"] == "no-store"
        assert page.headers["referrer-policy"] == "same-origin"

    signed_in = client.post("/panel/sign-in", data={"token": token_of(link)}, follow_redirects=False)
    assert signed_in.status_code == 303
    cookie = signed_in.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=")
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    assert "Path=/" in cookie  # the public URL is http here
    assert "Secure" not in cookie
    session = client.get("/api/v1/session").json()
    assert session["user_id"] == api.user_id(ANN)
    assert session["display_name"] == "Ann"
    assert not session["admin"]

    again = api.client().post("/panel/sign-in", data={"token": token_of(link)}, follow_redirects=False)
    assert again.status_code == 400
    assert "/panel" in again.text


def test_a_new_link_voids_the_earlier_one_and_an_expired_link_signs_nobody_in(api, uow_factory):
    first, second = api.link(ANN), api.link(ANN)
    assert api.client().post("/panel/sign-in", data={"token": token_of(first)}).status_code == 400
    late = MemoryCommands(uow_factory, panel_url=BASE, clock=lambda: datetime.now(UTC) - timedelta(minutes=11))
    expired = late.panel_link(BOB)
    assert api.client().post("/panel/sign-in", data={"token": token_of(expired.url)}).status_code == 400
    assert api.client().post("/panel/sign-in", data={"token": token_of(second)}, follow_redirects=False
                             ).status_code == 303


@pytest.mark.parametrize("token", ["", "x", "' OR 1=1 --", "a" * 64, "\u0000" * 40, "<script>alert(1)</script>"])
def test_a_made_up_sign_in_token_gets_the_invalid_link_page(api, token):
    response = api.client().post("/panel/sign-in", data={"token": token})
    assert response.status_code in (400, 422)
    assert "<script>alert" not in response.text


def test_the_sign_in_page_shows_an_invalid_link_in_the_browsers_language_and_escapes_nothing_it_is_given(api):
    page = api.client().get("/panel/sign-in", params={"token": "<b>x</b>"}, headers={"Accept-Language": "zh-CN"})
    assert page.status_code == 200
    assert "登录链接无效" in page.text
    assert "<b>x</b>" not in page.text


def test_sign_in_attempts_are_rate_limited_per_address(uow_factory):
    panel = PanelService(uow_factory, session_lifetime=timedelta(hours=1))
    client = TestClient(create_app(panel, admin_token=None, public_url=BASE, limiter=SignInLimiter(per_address=3)),
                        base_url=BASE)
    answers = [client.post("/panel/sign-in", data={"token": "A" * 43}).status_code for _ in range(4)]
    assert answers == [400, 400, 400, 429]
    limited = client.post("/panel/sign-in", data={"token": "A" * 43})
    assert limited.json()["code"] == "rate_limited"
    assert 1 <= int(limited.headers["retry-after"]) <= 61


@pytest.mark.parametrize("origin", ["https://evil.example", "null", "http://testserver.evil.example"])
def test_sign_in_from_another_site_is_refused(api, origin):
    link = api.link(ANN)
    response = api.client().post("/panel/sign-in", data={"token": token_of(link)}, headers={"Origin": origin})
    assert response.status_code == 403
    assert response.json()["code"] == "bad_origin"
    own = api.client().post("/panel/sign-in", data={"token": token_of(link)}, headers={"Origin": BASE},
                            follow_redirects=False)
    assert own.status_code == 303  # the refused attempt did not use the link up


@pytest.mark.parametrize("host", ["attacker.test:8443", "mnemo.example.org.attacker.test", "[::1]:9", "x"])
def test_a_foreign_host_header_neither_redirects_there_nor_passes_the_origin_check(api, host):
    redirect = api.client().get("/panel", headers={"Host": host}, follow_redirects=False)
    assert redirect.status_code in (301, 302, 307, 308)
    location = redirect.headers["location"]
    assert host not in location
    assert location.startswith("/") or location.startswith(BASE + "/")
    link = api.link(ANN)
    forged = api.client().post("/panel/sign-in", data={"token": token_of(link)},
                               headers={"Host": host, "Origin": f"http://{host}"}, follow_redirects=False)
    assert forged.status_code == 403
    assert forged.json()["code"] == "bad_origin"
    own = api.client().post("/panel/sign-in", data={"token": token_of(link)},
                            headers={"Host": host, "Origin": BASE}, follow_redirects=False)
    assert own.status_code == 303
    assert own.headers["location"] == "/panel/"


def test_signing_out_ends_the_session(api):
    client = api.signed_in(ANN)
    assert client.post("/api/v1/session/sign-out").status_code == 204
    assert client.get("/api/v1/session").status_code == 401


# Who may call


ROUTES = [("get", MEMORIES), ("post", MEMORIES), ("delete", MEMORIES), ("get", f"{MEMORIES}/1"),
          ("put", f"{MEMORIES}/1"), ("delete", f"{MEMORIES}/1"), ("post", f"{MEMORIES}/batch-delete"),
          ("get", f"{MEMORIES}/export"), ("post", f"{MEMORIES}/import"), ("get", "/api/v1/memory/working"),
          ("get", "/api/v1/memory/working/1"), ("get", "/api/v1/reminders"), ("post", "/api/v1/reminders/1/cancel"),
          ("get", "/api/v1/session"), ("get", "/api/v1/memory/forgotten"),
          ("post", "/api/v1/memory/forgotten/1/restore")]


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_every_endpoint_answers_401_without_a_session_or_token(api, method, path):
    client = api.client()
    client.cookies.set(COOKIE, "forged-" + "x" * 40)
    response = getattr(client, method)(path)
    assert response.status_code == 401
    assert response.json()["code"] == "not_signed_in"


def test_changes_need_the_sessions_csrf_token(api):
    client = api.signed_in(ANN)
    csrf = client.headers.pop(CSRF_HEADER)
    assert client.post(MEMORIES, json={"content": "likes tea"}).status_code == 403
    assert client.post(MEMORIES, json={"content": "likes tea"}, headers={CSRF_HEADER: csrf[:-1] + "?"}
                       ).status_code == 403
    assert client.post(MEMORIES, json={"content": "likes tea"}, headers={CSRF_HEADER: csrf}).status_code == 201
    assert client.get(MEMORIES).json()["total"] == 1  # reading needs no token


def test_operators_use_the_admin_token_and_name_the_user(api):
    add(api.signed_in(ANN), "likes oolong tea")
    operator = api.client()
    assert operator.get(MEMORIES, headers={"Authorization": "Bearer wrong-token-000000000000"}).status_code == 401
    bearer = {"Authorization": f"Bearer {ADMIN}"}
    assert operator.get(MEMORIES, headers=bearer).json()["code"] == "user_required"
    assert operator.get(MEMORIES, headers={**bearer, USER_HEADER: "999999"}).status_code == 404
    assert operator.get(MEMORIES, headers={**bearer, USER_HEADER: "12abc"}).status_code == 422
    mine = operator.get(MEMORIES, headers={**bearer, USER_HEADER: str(api.user_id(ANN))}).json()
    assert [m["content"] for m in mine["items"]] == ["likes oolong tea"]
    made = operator.post(MEMORIES, json={"content": "prefers mornings"},
                         headers={**bearer, USER_HEADER: str(api.user_id(ANN))})
    assert made.status_code == 201  # no cookie, so no CSRF token is needed


def test_an_api_without_an_admin_token_refuses_every_bearer(uow_factory, api):
    add(api.signed_in(ANN), "likes tea")
    panel = PanelService(uow_factory, session_lifetime=timedelta(hours=1))
    client = TestClient(create_app(panel, admin_token=None, public_url=BASE), base_url=BASE)
    response = client.get(MEMORIES, headers={"Authorization": "Bearer ", USER_HEADER: str(api.user_id(ANN))})
    assert response.status_code in (401, 403)


def test_a_second_user_gets_404_for_every_id_of_the_first(api):
    ann, bob = api.signed_in(ANN), api.signed_in(BOB)
    memory = add(ann, "my diary password hint is 'blue'")
    api.commands.add_reminder(ANN, "in 20 minutes stretch")
    [reminder] = ann.get("/api/v1/reminders").json()["items"]
    with api.uow_factory() as uow:
        chat = uow.chats.get_or_create("telegram", "1001", "private")
        session_id = uow.sessions.start(api.user_id(ANN), chat.id, datetime.now(UTC)).id
        uow.commit()

    assert bob.get(f"{MEMORIES}/{memory['id']}").status_code == 404
    assert bob.put(f"{MEMORIES}/{memory['id']}", json={"content": "hacked"}).status_code == 404
    assert bob.delete(f"{MEMORIES}/{memory['id']}").status_code == 404
    assert bob.post(f"{MEMORIES}/batch-delete", json={"ids": [memory["id"]]}).json() == {
        "deleted": [], "not_found": [memory["id"]]}
    assert bob.get(f"/api/v1/memory/working/{session_id}").status_code == 404
    assert bob.post(f"/api/v1/reminders/{reminder['id']}/cancel").status_code == 404
    assert bob.get(MEMORIES, params={"q": "diary"}).json()["total"] == 0
    assert bob.delete(MEMORIES).json() == {"deleted": 0}
    assert "diary" not in bob.get(f"{MEMORIES}/export").text

    assert ann.get(f"{MEMORIES}/{memory['id']}").json()["content"] == memory["content"]
    assert ann.get("/api/v1/reminders").json()["items"][0]["status"] == "pending"


# Long-term memories


def test_memories_are_listed_newest_first_with_paging_totals_type_filter_and_search(api):
    client = api.signed_in(ANN)
    for number in range(25):
        add(client, f"note {number:02d}", type="preference" if number % 5 == 0 else "fact")

    first = client.get(MEMORIES, params={"limit": 10}).json()
    assert first["total"] == 25
    assert first["limit"] == 10
    assert first["offset"] == 0
    assert [m["content"] for m in first["items"]][:2] == ["note 24", "note 23"]
    last = client.get(MEMORIES, params={"limit": 10, "offset": 20}).json()
    assert len(last["items"]) == 5
    assert last["total"] == 25
    assert client.get(MEMORIES, params={"offset": 100}).json() == {"items": [], "total": 25, "limit": 20,
                                                                     "offset": 100}
    preferences = client.get(MEMORIES, params={"type": "preference"}).json()
    assert preferences["total"] == 5
    assert {m["type"] for m in preferences["items"]} == {"preference"}
    assert [m["content"] for m in client.get(MEMORIES, params={"q": "note 07"}).json()["items"]] == ["note 07"]
    assert client.get(MEMORIES, params={"q": "100%_"}).json()["total"] == 0


@pytest.mark.parametrize("params", [{"limit": 0}, {"limit": 101}, {"offset": -1}, {"type": "secret"},
                                    {"limit": "ten"}, {"q": "x" * 201}, {"q": "bad\u0000byte"}])
def test_bad_list_parameters_are_422(api, params):
    response = api.signed_in(ANN).get(MEMORIES, params=params)
    assert response.status_code == 422


def test_a_memory_is_created_as_user_stated_and_read_back(api):
    client = api.signed_in(ANN)
    made = add(client, "I drink oolong tea", type="preference", key="Likes Drink", value={"drink": "oolong"},
               confidence=0.8)
    assert made["source"] == "user_stated"
    assert made["key"] == "likes_drink"
    assert made["value"] == {"drink": "oolong"}
    assert made["confidence"] == 0.8
    assert made["access_count"] == 0
    assert made["last_accessed"] is None
    assert client.get(f"{MEMORIES}/{made['id']}").json() == made
    assert client.get(f"{MEMORIES}/{made['id'] + 1000}").json()["code"] == "memory_not_found"
    assert client.get(f"{MEMORIES}/{2**70}").status_code in (404, 422)
    found = api.commands.list_memories(ANN, search="oolong")  # the bots see what the panel added
    assert [item.content for item in found.items] == ["I drink oolong tea"]


def test_a_memory_keeps_its_raw_key_and_gives_how_it_reads_in_each_language_of_the_panel(api):
    client = api.signed_in(BOB)
    liked = add(client, "我爱吃麻辣烫", type="preference", key="likes_麻辣烫")
    pet = add(client, "my tortoise is called Shelly", key="turtle_name")
    plain = add(client, "nothing keyed")

    listed = {item["id"]: item for item in client.get(MEMORIES).json()["items"]}

    assert (liked["key"], liked["key_label"]) == ("likes_麻辣烫", {"en": "likes · 麻辣烫", "zh": "喜欢：麻辣烫"})
    assert pet["key_label"] == {"en": "turtle · name", "zh": "乌龟的名字"}
    assert (plain["key"], plain["key_label"]) == (None, None)
    assert [listed[made["id"]]["key_label"] for made in (liked, pet, plain)] == [
        liked["key_label"], pet["key_label"], None]


@pytest.mark.parametrize("body", [
    {}, {"content": ""}, {"content": "   "}, {"content": "x" * (MAX_MEMORY_CHARS + 1)}, {"content": "nul \u0000 byte"},
    {"content": "ok", "confidence": 1.5}, {"content": "ok", "confidence": -0.1}, {"content": "ok", "type": "secret"},
    {"content": "ok", "extra": 1}, {"content": "ok", "key": "k" * (MAX_LABEL_CHARS + 1)},
    {"content": "ok", "value": {"a": "\u0000"}},
    {"content": "ok", "value": "v" * 5000}, {"content": 12},
])
def test_invalid_memories_are_refused_with_422_and_nothing_is_stored(api, body):
    client = api.signed_in(ANN)
    response = client.post(MEMORIES, json=body)
    assert response.status_code == 422, response.text
    assert client.get(MEMORIES).json()["total"] == 0


def test_invisible_content_is_refused_and_direction_controls_never_reach_a_stored_memory(api):
    client = api.signed_in(ANN)
    for invisible in ("\u200b\u200b", "\u2066\u2069", "\ufeff \u200d"):
        refused = client.post(MEMORIES, json={"content": invisible})
        assert refused.status_code == 422
        assert refused.json()["code"] == "invisible_text"
    made = add(client, "\u202eeno tsrif\u202c first", key="\u2067Order\u2069",
               value={"\u202ekey": ["\u200fvalue", 7]})
    assert (made["content"], made["key"], made["value"]) == ("eno tsrif first", "order", {"key": ["value", 7]})
    changed = client.put(f"{MEMORIES}/{made['id']}", json={"content": "\u200esecond\u200f"}).json()
    assert changed["content"] == "second"
    assert client.put(f"{MEMORIES}/{made['id']}", json={"content": "\u200c"}).json()["code"] == "invisible_text"
    assert client.get(f"{MEMORIES}/{made['id']}").json()["content"] == "second"


@pytest.mark.parametrize("invisible", ["\uffa0\u1160", "\u2800 \u2800", "\u0307\u0323", "\ufe0e", "\u034f\u034f",
                                       "\ufffc", "\ue123\U000f0000", "\U000e0020"])
def test_fillers_lone_marks_and_private_use_are_refused_as_invisible_when_created_or_edited(api, invisible):
    client = api.signed_in(ANN)
    refused = client.post(MEMORIES, json={"content": invisible})
    assert refused.status_code == 422
    assert refused.json()["code"] == "invisible_text"
    made = add(client, "plays the cello")
    assert client.put(f"{MEMORIES}/{made['id']}", json={"content": f" {invisible} "}).json()["code"] == "invisible_text"
    assert [item["content"] for item in client.get(MEMORIES).json()["items"]] == ["plays the cello"]


@pytest.mark.parametrize("length", [65, 97, MAX_LABEL_CHARS])
def test_a_key_longer_than_64_and_up_to_the_documented_limit_is_kept_whole(api, length):
    client = api.signed_in(ANN)
    key = ("quiet_hours_" * 10)[:length]
    made = add(client, "no calls after ten", key=key)
    assert client.get(f"{MEMORIES}/{made['id']}").json()["key"] == key
    too_long = client.put(f"{MEMORIES}/{made['id']}", json={"key": key + "x" * (MAX_LABEL_CHARS + 1 - length)})
    assert too_long.status_code == 422


def test_a_memory_is_edited_in_place_and_the_audit_keeps_before_and_after(api):
    client = api.signed_in(ANN)
    made = add(client, "lives in Berlin", key="lives_in")
    changed = client.put(f"{MEMORIES}/{made['id']}", json={"content": "lives in Hamburg", "type": "fact",
                                                            "confidence": 0.7, "value": ["Hamburg"]})
    assert changed.status_code == 200
    body = changed.json()
    assert body["id"] == made["id"]
    assert body["content"] == "lives in Hamburg"
    assert body["key"] == "lives_in"
    assert body["confidence"] == 0.7
    assert body["value"] == ["Hamburg"]
    assert client.put(f"{MEMORIES}/{made['id']}", json={"key": None}).json()["key"] is None
    assert client.put(f"{MEMORIES}/{made['id']}", json={"confidence": 3}).status_code == 422
    with api.uow_factory() as uow:
        [_add, edit, unkey] = audit_of(uow, api.user_id(ANN), made["id"])
    assert (edit.action, edit.actor) == ("update", "user")
    assert edit.before["content"] == "lives in Berlin"
    assert edit.after["content"] == "lives in Hamburg"
    assert unkey.after["predicate"] is None
    assert [m["content"] for m in client.get(MEMORIES, params={"q": "Hamburg"}).json()["items"]] == [
        "lives in Hamburg"]  # search follows the new text


def test_deleting_one_memory_forgets_it_and_leaves_a_tombstone(api):
    client = api.signed_in(ANN)
    made = add(client, "secret crush on Sam")
    assert client.delete(f"{MEMORIES}/{made['id']}").json() == {"deleted": 1}
    assert client.get(f"{MEMORIES}/{made['id']}").status_code == 404
    assert client.delete(f"{MEMORIES}/{made['id']}").status_code == 404
    with api.uow_factory() as uow:
        events = uow.session.query(MemoryEvent).filter_by(memory_id=made["id"]).all()
    assert {e.action for e in events} == {"add", "forget"}
    assert all(e.before is None and e.after is None for e in events)
    assert "Sam" not in json.dumps([e.reason for e in events])


def test_batch_delete_forgets_the_users_ids_and_reports_the_rest(api):
    client = api.signed_in(ANN)
    ids = [add(client, f"fact {n}")["id"] for n in range(3)]
    response = client.post(f"{MEMORIES}/batch-delete", json={"ids": [ids[0], ids[2], 999999, ids[0]]}).json()
    assert response == {"deleted": sorted([ids[0], ids[2]]), "not_found": [999999]}
    assert [m["id"] for m in client.get(MEMORIES).json()["items"]] == [ids[1]]
    assert client.post(f"{MEMORIES}/batch-delete", json={"ids": []}).status_code == 422
    assert client.post(f"{MEMORIES}/batch-delete", json={"ids": list(range(1, 502))}).status_code == 422


def test_deleting_all_long_term_memories_keeps_the_working_memory(api):
    client = api.signed_in(ANN)
    for n in range(3):
        add(client, f"fact {n}")
    with api.uow_factory() as uow:
        chat = uow.chats.get_or_create("telegram", "1001", "private")
        session = uow.sessions.start(api.user_id(ANN), chat.id, datetime.now(UTC))
        session.current_topic = "travel"
        uow.commit()
    assert client.delete(MEMORIES).json() == {"deleted": 3}
    assert client.get(MEMORIES).json()["total"] == 0
    assert client.get(f"/api/v1/memory/working/{session.id}").json()["current_topic"] == "travel"


# Export and import


@pytest.mark.parametrize("links, current", [
    ({5: 5}, {"m5"}),                              # replaces itself
    ({3: 8, 8: 3}, {"m8"}),                        # two replace each other
    ({2: 4, 4: 9, 9: 2, 6: 4}, {"m9"}),            # a loop of three, and one more leading into it
    ({1: 7, 7: 1, 11: 12, 12: 11}, {"m7", "m12"}),  # two loops
])
def test_an_imported_loop_of_superseded_by_is_broken_so_every_memory_is_read_and_deleted_by_id(api, links, current):
    ids = sorted({*links, *links.values()})
    document = {"format": "mnemo-export", "version": 2, "memories": [
        {"id": local, "type": "fact", "content": f"m{local}", "superseded_by": links.get(local)} for local in ids]}
    client = api.signed_in(ANN)
    report = client.post(f"{MEMORIES}/import", files={"file": ("loops.json", json.dumps(document), "application/json")})
    assert report.status_code == 200, report.text
    dropped = [reason for reason in report.json()["refused"] if "the link was dropped" in reason]
    assert len(dropped) == len(current)
    shown = {item["content"]: item["id"] for item in client.get(MEMORIES).json()["items"]}
    assert set(shown) == current
    for content, memory_id in shown.items():
        assert client.get(f"{MEMORIES}/{memory_id}").json()["content"] == content
        assert client.delete(f"{MEMORIES}/{memory_id}").json() == {"deleted": 1}
    assert client.get(MEMORIES).json()["total"] == 0


def test_export_downloads_the_users_data_and_import_loads_it_into_another_account(api):
    ann, bob = api.signed_in(ANN), api.signed_in(BOB)
    add(ann, "likes oolong tea", type="preference", key="likes_drink")
    exported = ann.get(f"{MEMORIES}/export")
    assert exported.status_code == 200
    assert exported.headers["content-type"].startswith("application/json")
    assert exported.headers["content-disposition"].startswith("attachment; filename=")
    assert "likes oolong tea" in exported.json()["memories"][0]["content"]

    report = bob.post(f"{MEMORIES}/import", files={"file": ("mnemo.json", exported.content, "application/json")})
    assert report.status_code == 200, report.text
    assert report.json()["imported"]["memories"] == 1
    assert report.json()["refused"] == []
    assert [m["content"] for m in bob.get(MEMORIES).json()["items"]] == ["likes oolong tea"]
    again = bob.post(f"{MEMORIES}/import", files={"file": ("mnemo.json", exported.content, "application/json")})
    assert again.json()["duplicates"] >= 1
    assert bob.get(MEMORIES).json()["total"] == 1


@pytest.mark.parametrize(("content", "code"), [(b"", "import_empty"), (b"{not json", "import_not_json"),
                                               (b'{"format": "other"}', "import_wrong_format"),
                                               (b"\xff\xfe\x00", "import_not_json")])
def test_a_bad_import_file_is_refused_with_its_reason(api, content, code):
    response = api.signed_in(ANN).post(f"{MEMORIES}/import", files={"file": ("x.json", content, "application/json")})
    assert response.status_code == 422
    assert response.json()["code"] == code


# Working memory and reminders


def test_working_memory_of_a_session_and_404_when_there_is_none(api):
    client = api.signed_in(ANN)
    assert client.get("/api/v1/memory/working").json() == {"items": []}
    assert client.get("/api/v1/memory/working/12345").json()["code"] == "session_not_found"
    with api.uow_factory() as uow:
        chat = uow.chats.get_or_create("telegram", "1001", "private")
        session = uow.sessions.start(api.user_id(ANN), chat.id, datetime.now(UTC))
        session.context_variables = {"city": "Berlin"}
        uow.commit()
    working = client.get(f"/api/v1/memory/working/{session.id}").json()
    assert working["session_id"] == session.id
    assert working["context_variables"] == {"city": "Berlin"}
    assert working["recent_turns"] == []
    assert working["closed_at"] is None
    assert [w["session_id"] for w in client.get("/api/v1/memory/working").json()["items"]] == [session.id]


def test_reminders_are_listed_and_a_pending_one_can_be_cancelled_once(api):
    client = api.signed_in(ANN)
    api.commands.add_reminder(ANN, "in 20 minutes stretch")
    [reminder] = client.get("/api/v1/reminders").json()["items"]
    assert reminder["content"] == "stretch"
    assert reminder["status"] == "pending"
    cancelled = client.post(f"/api/v1/reminders/{reminder['id']}/cancel").json()
    assert cancelled["status"] == "cancelled"
    again = client.post(f"/api/v1/reminders/{reminder['id']}/cancel")
    assert again.status_code == 422
    assert again.json()["code"] == "reminder_not_pending"
    assert client.get("/api/v1/reminders").json() == {"items": []}


def test_the_time_zone_is_read_and_set_like_timezone_and_reminders_show_their_deadline(api):
    client = api.signed_in(ANN)
    api.commands.add_reminder(ANN, "tomorrow 8am the invoice is due")
    assert client.get("/api/v1/settings").json() == {"timezone": None, "zone": "UTC", "zone_label": "UTC",
                                                     "default_timezone": "UTC"}
    changed = client.put("/api/v1/settings/timezone", json={"timezone": "Nairobi"}).json()
    assert (changed["timezone"], changed["zone_label"], changed["moved"]) == ("Africa/Nairobi",
                                                                              "Africa/Nairobi (UTC+03:00)", 1)
    [reminder] = client.get("/api/v1/reminders").json()["items"]
    assert (reminder["kind"], reminder["timezone"]) == ("deadline", "Africa/Nairobi")
    assert reminder["deadline"].endswith("T08:00:00+03:00")
    assert reminder["due_at"].endswith("T07:00:00+03:00")
    for body, code in (({"timezone": "Atlantis"}, "zone_unknown"), ({"timezone": "Brazil"}, "zone_several"),
                       ({"timezone": 8}, "invalid"), ({"timezone": "x" * 65}, "invalid"), ({}, "invalid")):
        refused = client.put("/api/v1/settings/timezone", json=body)
        assert (refused.status_code, refused.json()["code"]) == (422, code)
    assert api.commands.timezone(ANN).after.name == "Africa/Nairobi"
    assert api.commands.timezone(BOB).after.own is False
    assert client.put("/api/v1/settings/timezone", json={"timezone": None}).json()["timezone"] is None
    no_csrf = api.client()
    no_csrf.cookies = client.cookies
    assert no_csrf.put("/api/v1/settings/timezone", json={"timezone": "Lima"}).status_code == 403


def test_follow_ups_are_off_until_turned_on_in_the_panel_which_sets_quiet_hours_too(api):
    client = api.signed_in(ANN)
    assert client.get("/api/v1/settings/followups").json() == {"on": False, "quiet_hours": "22-9", "threads": []}
    changed = client.put("/api/v1/settings/followups", json={"on": True, "quiet_hours": "23-7"}).json()
    assert (changed["on"], changed["quiet_hours"]) == (True, "23-7")
    assert api.commands.followups(ANN).on and not api.commands.followups(BOB).on
    refused = client.put("/api/v1/settings/followups", json={"quiet_hours": "late"})
    assert (refused.status_code, refused.json()["code"]) == (422, "followups_quiet_hours")
    assert client.put("/api/v1/settings/followups", json={"on": False}).json()["on"] is False
    assert client.get("/api/v1/settings/followups").json()["quiet_hours"] == "23-7"  # the refusal changed nothing
    no_csrf = api.client()
    no_csrf.cookies = client.cookies
    assert no_csrf.put("/api/v1/settings/followups", json={"on": True}).status_code == 403


# The document and the headers


def test_the_openapi_document_lists_the_seed_endpoints(api):
    paths = api.client().get("/api/openapi.json").json()["paths"]
    assert {MEMORIES, f"{MEMORIES}/{{memory_id}}", f"{MEMORIES}/batch-delete", f"{MEMORIES}/export",
            f"{MEMORIES}/import", "/api/v1/memory/working/{session_id}", "/api/v1/reminders"} <= set(paths)
    assert set(paths[MEMORIES]) == {"get", "post", "delete"}


def test_answers_carry_security_headers_and_the_api_is_not_cached(api):
    response = api.signed_in(ANN).get(MEMORIES)
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    assert "script-src 'self'" in response.headers["content-security-policy"]
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["cache-control"] == "no-store"
    assert api.client().get("/api/v1/health").json() == {"status": "ok"}


def test_a_browser_asking_for_the_favicon_gets_an_empty_answer_not_a_404(api):
    response = api.client().get("/favicon.ico")
    assert response.status_code == 204
    assert response.content == b""




def test_an_errors_detail_comes_in_the_language_the_client_asks_for_and_its_code_in_none(api):
    ann = api.signed_in(ANN)
    missing = f"{MEMORIES}/987654"
    english = ann.get(missing).json()
    chinese = ann.get(missing, headers={"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.8"}).json()
    assert english["code"] == chinese["code"] == "memory_not_found"
    assert english["detail"] == error_text(NotFound("memory_not_found"), "en")
    assert english["detail"].isascii()
    assert chinese["detail"] == error_text(NotFound("memory_not_found"), "zh")
    assert not chinese["detail"].isascii()
    assert ann.get(missing, headers={"Accept-Language": "fr-FR"}).json()["detail"] == english["detail"]
