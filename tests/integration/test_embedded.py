"""The embedded default: PostgreSQL 18 with pgvector started in the data directory, owned by one process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from shared.db import migrate
from shared.db.embedded import EmbeddedPostgres, server_pid
from tests.conftest import server_data_dir
from tests.fakes.telegram_api import FakeTelegram

ROOT = Path(__file__).resolve().parents[2]
HOLDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from shared.app.cli import exit_cleanly_on_signals
    from shared.db.embedded import EmbeddedPostgres
    exit_cleanly_on_signals()
    with EmbeddedPostgres(Path(sys.argv[1])):
        print("ready", flush=True)
        time.sleep(120)
""")


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """Each test's data directory, outside pytest's private temp root (see ``server_data_dir``)."""
    with server_data_dir() as path:
        yield path


def embedded_env(data_dir: Path) -> dict[str, str]:
    """The environment of a fresh install: no DATABASE_URL, no REDIS_URL, no LLM."""
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "LLM_BASE_URL"}}
    env.update(MNEMO_DATA_DIR=str(data_dir), PYTHONPATH=str(ROOT))
    return env


def postgres_processes_for(data_dir: Path) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["name", "cmdline"]):
        cmdline = " ".join(process.info["cmdline"] or [])
        if process.info["name"] == "postgres" and str(data_dir.resolve()) in cmdline:
            found.append(process)
    return found


def test_the_starting_process_owns_the_server_and_an_attached_one_leaves_it_running(tmp_path):
    owner = EmbeddedPostgres(tmp_path)
    owner.start()
    attached = EmbeddedPostgres(tmp_path)
    try:
        assert attached.start() == owner.url
        assert owner.owner and not attached.owner
        attached.stop()
        assert server_pid(tmp_path) is not None
    finally:
        owner.stop()
    assert server_pid(tmp_path) is None
    owner.start()  # and it starts again in the same process
    owner.stop()
    assert server_pid(tmp_path) is None


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_no_server_is_left_behind_when_the_owner_is_interrupted(tmp_path, signum):
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                              env=embedded_env(tmp_path), cwd=tmp_path)
    try:
        assert holder.stdout.readline().strip() == "ready"
        assert server_pid(tmp_path) is not None
        holder.send_signal(signum)
        holder.wait(timeout=30)
    finally:
        holder.kill()
    assert server_pid(tmp_path) is None
    psutil.wait_procs(postgres_processes_for(tmp_path), timeout=10)
    assert postgres_processes_for(tmp_path) == []


def test_db_upgrade_and_doctor_work_on_the_embedded_default(tmp_path):
    env = embedded_env(tmp_path)
    upgrade = subprocess.run([sys.executable, "-m", "shared.app.cli", "db", "upgrade"], env=env, cwd=tmp_path,
                             capture_output=True, text=True, timeout=120)
    assert upgrade.returncode == 0, upgrade.stderr
    assert f"Schema at {migrate.head_revision()}; vectors on." in upgrade.stdout
    doctor = subprocess.run([sys.executable, "-m", "shared.app.cli", "doctor"], env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "[OK  ] database: embedded PostgreSQL, PostgreSQL 18" in doctor.stdout
    assert "[OK  ] pgvector: enabled, 384 dimensions" in doctor.stdout
    assert "Verdict: ready" in doctor.stdout
    assert server_pid(tmp_path) is None


def test_mnemo_chat_runs_the_whole_pipeline_on_the_embedded_default(tmp_path):
    script = "我住在北京\n不对，我现在住在上海\n我在上海过得还行\n/why\n/quit\n"
    chat = subprocess.run([sys.executable, "-m", "shared.app.cli", "chat", "--user", "tester"], input=script,
                          env=embedded_env(tmp_path), cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert chat.returncode == 0, chat.stderr
    assert "offline mode" in chat.stdout
    assert "Mnemo (offline)> 好的，我更新了：你现在住在上海（之前记的是：你住在北京）。" in chat.stdout
    assert "我现在住在上海\n      score" in chat.stdout and "strategy:" in chat.stdout
    assert "我住在北京\n      score" not in chat.stdout  # the superseded value is not used
    assert server_pid(tmp_path) is None


def test_mnemo_chat_runs_a_real_worker_beat_and_api_and_stops_them_on_exit(tmp_path, fresh_system_db):
    """With --workers (the default on the embedded database) the console starts all three and stops them."""
    migrate.upgrade(fresh_system_db)
    port = free_port()
    env = embedded_env(tmp_path) | {"DATABASE_URL": fresh_system_db, "REMINDER_SCAN_SECONDS": "2",
                                    "API_PORT": str(port), "PANEL_PUBLIC_URL": f"http://127.0.0.1:{port}"}
    chat = subprocess.Popen([sys.executable, "-m", "shared.app.cli", "chat", "--user", "tester", "--workers"], env=env,
                            cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    helpers: list[psutil.Process] = []
    try:
        chat.stdin.write("我住在杭州\n")
        chat.stdin.flush()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not (owed_jobs_done(fresh_system_db) and len(helpers) == 3
                                                   and api_answers(port)):
            helpers = [p for p in psutil.Process(chat.pid).children() if "shared.app.cli" in " ".join(p.cmdline())]
            time.sleep(0.5)
        assert sorted(p.cmdline()[-1] for p in helpers) == ["api", "beat", "worker"]
        assert owed_jobs_done(fresh_system_db), "the worker beside the console did not do the extraction job"
        assert api_answers(port), "the web panel's API beside the console does not answer"
        chat.stdin.write("/quit\n")
        chat.stdin.flush()
        chat.wait(timeout=60)
    finally:
        chat.kill()
    assert chat.returncode == 0, chat.stdout.read()
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in helpers)


def test_mnemo_telegram_on_the_embedded_default_runs_worker_beat_and_api_beside_it(tmp_path):
    """A bot on a fresh install does its background work and serves /panel links without other commands."""
    port = free_port()
    with FakeTelegram() as telegram:
        env = embedded_env(tmp_path) | {"TELEGRAM_TOKEN": telegram.token, "TELEGRAM_API_BASE_URL": telegram.base_url,
                                        "API_PORT": str(port), "PANEL_PUBLIC_URL": f"http://127.0.0.1:{port}"}
        bot = subprocess.Popen([sys.executable, "-m", "shared.app.cli", "telegram"], env=env, cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        helpers: list[psutil.Process] = []
        try:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and not (len(helpers) == 3 and api_answers(port)
                                                       and telegram.calls_to("getUpdates")):
                helpers = [p for p in psutil.Process(bot.pid).children() if "shared.app.cli" in " ".join(p.cmdline())]
                time.sleep(0.5)
            assert sorted(p.cmdline()[-1] for p in helpers) == ["api", "beat", "worker"]
            assert api_answers(port) and telegram.calls_to("getUpdates"), "the bot or its panel API did not start"
            bot.send_signal(signal.SIGTERM)
            bot.wait(timeout=60)
        finally:
            bot.kill()
    assert bot.returncode == 0, bot.stdout.read()
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in helpers)
    assert server_pid(tmp_path) is None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def api_answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def owed_jobs_done(database_url: str) -> bool:
    """Whether the outbox has jobs and every one of them is done."""
    import psycopg

    with psycopg.connect(database_url) as connection:
        statuses = {row[0] for row in connection.execute("SELECT status FROM jobs_outbox")}
    return bool(statuses) and statuses == {"done"}
