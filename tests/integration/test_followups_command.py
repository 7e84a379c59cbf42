"""`mnemo followups --now WHEN` and the console's catch-up, on a migrated database of the test's own: a console
user mentions their driving test, the operator runs the follow-up scan as of the afternoon after, and the next
`mnemo chat` shows the follow-up first, once; the user's answer closes the thread, though the follow-up is dated
the next afternoon and the answer now: what answers a follow-up is the order of the turns, not the clocks."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from bot.console import chat_loop, console_missed, console_reminder_feed
from shared.app.bootstrap import Runtime
from shared.app.cli import main
from shared.app.followups_command import report_line
from shared.db.engine import make_engine, session_factory
from shared.db.models import ConversationTurn
from shared.db.thread_models import OpenThread
from shared.reminders.service import DeliveryOutcome
from tests.builders import clean_settings, conversation, conversation_config, message, typed


def test_the_report_line_counts_each_outcome_and_says_why_a_follow_up_was_not_sent():
    now = datetime(2027, 6, 1, 14, 0, tzinfo=UTC)
    assert report_line(now, []) == "follow-ups as of 2027-06-01 14:00 UTC: none due"
    outcomes = [DeliveryOutcome("sent", platform="console"), DeliveryOutcome("sent", platform="telegram"),
                DeliveryOutcome("sent", platform="telegram"), DeliveryOutcome("skipped", "quiet hours"),
                DeliveryOutcome("skipped", "quiet hours")]
    assert report_line(now, outcomes) == ("follow-ups as of 2027-06-01 14:00 UTC: 3 sent (console 1, telegram 2), "
                                          "2 skipped (quiet hours ×2)")


def test_a_follow_up_sent_as_of_tomorrow_is_shown_first_by_the_next_console_and_the_answer_closes_it(
        monkeypatch, capsys, migrated_system_db, tmp_path):
    settings = clean_settings(monkeypatch, database_url=migrated_system_db, mnemo_data_dir=tmp_path)
    engine = make_engine(migrated_system_db)
    rt = Runtime(settings, migrated_system_db, engine, session_factory(engine))
    try:
        service = conversation(rt.uow, conversation_config(default_timezone="UTC"), None)
        asyncio.run(service.handle_message(message("I have my driving test tomorrow at 10am", user="ann",
                                                   chat="console", platform="console", locale="en")))
        with rt.uow() as uow:
            [thread] = uow.session.scalars(select(OpenThread)).all()
            uow.users.get(thread.user_id).followups_on_at = datetime.now(UTC)
            uow.commit()
            happens_at = thread.happens_at
        assert happens_at.hour == 10 and happens_at > datetime.now(UTC)

        afternoon = happens_at + timedelta(hours=4)
        monkeypatch.setenv("DATABASE_URL", migrated_system_db)
        monkeypatch.setenv("MNEMO_DATA_DIR", str(tmp_path))
        assert main(["followups", "--now", afternoon.isoformat()]) == 0
        assert capsys.readouterr().out.strip() == f"follow-ups as of {afternoon:%Y-%m-%d %H:%M} UTC: 1 sent (console 1)"
        assert main(["followups", "--now", afternoon.isoformat()]) == 0
        assert capsys.readouterr().out.strip() == f"follow-ups as of {afternoon:%Y-%m-%d %H:%M} UTC: none due"

        out: list[str] = []
        asyncio.run(chat_loop(service, user_id="ann", bot_name="Mnemo", read_line=typed(["I passed!"]),
                              write=out.append, reminders=console_reminder_feed(rt, "ann"),
                              missed=lambda: console_missed(rt, "ann", "en")))
        with rt.uow() as uow:
            thread = uow.session.get(OpenThread, thread.id)
            followup = uow.session.get(ConversationTurn, thread.followup_turn_id)
            assert thread.status == "answered", thread.status
        assert followup is not None and "driving test" in followup.text, followup
        assert out.count(followup.text) == 1, out
        heading = out.index("Sent since your last message:")
        assert out[heading + 1] == followup.text
        assert out.index(followup.text) < next(i for i, line in enumerate(out) if line.startswith("Mnemo"))
    finally:
        engine.dispose()
