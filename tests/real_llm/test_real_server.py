"""Mnemo against a real OpenAI-compatible server (llama-cpp-python, Gemma 3 270M) as a user meets it:
``mnemo chat`` with a real worker beside it, every request seen through a recording proxy.

This checks protocol, not the wisdom of a 270M model: no turn goes offline for protocol reasons,
every request is capped and streamed, no raw JSON reaches the user, the worker's extraction jobs
finish, and a turn takes under a minute. Figures go to ``tests/artifacts/real-llm.json``.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import redis
from sqlalchemy import create_engine, select

from shared.db import migrate
from shared.db.models import ConversationTurn
from shared.llm.turn_answer import read_turn_answer
from shared.llm.turn_schema import NOTE_OPEN
from shared.speech.non_answers import non_answer
from tests.fakes.recording_proxy import RecordingProxy
from tests.real_llm.conftest import MODEL_ALIAS, SYSTEM_ROLE, _free_port

pytestmark = pytest.mark.real_llm

MESSAGES = ("Hi! My name is Lin and I live in Lisbon.", "我很喜欢喝茉莉花茶。")
TURN_LIMIT_SECONDS = 60
MAX_OUTPUT_TOKENS = 200
"""Measured on two quiet cores: Gemma 3 270M evaluates about 30 tokens/s, but sampling under the turn's JSON
grammar (checked against its 262k-token vocabulary) brings it to about 6 tokens/s: 319 tokens took 55 s."""
EXTRACTION_WAIT_SECONDS = 300
STARTUP_SECONDS = 20  # the worker, beat and API load beside the console before the person types
BROKER = "redis://127.0.0.1:6379/10"  # a Redis database no other test uses
REPLY = re.compile(r"(Mnemo(?: \(offline\)|（离线）)?)> (.*)")  # bot/console.py OFFLINE_LABEL, per language
FIELD_NAMES = ("memory_update", "should_store", "context_variables", '"response"')
ARTIFACT = Path(__file__).resolve().parents[1] / "artifacts" / "real-llm.json"


class Console:
    """``mnemo chat`` in a child process, read line by line from a thread."""

    def __init__(self, env: dict[str, str]) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "shared.app.cli", "chat", "--user", "lin", "--workers"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True, env=env)
        self.lines: queue.Queue[str] = queue.Queue()
        self.transcript: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, text: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            self.transcript.append(line)
            if text in line:
                return

    def say(self, text: str, timeout: float) -> tuple[str, str, list[str], float]:
        """(label, reply, warning lines, seconds) for one message."""
        started = time.monotonic()
        self.process.stdin.write(text + "\n")
        self.process.stdin.flush()
        while True:
            line = self.lines.get(timeout=max(0.1, started + timeout - time.monotonic()))
            self.transcript.append(line)
            match = REPLY.search(line)
            if match:
                seconds = time.monotonic() - started
                warnings, replaced = self._after_reply()
                final = replaced or match
                return final.group(1), final.group(2), warnings, seconds

    def _after_reply(self) -> tuple[list[str], re.Match[str] | None]:
        """The warning lines under a reply, and the reply that replaced it (words printed as the model wrote them,
        then the offline answer in their place, on a line of its own in a pipe)."""
        time.sleep(0.3)
        found, replaced = [], None
        while not self.lines.empty():
            line = self.lines.get_nowait()
            self.transcript.append(line)
            if line.startswith("  · "):
                found.append(line)
            elif (match := REPLY.search(line)) is not None:
                found, replaced = [], match
        return found, replaced

    def close(self) -> int:
        self.process.stdin.close()
        return self.process.wait(timeout=90)


def _story(console: Console, data_dir: Path) -> str:
    """What a failure needs to be read: the console's transcript and the ends of the chat's and worker's logs."""
    logs = [f"--- {name} ---\n" + "\n".join(path.read_text(errors="replace").splitlines()[-40:])
            for name in ("chat.log", "worker.log") if (path := data_dir / "logs" / name).exists()]
    return "\n".join(["--- console ---", *console.transcript, *logs])


def _is_turn(request) -> bool:
    return not request.body["messages"][0]["content"].startswith("You are the memory keeper")


def _unusable(request) -> bool:
    """The model's answer holds nothing to show, or nothing that answers the message (a number, a link …)."""
    reply = read_turn_answer(request.content(), None).reply
    message = request.body["messages"][-1]["content"].split(f"\n\n{NOTE_OPEN}")[0]
    return not reply or non_answer(reply, message, request.body["messages"][0]["content"]) is not None


def _flush(url: str) -> None:
    client = redis.Redis.from_url(url)
    try:
        client.flushdb()
    finally:
        client.close()


def _wait_extracted(url: str, turns: int) -> list[bool]:
    deadline = time.monotonic() + EXTRACTION_WAIT_SECONDS
    while (done := _extracted(url)).count(True) < turns and time.monotonic() < deadline:
        time.sleep(1)
    return done


def _extracted(url: str) -> list[bool]:
    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as connection:
            return list(connection.scalars(select(ConversationTurn.extracted).where(ConversationTurn.role == "user")))
    finally:
        engine.dispose()


