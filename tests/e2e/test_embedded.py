"""The embedded default: PostgreSQL 18 with pgvector started in the data directory, owned by one process."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from bench.fakes.telegram_api import FakeTelegram
from shared.db import migrate
from shared.db.embedded import EmbeddedPostgres, server_pid
from tests.conftest import server_data_dir
from tests.e2e.api_process import api_answers, bound_port
from tests.waiting import wait_for

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
def empty_data_dir() -> Iterator[Path]:
    """A data directory nothing has used yet, outside pytest's private temp root (see ``server_data_dir``)."""
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


def test_the_starting_process_owns_the_server_and_an_attached_one_leaves_it_running(data_dir):
    owner = EmbeddedPostgres(data_dir)
    owner.start()
    attached = EmbeddedPostgres(data_dir)
    try:
        assert attached.start() == owner.url
        assert owner.owner
        assert not attached.owner
        attached.stop()
        assert server_pid(data_dir) is not None
    finally:
        owner.stop()
    assert server_pid(data_dir) is None
    owner.start()  # and it starts again in the same process
    owner.stop()
    assert server_pid(data_dir) is None


def ignoring_ctrl_c() -> None:
    """How a script's background job (or a test runner's worker) starts its children: SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("signum, preexec", [(signal.SIGINT, None), (signal.SIGINT, ignoring_ctrl_c),
                                             (signal.SIGTERM, None)], ids=["ctrl-c", "ctrl-c-inherited-ignore",
                                                                           "sigterm"])
def test_no_server_is_left_behind_when_the_owner_is_interrupted(data_dir, signum, preexec):
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(data_dir)], stdout=subprocess.PIPE, text=True,
                              env=embedded_env(data_dir), cwd=data_dir, preexec_fn=preexec)
    try:
        assert holder.stdout.readline().strip() == "ready"
        assert server_pid(data_dir) is not None
        holder.send_signal(signum)
        holder.wait(timeout=30)
    finally:
        holder.kill()
    assert server_pid(data_dir) is None
    psutil.wait_procs(postgres_processes_for(data_dir), timeout=10)
    assert postgres_processes_for(data_dir) == []


def test_db_upgrade_and_doctor_work_on_the_embedded_default(empty_data_dir):
    env = embedded_env(empty_data_dir)
    upgrade = subprocess.run([sys.executable, "-m", "shared.app.cli", "db", "upgrade"], env=env, cwd=empty_data_dir,
                             capture_output=True, text=True, timeout=120)
    assert upgrade.returncode == 0, upgrade.stderr
    assert f"Schema at {migrate.head_revision()}; vectors on." in upgrade.stdout
    doctor = subprocess.run([sys.executable, "-m", "shared.app.cli", "doctor"], env=env, cwd=empty_data_dir,
                            capture_output=True, text=True, timeout=120)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "[OK  ] database: embedded PostgreSQL, PostgreSQL 18" in doctor.stdout
    assert "[OK  ] pgvector: enabled, 384 dimensions" in doctor.stdout
    assert "Verdict: ready" in doctor.stdout
    assert server_pid(empty_data_dir) is None


def test_mnemo_chat_runs_the_whole_pipeline_on_the_embedded_default(data_dir):
    script = "我住在北京\n不对，我现在住在上海\n我在上海过得还行\n/why\n/quit\n"
    chat = subprocess.run([sys.executable, "-m", "shared.app.cli", "chat", "--user", "tester"], input=script,
                          env=embedded_env(data_dir), cwd=data_dir, capture_output=True, text=True, timeout=120)
    assert chat.returncode == 0, chat.stderr
    assert "offline mode" in chat.stdout
    assert "Mnemo（离线）> 好的，我更新了：你现在住在上海（之前记的是：你住在北京）。" in chat.stdout
    assert "我现在住在上海\n      score" in chat.stdout
    assert "strategy:" in chat.stdout
    assert "我住在北京\n      score" not in chat.stdout  # the superseded value is not used
    assert server_pid(data_dir) is None


COMPANION_ENV = {"API_PORT": "0", "LOG_LEVEL": "INFO"}
"""The panel's API beside a front-end binds a free port of its own choosing, logged at INFO, read back."""
COMPANION_ROLES = ["api", "beat", "worker"]


