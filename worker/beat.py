"""Celery beat, guarded so that only one runs per database (a PostgreSQL advisory lock)."""

from __future__ import annotations

import logging
from pathlib import Path

from celery import Celery
from sqlalchemy import pool, text

from shared.db.engine import make_engine

BEAT_LOCK_KEY = 0x6D6E656D6F  # "mnemo"
log = logging.getLogger(__name__)


def run_single_beat(app: Celery, database_url: str, data_dir: Path, log_level: str) -> int:
    """Run beat while holding the advisory lock; a second beat exits with status 3 and says why."""
    engine = make_engine(database_url, poolclass=pool.NullPool)
    try:
        with engine.connect() as connection:
            if not connection.scalar(text("SELECT pg_try_advisory_lock(:key)"), {"key": BEAT_LOCK_KEY}):
                print("mnemo beat: another beat is already running for this database; exiting.")
                return 3
            connection.commit()
            data_dir.mkdir(parents=True, exist_ok=True)
            app.Beat(schedule=str(data_dir / "celerybeat-schedule"), loglevel=log_level).run()
    finally:
        engine.dispose()
    return 0
