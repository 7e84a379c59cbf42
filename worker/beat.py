"""Celery beat, guarded so that only one runs per database: it holds the ``beat`` lease
(:mod:`shared.db.leases`), a row it renews, which holds through a pooler in transaction mode as a
session's advisory lock would not. A beat that dies loses it within ``BEAT_LEASE_SECONDS``."""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path

from celery import Celery
from sqlalchemy import pool

from shared.db.engine import make_engine
from shared.db.leases import Lease

BEAT_LEASE = "beat"
BEAT_LEASE_SECONDS = 30.0
log = logging.getLogger(__name__)


def run_single_beat(app: Celery, database_url: str, data_dir: Path, log_level: str, *, quiet: bool = False) -> int:
    """Run beat while holding the lease; a second beat exits with status 3 and says why, and a beat whose
    lease was taken over (it stalled past the lease) stops. ``quiet``: no banner (the log is JSON lines)."""
    engine = make_engine(database_url, poolclass=pool.NullPool)
    lease = Lease(engine, BEAT_LEASE, BEAT_LEASE_SECONDS)
    try:
        if not lease.take():
            print(f"mnemo beat: another beat is already running for this database ({lease.current_holder()}); "
                  f"exiting. A beat that stopped without a word gives way within {BEAT_LEASE_SECONDS:.0f} s.")
            return 3
        data_dir.mkdir(parents=True, exist_ok=True)
        with lease.kept(on_lost=lambda: os.kill(os.getpid(), signal.SIGTERM)):
            app.Beat(schedule=str(data_dir / "celerybeat-schedule"), loglevel=log_level, quiet=quiet).run()
    finally:
        engine.dispose()
    return 0
