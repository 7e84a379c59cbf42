"""`mnemo beat`: exactly one per database, and the schedule it runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from celery.schedules import crontab

from shared.db import migrate
from worker.schedule import beat_schedule

ROOT = Path(__file__).resolve().parents[2]


def beat(database_url: str, data_dir: Path) -> subprocess.Popen:
    data_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": "redis://127.0.0.1:6379/14",
           "MNEMO_DATA_DIR": str(data_dir), "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "shared.app.cli", "beat"], env=env, cwd=data_dir,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def test_a_second_beat_for_the_same_database_refuses_to_run(fresh_system_db, tmp_path):
    migrate.upgrade(fresh_system_db)
    first = beat(fresh_system_db, tmp_path / "one")
    try:
        time.sleep(4)
        assert first.poll() is None, first.stdout.read()
        second = beat(fresh_system_db, tmp_path / "two")
        output, _ = second.communicate(timeout=60)
        assert second.returncode == 3
        assert "another beat is already running" in output
    finally:
        os.killpg(first.pid, signal.SIGTERM)
        first.wait(timeout=30)
    assert (tmp_path / "one" / "celerybeat-schedule").exists() or any((tmp_path / "one").glob("celerybeat*"))


def test_the_schedule_scans_reminders_every_minute_and_maintains_memory_daily_at_the_set_hour():
    schedule = beat_schedule(reminder_scan_seconds=60, daily_hour_utc=4)
    assert schedule["scan-reminders"]["schedule"] == 60
    assert schedule["sweep-outbox"]["task"] == "mnemo.sweep_outbox"
    assert schedule["decay"]["schedule"] == crontab(hour=4, minute=0)
    assert {entry["task"] for entry in schedule.values()} == {
        "mnemo.scan_reminders", "mnemo.sweep_outbox", "mnemo.close_idle_sessions", "mnemo.run_decay",
        "mnemo.run_reviews", "mnemo.run_dedup", "mnemo.retokenize_search"}
    assert all("expires" in entry["options"] for entry in schedule.values())
