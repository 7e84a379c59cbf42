"""Celery: the app, its thin tasks and the beat schedule. The work itself lives in shared/
(lifecycle, reminders, recall)."""