def all_companions(front_end: subprocess.Popen) -> list[psutil.Process] | None:
    """The worker, beat and API ``front_end`` started beside itself, once all three run."""
    found = {}
    for process in psutil.Process(front_end.pid).children():
        with contextlib.suppress(psutil.NoSuchProcess):  # a short-lived child gone since it was listed
            command = process.cmdline()
            if "shared.app.cli" in " ".join(command):
                found[command[-1]] = process
    return list(found.values()) if sorted(found) == COMPANION_ROLES else None


def api_beside(data_dir: Path) -> bool:
    """Whether the panel's API a front-end started in ``data_dir`` answers."""
    return api_answers(bound_port(data_dir / "logs" / "api.log"))


def test_mnemo_chat_runs_a_real_worker_beat_and_api_and_stops_them_on_exit(empty_data_dir, migrated_system_db):
    """With --workers (the default on the embedded database) the console starts all three and stops them."""
    env = embedded_env(empty_data_dir) | COMPANION_ENV | {"DATABASE_URL": migrated_system_db,
                                                          "REMINDER_SCAN_SECONDS": "2",
                                                          "EXTRACTION_BATCH_TURNS": "1"}  # a job owed at once
    chat = subprocess.Popen([sys.executable, "-m", "shared.app.cli", "chat", "--user", "tester", "--workers"], env=env,
                            cwd=empty_data_dir, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    helpers: list[psutil.Process] = []
    try:
        chat.stdin.write("我住在杭州\n")
        chat.stdin.flush()
        helpers = wait_for(lambda: all_companions(chat), 90, "the worker, beat and API beside the console")
        wait_for(lambda: owed_jobs_done(migrated_system_db), 90,
                 lambda: f"the worker beside the console to do the owed jobs ({job_statuses(migrated_system_db)})")
        wait_for(lambda: api_beside(empty_data_dir), 90, "the web panel's API beside the console to answer")
        chat.stdin.write("/quit\n")
        chat.stdin.flush()
        chat.wait(timeout=60)
    finally:
        chat.kill()
    assert chat.returncode == 0, chat.stdout.read()
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in helpers)


def test_mnemo_telegram_on_the_embedded_default_runs_worker_beat_and_api_beside_it(data_dir):
    """A bot with nothing configured but its token does its background work and serves /panel links without
    other commands."""
    with FakeTelegram() as telegram:
        env = embedded_env(data_dir) | COMPANION_ENV | {"TELEGRAM_TOKEN": telegram.token,
                                                        "TELEGRAM_API_BASE_URL": telegram.base_url}
        bot = subprocess.Popen([sys.executable, "-m", "shared.app.cli", "telegram"], env=env, cwd=data_dir,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        helpers: list[psutil.Process] = []
        try:
            helpers = wait_for(lambda: all_companions(bot), 90, "the worker, beat and API beside the bot")
            wait_for(lambda: telegram.calls_to("getUpdates"), 90, "the bot to poll Telegram")
            wait_for(lambda: api_beside(data_dir), 90, "the web panel's API beside the bot to answer")
            bot.send_signal(signal.SIGTERM)
            bot.wait(timeout=60)
        finally:
            bot.kill()
    assert bot.returncode == 0, bot.stdout.read()
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in helpers)
    assert server_pid(data_dir) is None


def job_statuses(database_url: str) -> list[str]:
    """The status of every outbox job, oldest first."""
    import psycopg

    with psycopg.connect(database_url) as connection:
        return [row[0] for row in connection.execute("SELECT status FROM jobs_outbox ORDER BY id")]


def owed_jobs_done(database_url: str) -> bool:
    """Whether the outbox has jobs and every one of them is done."""
    statuses = set(job_statuses(database_url))
    return bool(statuses) and statuses == {"done"}
