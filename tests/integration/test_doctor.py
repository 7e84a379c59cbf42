"""`mnemo doctor`: a clear verdict per service and a non-zero exit when something is broken."""

from __future__ import annotations

import re
import stat
import time

import pytest

from bench.fakes.openai_server import FakeOpenAI
from shared.app.cli import main
from shared.app.processes import background_processes
from shared.db import migrate
from shared.llm.speed import TIMEOUT_STEP_SECONDS, advised_timeout
from shared.settings import Settings

API_KEY = "sk-doctor-test-secret-0123456789"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, tmp_path):
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.delenv("COMPOSE_PROFILES", raising=False)
    monkeypatch.setenv("MNEMO_IN_CONTAINER", "0")  # this machine may itself be a container: say which case is tested
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MNEMO_DATA_DIR", str(tmp_path / "data"))


@pytest.fixture
def llm():
    with FakeOpenAI(api_key=API_KEY, models=("mnemo-chat",)) as server:
        yield server


@pytest.fixture
def embedded_set_up(monkeypatch, data_dir):
    """No DATABASE_URL: the doctor checks the embedded server, one an earlier run set up (no initdb here)."""
    monkeypatch.setenv("MNEMO_DATA_DIR", str(data_dir))


def run_doctor(capsys, *arguments: str) -> tuple[int, str]:
    code = main(["doctor", *arguments])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def llm_line(out: str) -> str:
    return next(line for line in out.splitlines() if "] llm:" in line).strip()


def test_a_healthy_setup_is_ready_and_masks_every_secret(monkeypatch, capsys, migrated_system_db, llm):
    monkeypatch.setenv("DATABASE_URL", migrated_system_db)
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:6379/0")
    monkeypatch.setenv("LLM_BASE_URL", llm.base_url)
    monkeypatch.setenv("LLM_API_KEY", API_KEY)
    monkeypatch.setenv("LLM_MODEL", "mnemo-chat")
    monkeypatch.setenv("TELEGRAM_TOKEN", "123456:telegram-secret-token")
    code, out = run_doctor(capsys)
    assert code == 0, out
    assert "[OK  ] database: DATABASE_URL, PostgreSQL 15" in out
    assert "[INFO] pgvector: not installed: lexical search only" in out
    assert "[OK  ] broker: Redis answers PING" in out
    assert "[OK  ] llm:" in out
    assert "Verdict: ready" in out
    assert API_KEY not in out
    assert "telegram-secret-token" not in out


def test_a_wrong_value_stops_with_the_variable_named_and_exit_code_2(monkeypatch, capsys):
    monkeypatch.setenv("MEMORY_RETRIEVAL_LIMIT", "many")
    code, out = run_doctor(capsys)
    assert code == 2
    assert "MEMORY_RETRIEVAL_LIMIT" in out
    assert ".env.example" in out


def test_unreachable_database_broker_and_llm_each_fail_with_a_reason(monkeypatch, capsys):
    monkeypatch.setenv("DATABASE_URL", "postgresql://postgres@127.0.0.1:1/nowhere")
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")
    code, out = run_doctor(capsys)
    assert code == 1
    assert "[FAIL] database: cannot connect to the DATABASE_URL" in out
    assert "[FAIL] broker: Redis at REDIS_URL does not answer" in out
    assert "[FAIL] llm: LLM_BASE_URL=http://127.0.0.1:9/v1 does not answer" in out
    assert "NOT READY, failing: database, broker, llm" in out


def test_a_rejected_api_key_and_an_unknown_model_are_reported(monkeypatch, capsys, llm):
    monkeypatch.setenv("DATABASE_URL", "postgresql://postgres@127.0.0.1:1/nowhere")
    monkeypatch.setenv("LLM_BASE_URL", llm.base_url)
    monkeypatch.setenv("LLM_API_KEY", "sk-wrong-key-000000000")
    code, out = run_doctor(capsys)
    assert code == 1
    assert "refused the API key (HTTP 401)" in out
    monkeypatch.setenv("LLM_API_KEY", API_KEY)
    monkeypatch.setenv("LLM_MODEL", "gpt-nonexistent")
    code, out = run_doctor(capsys)
    assert "[WARN] llm: endpoint answers, but LLM_MODEL='gpt-nonexistent'" in out


