"""DATABASE_PREPARED_STATEMENTS: the bots' and workers' engines prepare what they send often, and PostgreSQL still
plans each call for its values (a generic plan ignores which user is asked about); off, nothing is prepared (a
pooler in transaction mode that does not keep prepared statements)."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from shared.app.bootstrap import runtime
from shared.db.engine import make_engine
from shared.settings import load_settings

OFTEN = text("SELECT count(*) FROM memories WHERE user_id = :user_id")


def sent_often(engine) -> tuple[str, int]:
    """The plan cache mode and how many statements the connection prepared, after sending one seven times."""
    with engine.connect() as connection:
        for user in range(7):
            connection.execute(OFTEN, {"user_id": user}).all()
        mode = connection.execute(text("SHOW plan_cache_mode")).scalar_one()
        prepared = connection.execute(text("SELECT count(*) FROM pg_prepared_statements")).scalar_one()
    return mode, prepared


@pytest.mark.parametrize(("setting", "mode", "prepares"), [("true", "force_custom_plan", True),
                                                          ("false", "auto", False)])
def test_the_runtime_engine_prepares_often_sent_statements_as_set(migrated_url: str, monkeypatch: pytest.MonkeyPatch,
                                                                  setting: str, mode: str, prepares: bool) -> None:
    monkeypatch.setenv("DATABASE_PREPARED_STATEMENTS", setting)
    with runtime(load_settings(database_url=migrated_url)) as wired:
        shown_mode, prepared = sent_often(wired.engine)
    assert shown_mode == mode
    assert (prepared > 0) is prepares


def test_prepared_statements_are_on_by_default(migrated_url: str) -> None:
    assert load_settings(database_url=migrated_url).database_prepared_statements is True
    engine = make_engine(migrated_url, prepared_statements=True, connect_args={"connect_timeout": 5})
    try:  # given connection arguments keep the plan-each-call option
        assert sent_often(engine) == ("force_custom_plan", 1)
    finally:
        engine.dispose()
