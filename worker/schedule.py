"""The beat schedule, as one table. Every entry expires before its next run, so a backlog never piles up."""

from __future__ import annotations

from datetime import timedelta

from celery.schedules import crontab


def beat_schedule(reminder_scan_seconds: float = 60.0, daily_hour_utc: int = 3) -> dict:
    minute = timedelta(minutes=1).total_seconds()
    return {
        "scan-reminders": {"task": "mnemo.scan_reminders", "schedule": reminder_scan_seconds,
                           "options": {"expires": reminder_scan_seconds}},
        # follow-ups on open threads: the rules pick the moment, so a minute's delay is nothing
        "scan-followups": {"task": "mnemo.scan_followups", "schedule": 5 * minute, "options": {"expires": 5 * minute}},
        "sweep-outbox": {"task": "mnemo.sweep_outbox", "schedule": minute, "options": {"expires": minute}},
        "close-idle-sessions": {"task": "mnemo.close_idle_sessions", "schedule": 5 * minute,
                                "options": {"expires": 5 * minute}},
        # decay, reviews and dedup in one run with one clock and one report (shared/lifecycle/maintenance.py)
        "maintenance": {"task": "mnemo.run_maintenance", "schedule": crontab(hour=daily_hour_utc, minute=0),
                        "options": {"expires": 3600}},
        # After an upgrade that changed the tokenizer, old rows get new search tokens within the hour.
        "retokenize-search": {"task": "mnemo.retokenize_search", "schedule": 60 * minute,
                              "options": {"expires": 60 * minute}},
    }
