"""``mnemo bench load --quick`` as an operator runs it: the whole system (two Telegram webhook replicas, two
Discord shard processes, two workers and beat) on a scratch database and Redis, under two stages of
simulated users; every message answered once, every job and reminder done, the figures written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SYSTEM_PG_ADMIN_URL

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = "redis://127.0.0.1:6379/4"  # a Redis database no other test uses

pytestmark = pytest.mark.e2e


def test_quick_load_answers_every_message_and_reports_each_stage(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOG_", "LLM_", "REDIS_", "DATABASE_"))}
    # every turn owes its read at once, so a short stage has extraction jobs whose lag it measures (by default a
    # sitting is read after 10 turns or when it goes idle, later than a quick stage lasts)
    env.update(PYTHONPATH=str(ROOT), MNEMO_DATA_DIR=str(tmp_path / "data"), EXTRACTION_BATCH_TURNS="1")
    finished = subprocess.run([sys.executable, "-m", "shared.app.cli", "bench", "load", "--quick",
                               "--database-url", SYSTEM_PG_ADMIN_URL, "--redis-url", REDIS_URL,
                               "--out", str(tmp_path)], env=env, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stdout + finished.stderr

    figures = json.loads((tmp_path / "load.json").read_text())
    stages = figures["stages"]
    assert [stage["rate"] for stage in stages] == [2, 6]
    for stage in stages:
        assert stage["sent"] == int(stage["rate"] * figures["options"]["stage_seconds"]) > 0
        assert (stage["answered"], stage["errors"]) == (stage["sent"], 0), stage
        assert stage["overhead_p50_ms"] is not None
        assert stage["worker_lag_p99_s"] is not None
        assert stage["cpu"].keys() == {"telegram-0", "telegram-1", "discord-0", "discord-1", "worker-0", "worker-1",
                                       "beat", "bench (fakes, load)", "postgres", "redis"}
        assert min(stage["cpu"].values()) >= 0, stage["cpu"]
        assert 0 < stage["machine_busy"] <= 1
        assert stage["db_connections_max"] > 0
    assert stages[1]["reminders"] == stages[1]["reminders_received"] > 0  # the fan-out, delivered
    assert "load_sustained_messages_per_second:" in finished.stdout
    assert "load_saturated_first:" in finished.stdout