def test_a_console_conversation_and_its_worker_run_on_a_real_llama_cpp_server(real_llm_url, fresh_system_db,
                                                                                tmp_path):
    migrate.upgrade(fresh_system_db)
    with RecordingProxy(real_llm_url) as proxy:
        env = {**os.environ, "DATABASE_URL": fresh_system_db, "LLM_BASE_URL": proxy.base_url,
               "LLM_SYSTEM_ROLE": SYSTEM_ROLE,
               "LLM_MODEL": MODEL_ALIAS, "LLM_TIMEOUT_SECONDS": "90", "LLM_MAX_OUTPUT_TOKENS": str(MAX_OUTPUT_TOKENS),
               "MNEMO_DATA_DIR": str(tmp_path),
               "API_PORT": str(_free_port()), "PYTHONUNBUFFERED": "1", "DEFAULT_TIMEZONE": "Europe/Lisbon",
               "EXTRACTION_BATCH_TURNS": str(len(MESSAGES))}  # the sitting's turns read in one call after the last
        env["REDIS_URL"] = BROKER  # Redis, as compose runs it: the database broker's polling would share the two cores
        _flush(BROKER)
        console = Console(env)
        console.wait_for("Talking to Mnemo", timeout=120)
        time.sleep(STARTUP_SECONDS)
        turns = []
        for text in MESSAGES:
            try:
                turns.append(console.say(text, timeout=TURN_LIMIT_SECONDS * 2))
            except queue.Empty:
                pytest.fail(f"no reply to {text!r} within {TURN_LIMIT_SECONDS * 2} s\n{_story(console, tmp_path)}")
        extracted = _wait_extracted(fresh_system_db, len(MESSAGES))  # one read of the sitting, after its last turn
        exit_code = console.close()
        requests = proxy.chat_requests()

    figures = {"turn_seconds": [round(t[3], 1) for t in turns], "requests": len(requests),
               "statuses": [r.status for r in requests], "replies": [t[1] for t in turns],
               "request_seconds": [round(r.seconds or 0, 1) for r in requests],
               "request_kinds": [r.body["messages"][0]["content"][:30] for r in requests],
               "answers": [r.content()[:300] for r in requests],
               "streamed": [bool(r.body.get("stream")) for r in requests]}
    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    ARTIFACT.write_text(json.dumps(figures, ensure_ascii=False, indent=2))
    print(json.dumps(figures, ensure_ascii=False))
    transcript = "\n".join(console.transcript)

    unusable = [r for r in requests if r.status == 200 and _is_turn(r) and _unusable(r)]
    offline = [turn for turn in turns if turn[0] != "Mnemo"]
    # offline only where the model's own words held nothing to show, or nothing that answers (its quality), never
    # for protocol
    assert len(offline) <= len(unusable), (transcript, [r.content()[:200] for r in requests])
    for _label, reply, warnings, seconds in turns:
        assert not any("unavailable" in w for w in warnings), transcript
        assert reply.strip(), transcript
        assert not reply.lstrip().startswith(("{", "[", "`")), transcript
        assert not any(name in reply for name in FIELD_NAMES), transcript
        assert seconds < TURN_LIMIT_SECONDS, figures
    assert extracted == [True, True], figures
    assert exit_code == 0
    for request in requests:
        assert request.body.get("max_tokens") or request.body.get("max_completion_tokens"), request.body
        assert request.body.get("stream") is True
        refused_schema = request.body.get("response_format", {}).get("type") == "json_schema"
        assert request.status == 200 or refused_schema, (request.status, request.body.get("response_format"))
    memory_keeper = [r for r in requests if not _is_turn(r)]
    assert memory_keeper
    assert all(r.status == 200 for r in memory_keeper)


DOCTOR_SECONDS = 30  # the doctor's own deadline for the model check (shared/app/doctor_llm.py)
DOCTOR_OTHER_SECONDS = 30  # starting, the database and broker checks


@pytest.mark.parametrize("llm_seconds", [None, "240"])
def test_doctor_times_the_real_server_within_its_deadline_and_names_the_output_mode_and_the_timeout(
        real_llm_url, fresh_system_db, llm_seconds):
    migrate.upgrade(fresh_system_db)
    env = {**os.environ, "DATABASE_URL": fresh_system_db, "REDIS_URL": "redis://127.0.0.1:6379/0",
           "LLM_BASE_URL": f"{real_llm_url}/v1", "LLM_MODEL": MODEL_ALIAS, "LLM_TIMEOUT_SECONDS": "90",
           "LLM_SYSTEM_ROLE": SYSTEM_ROLE,
           "LLM_MAX_OUTPUT_TOKENS": str(MAX_OUTPUT_TOKENS)}
    limit = float(llm_seconds or DOCTOR_SECONDS)
    started = time.monotonic()
    doctor = subprocess.run([sys.executable, "-m", "shared.app.cli", "doctor",
                             *(["--llm-seconds", llm_seconds] if llm_seconds else [])],
                            env=env, capture_output=True, text=True, timeout=600)
    seconds = time.monotonic() - started
    line = next(line for line in doctor.stdout.splitlines() if "] llm:" in line)
    print(f"{seconds:.0f} s: {line}")
    assert "output mode json_object+schema, refused: json_schema" in line, line
    assert "first token after" in line, line
    assert "tokens/s" in line, line
    assert "LLM_TIMEOUT_SECONDS=" in line, line
    assert seconds < limit + DOCTOR_OTHER_SECONDS, f"the doctor took {seconds:.0f} s"
    if llm_seconds:  # time enough for a whole turn
        assert "one turn took" in line, line
    assert doctor.returncode == 0, doctor.stdout