def test_an_unmigrated_database_fails_with_the_command_that_fixes_it(monkeypatch, capsys, fresh_system_db):
    monkeypatch.setenv("DATABASE_URL", fresh_system_db)
    code, out = run_doctor(capsys)
    assert code == 1
    assert f"[FAIL] schema: at nothing, head is {migrate.head_revision()}: run `mnemo db upgrade`" in out
    assert "[OK  ] broker: REDIS_URL unset: Celery uses the PostgreSQL database" in out


@pytest.mark.parametrize(("personality", "mode"), [("openai", "json_schema"), ("llama.cpp", "json_object+schema"),
                                                   ("qwen-thinking", "text")])
def test_the_llm_check_probes_one_turn_and_names_the_output_mode_that_works(monkeypatch, capsys, embedded_set_up,
                                                                          personality, mode):
    with FakeOpenAI(personality=personality, models=("mnemo-chat",)) as server:
        server.set_responder(lambda _request: {"response": "Lisbon by the ocean sounds wonderful!"})
        monkeypatch.setenv("LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("LLM_MODEL", "mnemo-chat")
        _code, out = run_doctor(capsys)
    line = next(line for line in out.splitlines() if "] llm:" in line)
    assert line.strip().startswith("[OK  ] llm:")
    assert f"output mode {mode}" in line
    assert "one turn took" in line
    assert "Lisbon by the ocean" in line


def test_a_model_that_answers_nothing_usable_is_a_warning_that_says_so(monkeypatch, capsys, embedded_set_up):
    with FakeOpenAI(personality="empty-object", models=("mnemo-chat",)) as server:
        monkeypatch.setenv("LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("LLM_MODEL", "mnemo-chat")
        _code, out = run_doctor(capsys)
    line = next(line for line in out.splitlines() if "] llm:" in line)
    assert line.strip().startswith("[WARN] llm:")
    assert "offline replies" in line


def test_passwords_in_any_url_are_masked_in_the_configuration_and_in_the_verdicts(monkeypatch, capsys):
    monkeypatch.setenv("DATABASE_URL", "postgresql://127.0.0.1:1/nowhere?user=ops&password=db-Secr3t-pw")
    monkeypatch.setenv("REDIS_URL", "redis://:redis-Secr3t-pw@127.0.0.1:1/0")
    monkeypatch.setenv("LLM_BASE_URL", "http://gate:llm-Secr3t-pw@127.0.0.1:9/v1?token=llm-query-Secr3t")
    monkeypatch.setenv("DISCORD_TOKEN", "MTA-discord-token-for-the-doctor.Gx7")
    code, out = run_doctor(capsys)
    assert code == 1
    assert "LLM_BASE_URL = http://gate:***@127.0.0.1:9/v1?token=***" in out
    assert "[FAIL] llm: LLM_BASE_URL=http://gate:***@127.0.0.1:9/v1?token=*** does not answer" in out
    for secret in ("db-Secr3t-pw", "redis-Secr3t-pw", "llm-Secr3t-pw", "llm-query-Secr3t", "discord-token", "MTA"):
        assert secret not in out


def test_a_companion_process_logs_to_a_file_only_its_owner_can_read(monkeypatch, tmp_path):
    url = "postgresql://mnemo:companion-Secr3t@127.0.0.1:1/nowhere"
    with background_processes(url, tmp_path / "logs", roles=("doctor",)) as [doctor]:
        assert doctor.wait(timeout=120) == 1
    log = tmp_path / "logs" / "doctor.log"
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert "[FAIL] database" in log.read_text()
    assert "companion-Secr3t" not in log.read_text()


def test_mnemo_maintenance_runs_as_of_a_date_and_the_doctor_shows_that_runs_report(monkeypatch, capsys,
                                                                                     migrated_system_db):
    monkeypatch.setenv("DATABASE_URL", migrated_system_db)
    _, out = run_doctor(capsys)
    assert "maintenance: no daily run yet" in out
    assert main(["maintenance", "--now", "2027-06-01"]) == 0
    assert "maintenance as of 2027-06-01T00:00:00+00:00: faded=0 binned=0 purged=0" in capsys.readouterr().out
    _, out = run_doctor(capsys)
    assert "maintenance: last run finished" in out
    assert "as of 2027-06-01T00:00: faded 0, binned 0, purged 0" in out


SLOW_REPLY = {"response": "Lisbon by the ocean sounds wonderful! " * 20}


def test_a_slow_model_is_timed_within_the_doctors_own_deadline_and_told_what_timeout_it_needs(
        monkeypatch, capsys, embedded_set_up):
    with FakeOpenAI(models=("mnemo-chat",), stream_chunk_delay=0.8) as server:  # 4 tokens a chunk: 5 tokens/s
        server.set_responder(lambda _request: SLOW_REPLY)
        server.queue_reply(SLOW_REPLY, delay=1.0)  # the first token after about a second
        monkeypatch.setenv("LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("LLM_MODEL", "mnemo-chat")
        started = time.monotonic()
        code, out = run_doctor(capsys, "--llm-seconds", "10")
        seconds = time.monotonic() - started
    line = llm_line(out)
    assert line.startswith("[WARN] llm:"), line
    assert "first token after 1." in line, line
    assert "tokens/s" in line, line
    typical = float(re.search(r"a typical turn \(about \d+ tokens\) takes about (\d+) s", line).group(1))
    advised = int(re.search(r"set LLM_TIMEOUT_SECONDS=(\d+)", line).group(1))
    assert advised > 30, line
    assert abs(advised - advised_timeout(typical)) <= TIMEOUT_STEP_SECONDS, line
    assert "LLM_TIMEOUT_SECONDS=30 is too short" in line
    assert "a slow model is usable with a longer timeout" in line
    assert "a whole turn was not waited for (the doctor's limit is 10 s" in line
    assert "LLM_MAX_OUTPUT_TOKENS=1024 (small models often do) takes about" in line  # 1024 tokens at 5 tokens/s
    assert "set LLM_MAX_OUTPUT_TOKENS=200 beside it" in line
    assert seconds < 10 + 8, f"the doctor took {seconds:.0f} s"  # its deadline, and the database checks
    assert code == 0, out  # slow is not broken


def test_a_model_with_no_first_token_before_the_deadline_is_a_warning_within_seconds_not_a_long_fail(
        monkeypatch, capsys, embedded_set_up):
    with FakeOpenAI(models=("mnemo-chat",)) as server:
        server.queue_reply(SLOW_REPLY, delay=60)
        monkeypatch.setenv("LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("LLM_MODEL", "mnemo-chat")
        monkeypatch.setenv("LLM_TIMEOUT_SECONDS", "90")
        started = time.monotonic()
        _code, out = run_doctor(capsys, "--llm-seconds", "4")
        seconds = time.monotonic() - started
    line = llm_line(out)
    assert line.startswith("[WARN] llm:"), line
    assert "no token yet within the doctor's 4 s" in line, line
    assert "--llm-seconds 300" in line
    assert "LLM_TIMEOUT_SECONDS (now 90)" in line
    assert seconds < 4 + 8, f"the doctor took {seconds:.0f} s"


def test_in_a_container_an_llm_at_loopback_that_does_not_answer_is_explained(monkeypatch, capsys, embedded_set_up):
    monkeypatch.setenv("MNEMO_IN_CONTAINER", "1")
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")
    _code, out = run_doctor(capsys)
    line = llm_line(out)
    assert line.startswith("[FAIL] llm: LLM_BASE_URL=http://127.0.0.1:9/v1 does not answer"), line
    assert "LLM_BASE_URL=http://host.docker.internal:9/v1" in line
    assert "is the container itself" in line


def test_under_compose_the_doctor_names_a_bot_whose_token_is_set_but_whose_profile_is_not(
        monkeypatch, capsys, embedded_set_up):
    monkeypatch.setenv("MNEMO_IN_CONTAINER", "1")
    monkeypatch.setenv("COMPOSE_PROFILES", "discord")
    monkeypatch.setenv("TELEGRAM_TOKEN", "123456:telegram-secret-token")
    code, out = run_doctor(capsys)
    line = next(line for line in out.splitlines() if "] compose:" in line).strip()
    assert line.startswith("[FAIL] compose: COMPOSE_PROFILES=discord starts the Discord bot, but DISCORD_TOKEN")
    assert "TELEGRAM_TOKEN is set, but COMPOSE_PROFILES=discord starts no Telegram bot: add telegram" in line
    assert code == 1
    assert "telegram-secret-token" not in out
