"""``mnemo bench replay`` end to end, offline, on the system PostgreSQL: two small conversations (en, zh) played
through the product's write path, questions asked at their times, evidence counted by provenance."""

from __future__ import annotations

import json

import pytest

from bench import replay
from bench.fakes.openai_server import FakeOpenAI
from bench.llm_calls import EXTRACTION, SITTING, TURN, request_kind
from shared.settings import Settings

ANN = {"id": "ann", "user": {"name": "Ann", "language": "en", "timezone": "Europe/London"},
       "memories": [{"id": "m1", "at": "2024-01-01T08:00:00Z", "text": "Ann keeps bees on her balcony."}],
       "turns": [{"id": "b0", "at": "2024-03-01T09:00:00Z", "role": "assistant", "text": "Good morning, Ann!"},
                 {"id": "u1", "at": "2024-03-01T09:00:30Z", "role": "user", "text": "My dog is called Biscuit."},
                 {"id": "b1", "at": "2024-03-01T09:01:00Z", "role": "assistant", "text": "What a lovely name."},
                 {"id": "u2", "at": "2024-03-01T09:01:30Z", "role": "user", "text": "The weather is nice today."},
                 {"id": "b2", "at": "2024-03-01T09:02:00Z", "role": "assistant", "text": "Enjoy the sun!"},
                 {"id": "u3", "at": "2024-03-03T20:00:00Z", "role": "user", "text": "I live in Hangzhou."},
                 {"id": "b3", "at": "2024-03-03T20:00:30Z", "role": "assistant", "text": "Hangzhou is beautiful."}],
       "questions": [{"id": "dog", "at": "2024-03-04T10:00:00Z", "text": "What is my dog called?",
                      "evidence": ["u1"], "kind": "single-hop"},
                     {"id": "home", "at": "2024-03-04T10:00:00Z", "text": "Where do I live?", "evidence": ["u3"],
                      "kind": "single-hop"},
                     {"id": "bees", "at": "2024-03-04T10:00:00Z", "text": "What do I keep on my balcony?",
                      "evidence": ["m1"], "kind": "imported"},
                     {"id": "piano", "at": "2024-03-04T10:00:00Z", "text": "我会弹钢琴吗？", "evidence": ["u2"],
                      "kind": "other user's words"}]}
LI = {"id": "li", "user": {"name": "小李", "language": "zh", "timezone": "Asia/Shanghai"},
      "turns": [{"id": "z1", "at": "2024-05-01T12:00:00+08:00", "role": "user", "text": "我会弹钢琴。"},
                {"id": "z2", "at": "2024-05-01T12:00:30+08:00", "role": "assistant", "text": "真厉害！"},
                {"id": "z3", "at": "2024-05-01T12:01:00+08:00", "role": "user", "text": "我养了一只猫，叫咪咪。"},
                {"id": "z4", "at": "2024-05-01T12:01:30+08:00", "role": "assistant", "text": "好可爱的名字。"}],
      "questions": [{"id": "cat", "at": "2024-05-02T12:00:00+08:00", "text": "我的猫叫什么名字？", "evidence": ["z3"],
                     "kind": "single-hop"}]}
FIGURES = {"questions", "evidence_in_prompt", "all_evidence_in_prompt", "context_tokens_mean", "context_tokens_p95",
           "memories_stored", "junk_rate"}


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """No model and no settings from the environment: the offline rules answer and extract."""
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.chdir(tmp_path)


def test_two_conversations_played_through_the_write_path_show_what_each_user_stated(offline, tmp_path,
                                                                                      system_pg_admin_url):
    (tmp_path / "replay.jsonl").write_text("\n".join(json.dumps(c, ensure_ascii=False) for c in (ANN, LI)) + "\n")
    figures = replay.run(tmp_path / "replay.jsonl", tmp_path / "out", system_pg_admin_url)
    written = json.loads((tmp_path / "out" / "replay.json").read_text())
    assert written == json.loads(json.dumps(figures))
    assert set(written["overall"]) == FIGURES
    assert set(written["by_kind"]) == {"single-hop", "imported", "other user's words"}
    assert all(set(part) == FIGURES for part in written["by_kind"].values())
    assert written["overall"]["questions"] == written["baseline"]["overall"]["questions"] == 5
    rows = {row["id"]: row for row in written["questions"]}
    assert [rows[name]["conversation"] for name in ("dog", "cat")] == ["ann", "li"]
    assert rows["dog"]["shown"] == ["u1"], "a memory drawn from that turn"
    assert rows["dog"]["evidence_in_prompt"], "a memory drawn from that turn"
    assert rows["home"]["shown"] == ["u3"], "stated days later, in a sitting of its own"
    assert rows["bees"]["shown"] == ["m1"], "an imported memory is shown as itself"
    assert rows["cat"]["shown"] == ["z3"]
    assert rows["piano"]["shown"] == [], "the other user's words"
    assert not rows["piano"]["evidence_in_prompt"], "the other user's words"
    assert written["overall"]["evidence_in_prompt"] == 0.8
    assert written["overall"]["memories_stored"] >= 4
    assert written["overall"]["junk_rate"] == 0.0
    assert written["worker"]["nights"] >= 3  # sittings read as they close
    assert written["worker"]["jobs_run"] >= 3
    assert 0 < written["overall"]["context_tokens_mean"] <= written["prompt"]["memory_budget_tokens"]
    assert "overall" in (tmp_path / "out" / "report.md").read_text()
    assert rows["bees"]["sides"] == ["memory"]
    assert rows["dog"]["sides"] == ["user"]
    assert written["by_side"]["memory"]["questions"] == 1
    assert "said by user" in (tmp_path / "out" / "report.md").read_text()
    assert rows["dog"]["stated"], "the rules stored what the line stated"
    assert rows["cat"]["stated"], "the rules stored what the line stated"
    assert not rows["bees"]["stated"], "imported, or nothing stated"
    assert not rows["piano"]["stated"], "imported, or nothing stated"
    assert written["stated_facts"]["questions"] == sum(row["stated"] for row in rows.values())
    assert "stated facts" in (tmp_path / "out" / "report.md").read_text()


