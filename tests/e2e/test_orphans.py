"""Nothing outlives ``mnemo chat`` on the embedded default, however it ends.

Ctrl-C at the prompt ends it at once (no Enter needed), stopping its worker, beat, API and database. A
``mnemo chat`` killed outright (``kill -9``) cannot stop anything: its companions notice and stop by
themselves, and the next ``mnemo chat`` takes the database over and stops it when it ends.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import psutil

from shared.db.embedded import server_pid
from tests.e2e.test_embedded import COMPANION_ENV, all_companions, embedded_env, postgres_processes_for
from tests.waiting import wait_for

START_SECONDS = 90
STOP_SECONDS = 60


def start_chat(data_dir: Path) -> subprocess.Popen:
    """``mnemo chat`` on the embedded default, with a prompt nobody answers until the test writes."""
    return subprocess.Popen([sys.executable, "-m", "shared.app.cli", "chat", "--user", "olek"],
                            env=embedded_env(data_dir) | COMPANION_ENV, cwd=data_dir, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def running(processes: list[psutil.Process]) -> list[psutil.Process]:
    return [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def test_ctrl_c_at_the_prompt_ends_the_console_at_once_and_stops_everything(data_dir):
    chat = start_chat(data_dir)
    try:
        helpers = wait_for(lambda: all_companions(chat), START_SECONDS, "the worker, beat and API beside the console")
        chat.send_signal(signal.SIGINT)
        chat.wait(timeout=STOP_SECONDS)  # no line is ever written: a read holding the exit would time out
    finally:
        chat.kill()
    assert chat.returncode == 128 + signal.SIGINT, chat.stdout.read()
    assert running(helpers) == []
    assert server_pid(data_dir) is None


def test_after_kill_9_the_companions_stop_by_themselves_and_the_next_console_owns_the_database(data_dir):
    first = start_chat(data_dir)
    try:
        orphans = wait_for(lambda: all_companions(first), START_SECONDS, "the first console's companions")
        first.kill()
        first.wait()
    finally:
        first.kill()
    psutil.wait_procs(orphans, timeout=STOP_SECONDS)
    assert running(orphans) == [], "companions outlived their front-end"
    left_running = server_pid(data_dir)
    assert left_running is not None  # nobody could stop it: the next console takes it over

    second = start_chat(data_dir)
    try:
        helpers = wait_for(lambda: all_companions(second), START_SECONDS, "the second console's companions")
        second.communicate("/quit\n", timeout=STOP_SECONDS)
    finally:
        second.kill()
    assert second.returncode == 0
    assert running(helpers) == []
    assert server_pid(data_dir) is None
    psutil.wait_procs(postgres_processes_for(data_dir), timeout=10)
    assert postgres_processes_for(data_dir) == []
