"""The scale benchmark runs end to end at tiny sizes on the system PostgreSQL (figures are not asserted)."""

from __future__ import annotations

import json
from pathlib import Path

from bench import scale


def test_scale_bench_writes_latencies_for_every_size_and_explains_the_slowest_query(
        system_pg_admin_url: str, tmp_path: Path) -> None:
    figures = scale.run(system_pg_admin_url, sizes=(200, 1000), users=20, out_dir=tmp_path, queries=20, pool=300)

    written = json.loads((tmp_path / "scale.json").read_text())
    assert written == figures
    assert [step["memories"] for step in written["sizes"]] == [200, 1000]
    for step in written["sizes"]:
        for part in ("retrieval", "hot_path", "heaviest_user"):
            assert 0 < step[part]["p50_ms"] <= step[part]["p95_ms"] <= step[part]["p99_ms"] <= step[part]["max_ms"]
        assert step["retrieval"]["count"] == step["hot_path"]["count"] == 20
        assert step["load_s"] > 0
        assert "text_candidates" in step["explain_slowest"]["plans"]
        stored = step["storage"]
        assert stored["memories_per_user"]["max"] >= stored["memories_per_user"]["mean"] > 0
        assert 0 < stored["table_mib"] < stored["total_mib"] <= stored["database_mib"]
        assert stored["index_mib"]
        assert sum(stored["index_mib"].values()) <= stored["indexes_mib"] + 0.5
    assert "target retrieval p99" in scale.report(written)
    assert "memories per user mean" in scale.report(written)


def test_scale_bench_with_rounds_recalls_them_and_explains_the_round_ranking(
        system_pg_admin_url: str, tmp_path: Path) -> None:
    figures = scale.run(system_pg_admin_url, sizes=(300,), rounds=(1500,), users=20, out_dir=tmp_path, queries=20,
                        pool=200)

    step = figures["sizes"][0]
    assert step["rounds"] == 1500
    assert step["rounds_load_s"] > 0
    heaviest = step["heaviest_user"]
    assert heaviest["rounds"] > 1500 / 20
    assert heaviest["memories"] > 0
    assert heaviest["p99_ms"] > 0
    assert step["storage"]["rounds_per_user"]["max"] >= heaviest["rounds"]  # the hot path adds a few
    assert "round_candidates" in step["explain_heaviest"]["plans"]
    assert "target heaviest user's retrieval p99" in scale.report(figures)


def test_round_rows_are_a_keyed_user_turn_then_the_bot_turn_answering_it_in_one_session() -> None:
    import random

    from bench import scale_rounds
    from shared.recall.round_keys import round_search_text

    rng = random.Random(2)
    now = scale.datetime.now(scale.UTC)
    planned = scale_rounds.sittings(300, users=5, rng=rng, now=now)
    sessions, turns = scale_rounds.turn_rows(scale_rounds.round_pool(rng, 40), planned, 101, 7, rng)
    rows = list(turns)
    assert sum(size for _, _, size in planned) == 300
    assert len(rows) == 600
    assert [row[0] for row in rows] == list(range(101, 701))
    assert {session[0] for session in sessions} == {row[3] for row in rows}
    for line, reply in zip(rows[::2], rows[1::2], strict=True):
        assert (line[4], reply[4], reply[8], reply[3], reply[1]) == ("user", "assistant", line[0], line[3], line[1])
        assert line[9] == round_search_text(line[5], reply[5])
        assert reply[9] == ""
        assert line[11] < reply[11]


def test_memory_rows_carry_the_product_tokens_of_their_text() -> None:
    import random

    from shared.search.tokenizer import search_text

    rng = random.Random(1)
    rows = scale.memory_rows(scale.sentence_pool(rng, size=50), users=5, rng=rng, now=scale.datetime.now(scale.UTC))
    for row in (next(rows) for _ in range(200)):
        assert 1 <= row[0] <= 5
        assert row[1] in ("preference", "fact", "event", "person")
        assert set(row[7].split()) == set(search_text([row[2]]).split())
