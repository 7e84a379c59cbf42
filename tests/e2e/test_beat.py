"""`mnemo beat`: exactly one per database, and the schedule it runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from celery.schedules import crontab
from sqlalchemy import create_engine, text

from tests.waiting import wait_for
from worker.beat import BEAT_LEASE_SECONDS
from worker.schedule import beat_schedule

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = "redis://127.0.0.1:6379/14"


def beat(database_url: str, data_dir: Path, redis_url: str = REDIS_URL,
         extra_env: dict[str, str] | None = None) -> subprocess.Popen:
    """``mnemo beat`` in its own session, logging to ``data_dir/beat.log``."""
    data_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": redis_url, "MNEMO_DATA_DIR": str(data_dir),
           "PYTHONPATH": str(ROOT), "LOG_LEVEL": "INFO", **(extra_env or {})}
    with open(data_dir / "beat.log", "wb") as log:
        return subprocess.Popen([sys.executable, "-m", "shared.app.cli", "beat"], env=env, cwd=data_dir,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def log_of(data_dir: Path) -> str:
    return (data_dir / "beat.log").read_text(errors="replace")


def schedule_files(data_dir: Path) -> list[Path]:
    return list(data_dir.glob("celerybeat-schedule*"))


def wait_until_beating(process: subprocess.Popen, data_dir: Path) -> None:
    """Until beat holds the database's lock and keeps its schedule (it logs its start after taking the lock)."""
    wait_for(lambda: process.poll() is not None or ("beat: Starting" in log_of(data_dir) and schedule_files(data_dir)),
             60, lambda: f"beat to start:\n{log_of(data_dir)}")
    assert process.poll() is None, log_of(data_dir)


def stop_beat(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=30)


def test_a_second_beat_for_the_same_database_refuses_to_run(migrated_system_db, tmp_path):
    first = beat(migrated_system_db, tmp_path / "one")
    try:
        wait_until_beating(first, tmp_path / "one")
        second = beat(migrated_system_db, tmp_path / "two")
        assert second.wait(timeout=60) == 3
        assert "another beat is already running" in log_of(tmp_path / "two")
        assert first.poll() is None, log_of(tmp_path / "one")
    finally:
        stop_beat(first)
    assert schedule_files(tmp_path / "one")
    assert not schedule_files(tmp_path / "two")


def test_a_beat_that_lost_its_lease_stops_and_one_that_stopped_gives_it_back(migrated_system_db, tmp_path):
    first = beat(migrated_system_db, tmp_path / "one")
    try:
        wait_until_beating(first, tmp_path / "one")
        engine = create_engine(migrated_system_db.replace("postgresql://", "postgresql+psycopg://", 1))
        with engine.begin() as connection:  # it stalled past its lease, and another beat took over
            connection.execute(text("UPDATE process_leases SET holder = 'another beat', "
                                    "expires_at = now() + interval '1 minute'"))
        assert first.wait(timeout=BEAT_LEASE_SECONDS) is not None
        assert "lease was lost" in log_of(tmp_path / "one")
        with engine.begin() as connection:
            connection.execute(text("DELETE FROM process_leases"))
        engine.dispose()
    finally:
        if first.poll() is None:
            stop_beat(first)
    again = beat(migrated_system_db, tmp_path / "two")
    try:
        wait_until_beating(again, tmp_path / "two")
    finally:
        stop_beat(again)
    third = beat(migrated_system_db, tmp_path / "three")  # a clean stop gave the lease back: no wait
    try:
        wait_until_beating(third, tmp_path / "three")
    finally:
        stop_beat(third)


def test_the_schedule_scans_reminders_every_minute_and_maintains_memory_daily_at_the_set_hour():
    schedule = beat_schedule(reminder_scan_seconds=60, daily_hour_utc=4)
    assert schedule["scan-reminders"]["schedule"] == 60
    assert schedule["sweep-outbox"]["task"] == "mnemo.sweep_outbox"
    assert schedule["maintenance"]["schedule"] == crontab(hour=4, minute=0)  # decay, reviews, dedup: one run
    assert {entry["task"] for entry in schedule.values()} == {
        "mnemo.scan_reminders", "mnemo.sweep_outbox", "mnemo.close_idle_sessions", "mnemo.run_maintenance",
        "mnemo.retokenize_search", "mnemo.scan_followups"}
    assert schedule["scan-followups"]["schedule"] == 300
    assert all("expires" in entry["options"] for entry in schedule.values())