GENERATED = "A reply the model made up."
TEA = {"id": "tea", "user": {"name": "Bo", "language": "en", "timezone": "UTC"},
       "turns": [{"id": "t1", "at": "2024-06-01T08:00:00Z", "role": "user", "text": "Oolong, every morning, no sugar."},
                 {"id": "t2", "at": "2024-06-01T08:00:30Z", "role": "assistant", "text": "A recorded reply."},
                 {"id": "t3", "at": "2024-06-01T08:01:00Z", "role": "user", "text": "Jazz on vinyl, Sundays."}],
       "questions": [{"id": "drink", "at": "2024-06-02T08:00:00Z", "text": "What do I drink?",
                      "evidence": ["t1"], "kind": "model's memory update"},
                     {"id": "music", "at": "2024-06-02T08:00:00Z", "text": "Which music do I play on vinyl?",
                      "evidence": ["t3"], "kind": "knowledge monitor"}]}


def model_answer(request: dict) -> dict:
    """The fake model: the turn's memory update stores the tea, the knowledge monitor adds the jazz."""
    kind, said = request_kind(request), request["messages"][-1]["content"]
    if kind == TURN:
        entries = [{"type": "preference", "subject": "user", "predicate": "likes_drink", "tier": "long",
                    "content": "Bo drinks oolong every morning"}] if "Oolong" in said else []
        return {"emotion": {"primary": "neutral", "category": "neutral", "confidence": 0.9, "indicators": []},
                "response": GENERATED, "memory_update": {"should_store": bool(entries), "entries": entries},
                "todos": [], "topic": None, "context_variables": {}}
    summary = {"summary": "talked about tea and music", "entities": [], "importance": 1.0,
               "scratchpad": {"current_focus": "", "open_threads": [], "next_steps": []}, "core_summary": None}
    if kind in (EXTRACTION, SITTING):  # a closed sitting's read shares the summary's call
        ops = [{"op": "ADD", "type": "preference", "subject": "user", "predicate": "likes_music", "tier": "long",
                "content": "Bo plays jazz on vinyl on Sundays"}] if "Jazz" in said else [{"op": "SKIP"}]
        return {"operations": ops, **({"episode": summary} if kind == SITTING else {})}
    return summary


def test_with_a_model_configured_its_memory_update_and_extraction_are_measured_and_the_recorded_reply_kept(
        offline, monkeypatch, tmp_path, system_pg_admin_url):
    (tmp_path / "replay.jsonl").write_text(json.dumps(TEA) + "\n")
    with FakeOpenAI() as llm:
        llm.set_responder(model_answer)
        monkeypatch.setenv("LLM_BASE_URL", llm.base_url)
        monkeypatch.setenv("LLM_MODEL", "fake-chat")
        figures = replay.run(tmp_path / "replay.jsonl", tmp_path / "out", system_pg_admin_url)
        bodies = [request.json for request in llm.requests if request.path.endswith("/chat/completions")]
    rows = {row["id"]: row for row in figures["questions"]}
    assert figures["model"] == "fake-chat"
    assert rows["drink"]["shown"] == ["t1"], "the turn's own memory update, by the model"
    assert rows["music"]["shown"] == ["t3"], "the knowledge monitor's ADD, by the model"
    assert figures["overall"]["memories_stored"] == 2
    assistant_lines = [m["content"] for body in bodies for m in body["messages"] if m["role"] == "assistant"]
    assert "A recorded reply." in assistant_lines
    assert GENERATED not in assistant_lines
    assert any(request_kind(body) in (EXTRACTION, SITTING) for body in bodies)
