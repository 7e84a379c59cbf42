"""The quality benchmark end to end on small synthetic files, through the product's own retrieval."""

from __future__ import annotations

import json

import pytest

from bench import quality
from bench.fakes.openai_server import FakeOpenAI
from shared.db.engine import make_engine
from shared.db.vectors import vector_status
from shared.recall.embeddings import OpenAIEmbedder

TURNS = [
    ["Hey Mel! How have you been?", "Busy with the kids and work.", "I went hiking on the weekend."],
    ["Guess what, I signed up for a pottery class yesterday!", "That sounds fun, Caroline.",
     "The weather was lovely today."],
]
MEMORIES = {"1": ("2023-12-25", "Bart在圣诞节晚会上跳舞，感觉非常开心。"),
            "2": ("2023-03-07", "Bart在学校的体育节上获得男子一百米第一名。"),
            "3": ("2023-05-15", "Bart在新开的冰淇淋店尝试了芒果口味的冰淇淋。")}


def write_locomo(path):
    conversation = {"speaker_a": "Caroline", "speaker_b": "Melanie"}
    for session, texts in enumerate(TURNS, start=1):
        conversation[f"session_{session}_date_time"] = f"1:56 pm on {session + 7} May, 2023"
        conversation[f"session_{session}"] = [
            {"speaker": ("Caroline", "Melanie")[i % 2], "dia_id": f"D{session}:{i + 1}", "text": text}
            for i, text in enumerate(texts)]
    conversation["session_1"][2]["blip_caption"] = "a photo of a mountain trail"
    qa = [{"question": "What class did Caroline sign up for?", "answer": "pottery", "evidence": ["D2:1; D9:9"],
           "category": 4},
          {"question": "Is Caroline a pilot?", "adversarial_answer": "no", "evidence": [], "category": 5}]
    path.write_text(json.dumps([{"sample_id": "conv-x", "conversation": conversation, "qa": qa}]))


def write_madial(directory):
    directory.mkdir()
    lines = [json.dumps({key: {"time": time, "scene": "活动类", "emotion": "开心", "event": event, "user-id": 1,
                               "id": key}}, ensure_ascii=False) for key, (time, event) in MEMORIES.items()]
    (directory / "memories-dev.jsonl").write_text("\n".join(lines) + "\n")
    dialogue = {"dialogue": ["<BOD>\n", '<Bart>:"今天好热，我想吃冰淇淋。"\n', '<Assistant>:"什么口味？"\n',
                             '<Bart>:"芒果的！"\n', '<Assistant>:"好呀。"\n', "<EOD>\n"],
                "test-turn": [4], "relevant-id": [3], "user-id": 1, "id": 0}
    (directory / "dialogues-dev.jsonl").write_text(json.dumps(dialogue, ensure_ascii=False) + "\n")


def test_a_quick_run_finds_the_planted_evidence_and_writes_the_figures(tmp_path, system_pg_admin_url):
    write_locomo(tmp_path / "locomo.json")
    write_madial(tmp_path / "madial")
    figures = quality.run(tmp_path / "locomo.json", tmp_path / "madial", system_pg_admin_url, tmp_path / "out",
                          quick=True, hybrid=False)
    written = json.loads((tmp_path / "out" / "quality.json").read_text())
    assert written == json.loads(json.dumps(figures))
    locomo, madial = written["locomo"], written["madial"]
    assert (locomo["conversations"], locomo["memories"], locomo["questions"]) == (1, 6, 1)
    assert set(locomo["mnemo"]) == set(locomo["bm25"]) == set(locomo["bm25_speaker"]) == {"overall", "4 single-hop"}
    assert locomo["bm25_speaker"]["overall"]["recall_any@1"] == 1.0
    assert locomo["mnemo"]["overall"]["recall_any@1"] == 1.0
    assert locomo["mnemo"]["overall"]["session_recall@1"] == 1.0
    assert madial["mnemo"]["recall@1"] == 1.0 and set(madial["bm25"]) >= {"recall@1", "recall@3", "recall@5",
                                                                          "recall@10"}
    assert set(written["headline"]) == {"locomo_evidence_in_prompt", "madial_evidence_in_prompt",
                                        "locomo_recall_any@10", "madial_recall@5"}
    assert "locomo_recall_any@10: Mnemo 1.000" in quality.report(figures)
    assert "locomo_evidence_in_prompt: Mnemo 1.000 vs BM25" in quality.report(figures)
    assert written["hybrid"] == {"skipped": "not asked for"}
    assert "mnemo_hybrid" not in locomo
    assert "locomo_recall_any@10: Mnemo 1.000" in (tmp_path / "out" / "quality.md").read_text()
    assert_the_evidence_is_counted_in_the_products_own_prompt(written)


def assert_the_evidence_is_counted_in_the_products_own_prompt(figures: dict) -> None:
    """At the product's defaults, the planted evidence reaches the prompt, within the memory budget."""
    assert figures["prompt"] == {"retrieval_limit": 5, "memory_budget_tokens": 700}
    locomo, madial = figures["locomo"]["mnemo"]["overall"], figures["madial"]["mnemo"]
    assert locomo["evidence_in_prompt"] == 1.0
    assert madial["evidence_in_prompt"] == 1.0
    assert locomo["memories_in_prompt"] == 5, "the product's retrieval limit, of six memories"
    assert 0 < locomo["context_tokens_mean"] <= locomo["context_tokens_p95"] <= 700
    assert figures["madial"]["bm25"]["evidence_in_prompt"] == figures["madial"]["bm25"]["recall@5"]
    assert figures["headline"]["madial_evidence_in_prompt"]["mnemo"] == 1.0


def test_the_hybrid_pass_embeds_through_the_products_job_and_ranks_through_pgvector(tmp_path, embedded_admin_url):
    write_locomo(tmp_path / "locomo.json")
    write_madial(tmp_path / "madial")
    with FakeOpenAI() as server:
        embedder = OpenAIEmbedder(server.base_url, "test-key", "fake-embed", 384)
        figures = quality.run(tmp_path / "locomo.json", tmp_path / "madial", embedded_admin_url, tmp_path / "out",
                              quick=True, hybrid=True, embedder=embedder)
    assert figures["hybrid"] == {"model": embedder.name}
    assert figures["locomo"]["mnemo_hybrid"]["overall"]["recall_any@1"] == 1.0
    assert figures["locomo"]["mnemo_hybrid"]["overall"]["evidence_in_prompt"] == 1.0
    assert set(figures["madial"]["mnemo_hybrid"]) >= {"recall@1", "recall@3", "recall@5", "recall@10",
                                                      "evidence_in_prompt"}
    assert f"hybrid (lexical + {embedder.name} vectors)" in quality.report(figures)


def test_asking_for_the_hybrid_pass_where_there_is_no_pgvector_is_an_error_not_a_silent_lexical_run(
        tmp_path, system_pg_admin_url):
    write_locomo(tmp_path / "locomo.json")
    write_madial(tmp_path / "madial")
    engine = make_engine(system_pg_admin_url)
    with engine.connect() as connection:
        assert not vector_status(connection).available, "the system PostgreSQL is the one without pgvector"
    engine.dispose()
    with FakeOpenAI() as server, pytest.raises(RuntimeError, match="pgvector"):
        quality.run(tmp_path / "locomo.json", tmp_path / "madial", system_pg_admin_url, tmp_path / "out",
                    quick=True, hybrid=True, embedder=OpenAIEmbedder(server.base_url, "test-key", "fake-embed", 384))
