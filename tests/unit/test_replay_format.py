"""The replay file format, its checks, the steps a conversation is played in, and the dataset converters."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from bench.replay_convert import from_locomo, from_madial
from bench.replay_format import ReplayFormatError, parse_conversation, read_replay, write_replay
from bench.replay_play import steps
from bench.replay_report import group_figures

IDLE = timedelta(minutes=30)


def conversation(**changes) -> dict:
    line = {"id": "c1", "user": {"name": "Ann", "language": "en", "timezone": "Europe/Berlin"},
            "memories": [{"id": "m1", "at": "2024-01-01T09:00:00+01:00", "text": "Ann keeps bees."}],
            "turns": [{"id": "t1", "at": "2024-02-01T10:00:00", "role": "user", "text": "I live in Hangzhou."},
                      {"id": "t2", "at": "2024-02-01T10:00:30", "role": "assistant", "text": "Nice city!"}],
            "questions": [{"id": "q1", "at": "2024-02-02T10:00:00Z", "text": "Where do I live?",
                           "evidence": ["t1", "m1"], "kind": "single-hop"}]}
    return line | changes


def write_lines(path, *lines) -> None:
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")


def test_a_file_is_read_with_times_in_utc_when_they_name_no_offset(tmp_path):
    write_lines(tmp_path / "r.jsonl", conversation(), "", conversation(id="c2"))
    first, second = read_replay(tmp_path / "r.jsonl")
    assert (first.id, second.id, first.user.timezone) == ("c1", "c2", "Europe/Berlin")
    assert first.turns[0].at == datetime(2024, 2, 1, 10, 0, tzinfo=UTC)
    assert first.memories[0].at == datetime(2024, 1, 1, 8, 0, tzinfo=UTC)
    assert first.questions[0].evidence == ("t1", "m1")
    assert read_replay(tmp_path / "r.jsonl", limit=1) == [first]


def test_what_is_written_reads_back_the_same(tmp_path):
    original = [parse_conversation(conversation())]
    write_replay(tmp_path / "out" / "r.jsonl", original)
    assert read_replay(tmp_path / "out" / "r.jsonl") == original


@pytest.mark.parametrize(("line", "reason"), [
    ("{not json", "2: not JSON"),
    (conversation(user={"name": "Ann", "language": "en"}), "user.timezone: a non-empty string"),
    (conversation(user={"name": "Ann", "language": "en", "timezone": "Mars/Base"}), "no IANA time zone"),
    (conversation(turns=[{"id": "t1", "at": "2024-02-01T10:00:00", "role": "bot", "text": "hi"}]),
     "turns[0].role: 'user' or 'assistant'"),
    (conversation(turns=[{"id": "t1", "at": "yesterday", "role": "user", "text": "hi"}]), "no ISO 8601 time"),
    (conversation(turns=[{"id": "m1", "at": "2024-02-01T10:00:00", "role": "user", "text": "hi"}], questions=[]),
     "'m1' is used twice"),
    (conversation(turns=[{"id": "t1", "at": "2024-02-01T10:00:00", "role": "user", "text": "hi"},
                         {"id": "t2", "at": "2024-01-01T10:00:00", "role": "user", "text": "hi"}], questions=[]),
     "turns go in time order"),
    (conversation(questions=[{"id": "q1", "at": "2024-02-02T10:00:00", "text": "?", "evidence": ["t9"],
                              "kind": "x"}]), "evidence 't9' is no turn or memory"),
    (conversation(questions=[{"id": "q1", "at": "2024-02-02T10:00:00", "text": "?", "evidence": [], "kind": "x"}]),
     "questions[0].evidence: a non-empty list"),
    (conversation(memories=[{"id": "m1", "at": "2024-01-01", "text": ""}]), "memories[0].text"),
    (conversation(id="c0"), "conversation id 'c0' again"),
    (["a list"], "the line: an object is wanted"),
])
def test_a_bad_line_is_refused_with_its_number_and_the_reason(tmp_path, line, reason):
    write_lines(tmp_path / "r.jsonl", conversation(id="c0"), line)
    with pytest.raises(ReplayFormatError, match=r"r\.jsonl:2: .*" + _escaped(reason.removeprefix("2: "))):
        read_replay(tmp_path / "r.jsonl")


def _escaped(text: str) -> str:
    import re

    return re.escape(text)


def test_assistant_turns_join_the_reply_to_the_users_line_and_one_opening_a_sitting_stands_alone():
    played = parse_conversation(conversation(turns=[
        {"id": "b0", "at": "2024-02-01T09:59:00", "role": "assistant", "text": "Morning!"},
        {"id": "u1", "at": "2024-02-01T10:00:00", "role": "user", "text": "Hi."},
        {"id": "b1", "at": "2024-02-01T10:00:30", "role": "assistant", "text": "Hello."},
        {"id": "b2", "at": "2024-02-01T10:01:00", "role": "assistant", "text": "How are you?"},
        {"id": "u2", "at": "2024-02-01T10:02:00", "role": "user", "text": "Fine."},
        {"id": "u3", "at": "2024-02-01T10:03:00", "role": "user", "text": "And you?"},
        {"id": "b3", "at": "2024-02-01T12:00:00", "role": "assistant", "text": "Back again."}], questions=[]))
    found = [(step.turn.id, [reply.id for reply in step.replies]) for step in steps(played.turns, IDLE)]
    assert found == [("b0", []), ("u1", ["b1", "b2"]), ("u2", []), ("u3", []), ("b3", [])]


def test_locomo_speaker_a_is_the_user_photos_are_captioned_and_questions_come_the_day_after(tmp_path):
    sample = {"sample_id": "conv-x", "conversation": {
        "speaker_a": "Caroline", "speaker_b": "Melanie",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Melanie", "dia_id": "D1:1", "text": "Hey Caroline!"},
                      {"speaker": "Caroline", "dia_id": "D1:2", "text": "Look at this!",
                       "blip_caption": "a photo of a mountain trail"}],
        "session_2_date_time": "9:00 am on 10 May, 2023",
        "session_2": [{"speaker": "Caroline", "dia_id": "D2:1", "text": "I signed up for pottery."}]},
        "qa": [{"question": "What class?", "evidence": ["D2:1; D9:9"], "category": 4},
               {"question": "Where was the trail?", "evidence": ["D1:2"], "category": 1},
               {"question": "A pilot?", "evidence": ["D1:1"], "category": 5},
               {"question": "Unresolvable", "evidence": ["D7:7"], "category": 2}]}
    (tmp_path / "locomo.json").write_text(json.dumps([sample]))
    [replayed] = from_locomo(tmp_path / "locomo.json")
    assert (replayed.id, replayed.user.name, replayed.user.language) == ("conv-x", "Caroline", "en")
    assert [(t.id, t.role) for t in replayed.turns] == [("D1:1", "assistant"), ("D1:2", "user"), ("D2:1", "user")]
    assert replayed.turns[1].text == "Look at this! [shares a photo: a photo of a mountain trail]"
    assert replayed.turns[1].at - replayed.turns[0].at == timedelta(seconds=30)
    assert [(q.id, q.evidence, q.kind) for q in replayed.questions] == [("q0", ("D2:1",), "single-hop"),
                                                                        ("q1", ("D1:2",), "multi-hop")]
    assert replayed.questions[0].at == datetime(2023, 5, 11, 9, 0, tzinfo=UTC)
    parse_conversation(json.loads(json.dumps(_as_json(replayed))))  # what it writes passes the checks


def test_madial_dialogues_bring_the_archive_and_ask_the_users_last_line_before_the_test_turn(tmp_path):
    (tmp_path / "madial").mkdir()
    memories = [{"1": {"time": "2023-12-25", "event": "Bart在圣诞节晚会上跳舞。", "id": "1"}},
                {"4": {"time": "not a date", "event": "Bart吃了芒果冰淇淋。", "id": "4"}}]
    lines = ["<BOD>\n", '<Bart>:"今天好热。"\n', '<Assistant>:"是啊。"\n', '<Bart>:"我想吃冰淇淋！"\n',
             '<Assistant>:"芒果的？"\n', "<EOD>\n"]
    dialogues = [{"dialogue": lines, "test-turn": [4], "relevant-id": [4, 99], "id": 0},
                 {"dialogue": ["<BOD>\n", '<Bart>:"你好"\n', '<Assistant>:"你好"\n'], "test-turn": [2],
                  "relevant-id": [99], "id": 1}]
    (tmp_path / "madial" / "memories-dev.jsonl").write_text("\n".join(json.dumps(m) for m in memories))
    (tmp_path / "madial" / "dialogues-dev.jsonl").write_text("\n".join(json.dumps(d) for d in dialogues))
    [replayed] = from_madial(tmp_path / "madial")
    assert (replayed.id, replayed.user.name, replayed.user.timezone) == ("madial-0", "Bart", "Asia/Shanghai")
    assert [(m.id, m.at) for m in replayed.memories] == [("1", datetime(2023, 12, 25, tzinfo=UTC)),
                                                         ("4", datetime(2023, 12, 25, tzinfo=UTC))]
    assert [(t.role, t.text) for t in replayed.turns] == [("user", "今天好热。"), ("assistant", "是啊。")]
    [question] = replayed.questions
    assert (question.text, question.evidence, question.kind) == ("我想吃冰淇淋！", ("4",), "madial")
    assert replayed.turns[0].at == datetime(2023, 12, 26, 12, 0, tzinfo=UTC)
    assert question.at > replayed.turns[-1].at


def _as_json(replayed) -> dict:
    from dataclasses import asdict

    return json.loads(json.dumps(asdict(replayed), default=lambda value: value.isoformat()))


def test_evidence_in_the_prompt_counts_any_and_all_of_a_questions_evidence():
    rows = [{"evidence": ["a", "b"], "shown": ["a"], "context_tokens": 10},
            {"evidence": ["c"], "shown": ["c"], "context_tokens": 30},
            {"evidence": ["d"], "shown": [], "context_tokens": 0}]
    figures = group_figures(rows)
    assert figures["questions"] == 3
    assert figures["evidence_in_prompt"] == pytest.approx(2 / 3, abs=1e-4)
    assert figures["all_evidence_in_prompt"] == pytest.approx(1 / 3, abs=1e-4)
    assert (figures["context_tokens_mean"], figures["context_tokens_p95"]) == (13.3, 30)
