"""A front-end's job sender (:func:`shared.app.bootstrap.job_sender`) on the real PostgreSQL broker: the job lands
on its queue with the log context it was sent in, through an app of the sender's own; the worker's app is left
pointing where it pointed."""

from __future__ import annotations

import json

import psycopg

from shared import log_context
from shared.app.bootstrap import job_sender
from shared.db.engine import sqlalchemy_url
from worker.celery_app import MODEL_QUEUE, app
from worker.correlation import HEADER


def test_a_job_sent_by_a_front_end_lands_on_its_queue_with_its_turn_and_the_workers_app_is_untouched(
        fresh_system_db):
    pointed_at = app.conf.broker_url
    send = job_sender("sqla+" + sqlalchemy_url(fresh_system_db))
    with log_context.bound(turn="turn-7", platform="telegram"):
        send("extract_turn", {"job_id": 7})
    with psycopg.connect(fresh_system_db) as connection:
        rows = connection.execute("SELECT q.name, m.payload FROM kombu_message m "
                                  "JOIN kombu_queue q ON q.id = m.queue_id").fetchall()
    assert [name for name, _payload in rows] == [MODEL_QUEUE]
    headers = json.loads(rows[0][1])["headers"]
    assert headers["task"] == "mnemo.extract_turn"
    assert headers[HEADER] == {"turn": "turn-7", "platform": "telegram"}
    assert app.conf.broker_url == pointed_at
