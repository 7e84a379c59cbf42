"""A unit of work commits inside the hook its factory gave it, and reads nothing else: only the Telegram
webhook's wiring gives one (:func:`shared.db.update_log.marked_in`), so no other process's commit marks an
update. No database: a commit with nothing written does not connect."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from pydantic import SecretStr
from sqlalchemy import event
from sqlalchemy.orm import Session, sessionmaker

from shared.app import bootstrap
from shared.db.update_log import UpdateInHand, handling, marked_in
from shared.repositories.uow import UnitOfWork
from shared.settings import Settings


def test_a_commit_runs_inside_the_hook_the_factory_gave() -> None:
    steps: list[str] = []

    @contextmanager
    def around(_session: Session) -> Iterator[None]:
        steps.append("before")
        yield
        steps.append("after")

    sessions = sessionmaker()
    event.listen(sessions, "after_commit", lambda _session: steps.append("committed"))
    with UnitOfWork(sessions, around_commit=around) as uow:
        uow.commit()
        uow.commit()
    assert steps == ["before", "committed", "after"] * 2


def test_a_unit_of_work_given_no_hook_leaves_the_update_in_hand_alone() -> None:
    with handling(UpdateInHand("telegram", 7)) as update, UnitOfWork(sessionmaker()) as uow:
        uow.commit()  # marking it would have needed the database
    assert not update.marked


class Wired(Exception):
    """Raised by the stand-in runtime once it has seen what the front-end asked for."""


def test_only_the_telegram_webhook_wires_units_of_work_that_mark_its_updates(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.telegram_bot import run_telegram

    hooks = []

    def runtime(_settings: Settings, *, around_commit: object = None) -> None:
        hooks.append(around_commit)
        raise Wired

    monkeypatch.setattr(bootstrap, "runtime", runtime)
    settings = Settings(_env_file=None, telegram_token=SecretStr("123:token"))
    with pytest.raises(Wired):
        run_telegram(settings, webhook_url="https://bot.mnemo.test/telegram", secret_token="secret")
    with pytest.raises(Wired):
        run_telegram(settings)  # long polling: one poller, no inbox
    assert hooks == [marked_in, None]
