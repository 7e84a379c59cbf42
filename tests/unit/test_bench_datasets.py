"""The quality benchmark's loaders and metrics, on tiny hand-made inputs."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from bench.datasets import clean_dialogue_line, load_locomo, load_madial, parse_session_date, split_evidence
from bench.prompt_evidence import Packed
from bench.quality import BM25Ranking, madial_turn
from bench.quality_metrics import (
    in_prompt_figures,
    locomo_figures,
    madial_figures,
    recall_all,
    recall_any,
    recall_share,
)


def test_session_dates_are_parsed_as_utc_times():
    assert parse_session_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_session_date("10:04 am on 19 December, 2023") == datetime(2023, 12, 19, 10, 4, tzinfo=UTC)
    assert parse_session_date("12:09 am on  1 January, 2024") == datetime(2024, 1, 1, 0, 9, tzinfo=UTC)


def test_malformed_evidence_is_split_and_junk_is_dropped():
    assert split_evidence(["D1:3", "D8:6; D9:17", "D", "D:11:26", ""]) == ["D1:3", "D8:6", "D9:17"]


def test_locomo_keeps_categories_1_to_4_and_skips_questions_whose_evidence_resolves_to_no_turn(tmp_path):
    sample = {"sample_id": "c1", "conversation": {
        "speaker_a": "A", "speaker_b": "B",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "Look at this", "blip_caption": "a red kite"},
                      {"speaker": "B", "dia_id": "D1:2", "text": "Nice!"}],
        "session_2_date_time": "9:00 am on 9 May, 2023",
        "session_2": [{"speaker": "A", "dia_id": "D2:1", "text": "I flew it"}]},
        "qa": [{"question": "q1", "answer": "x", "evidence": ["D1:1; D2:1", "D7:7"], "category": 1},
               {"question": "q2", "answer": "x", "evidence": ["D9:9"], "category": 4},
               {"question": "q3", "adversarial_answer": "x", "evidence": ["D1:2"], "category": 5}]}
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([sample]))
    [conversation] = load_locomo(path)
    assert [turn.text for turn in conversation.turns] == ["Look at this a red kite", "Nice!", "I flew it"]
    assert [turn.speaker for turn in conversation.turns] == ["A", "B", "A"]
    assert conversation.turns[2].at == datetime(2023, 5, 9, 9, 0, tzinfo=UTC)
    assert [(q.question, q.evidence) for q in conversation.questions] == [("q1", ("D1:1", "D2:1"))]
    assert conversation.skipped_questions == 1


def test_dialogue_lines_lose_their_speaker_prefix_and_quotes():
    assert clean_dialogue_line('<Bart>:"我今天很开心！"\n') == ("Bart", "我今天很开心！")
    assert clean_dialogue_line("<Assistant>：“好的。”") == ("Assistant", "好的。")
    assert clean_dialogue_line("<BOD>\n") == ("BOD", "")


def test_madial_turns_search_with_the_latest_user_line_and_the_earlier_ones_as_context(tmp_path):
    (tmp_path / "memories-dev.jsonl").write_text(
        json.dumps({"7": {"time": "2023-12-25", "event": "Bart跳舞。", "user-id": 1, "id": "7"}}, ensure_ascii=False))
    dialogue = {"dialogue": ["<BOD>\n", '<Bart>:"一"\n', '<Assistant>:"二"\n', '<Bart>:"三"\n', '<Bart>:"四"\n',
                             "<EOD>\n"], "test-turn": [4, 5], "relevant-id": [7], "user-id": 1, "id": 0}
    (tmp_path / "dialogues-dev.jsonl").write_text(json.dumps(dialogue, ensure_ascii=False) + "\n")
    [memory], [loaded] = load_madial(tmp_path)
    assert (memory.id, memory.at) == ("7", datetime(2023, 12, 25, tzinfo=UTC))
    assert loaded.user_lines == ("一", "三")
    assert loaded.relevant == ("7",)
    assert madial_turn(loaded.user_lines) == ("三", ("一",))


def test_recall_any_all_and_share_count_relevant_items_in_the_top_k():
    ranked = ["a", "b", "c", "d"]
    assert recall_any(ranked, ["c", "z"], 2) == 0.0
    assert recall_any(ranked, ["c", "z"], 3) == 1.0
    assert recall_all(ranked, ["a", "c"], 2) == 0.0
    assert recall_all(ranked, ["a", "c"], 3) == 1.0
    assert recall_share(ranked, ["a", "c", "z", "y"], 3) == 0.5
    assert recall_any([], ["a"], 10) == 0.0


def test_locomo_figures_split_by_category_and_count_sessions():
    nothing = Packed((), 0)
    rows = [(1, ["D1:1", "D2:5"], ("D2:1", "D3:1"), nothing), (4, ["D1:1"], ("D1:1",), nothing)]
    figures = locomo_figures(rows)
    assert set(figures) == {"overall", "1 multi-hop", "4 single-hop"}
    assert figures["overall"]["recall_any@1"] == 0.5
    assert figures["1 multi-hop"]["session_recall@5"] == 0.5
    assert figures["1 multi-hop"]["recall_all@20"] == 0.0
    assert madial_figures([(["1", "2"], ("2", "3"), nothing)])["recall@1"] == 0.0
    assert madial_figures([(["1", "2"], ("2", "3"), nothing)])["recall@3"] == pytest.approx(0.5)


def test_evidence_counts_as_in_the_prompt_only_when_the_prompt_holds_it_whatever_the_ranking_found():
    found_but_cut = (4, ["D1:1", "D1:2"], ("D1:2",), Packed(("D1:1",), 120))
    packed = (4, ["D1:2"], ("D1:2", "D1:3"), Packed(("D1:2",), 80))
    overall = locomo_figures([found_but_cut, packed])["overall"]
    assert overall["recall_any@5"] == 1.0
    assert overall["evidence_in_prompt"] == 0.5
    assert overall["all_evidence_in_prompt"] == 0.0
    assert overall["memories_in_prompt"] == 1.0
    assert overall["context_tokens_mean"] == 100
    assert overall["context_tokens_p95"] == 120


def test_a_madial_dialogue_counts_the_share_of_its_relevant_memories_in_the_prompt():
    figures = madial_figures([(["1", "2", "3"], ("2", "3"), Packed(("1", "2"), 90))])
    assert figures["recall@3"] == 1.0
    assert figures["evidence_in_prompt"] == 0.5
    assert in_prompt_figures([])["evidence_in_prompt"] == 0.0


def test_the_bm25_baseline_ranks_only_documents_that_share_a_term():
    ranking = BM25Ranking(["x", "y", "z"], [["red", "kite"], ["blue", "sea"], ["green", "tea"]])
    assert ranking.rank(["kite"]) == ["x"]
    assert ranking.rank([]) == []
