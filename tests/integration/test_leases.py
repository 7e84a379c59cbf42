"""Leases on real PostgreSQL: one holder at a time, renewed by it, taken over only once expired, given back."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, pool, text

from shared.db.engine import make_engine
from shared.db.leases import Lease


@pytest.fixture
def database(migrated_system_db: str) -> Iterator[Engine]:
    engine = make_engine(migrated_system_db, poolclass=pool.NullPool)
    yield engine
    engine.dispose()


def expire(engine: Engine, name: str) -> None:
    """As if the holder stopped renewing a while ago."""
    with engine.begin() as connection:
        connection.execute(text("UPDATE process_leases SET expires_at = now() - interval '1 second' "
                                "WHERE name = :name"), {"name": name})


def test_one_holder_at_a_time_until_it_gives_the_lease_back(database: Engine) -> None:
    first, second = Lease(database, "beat"), Lease(database, "beat")

    assert first.take()  # taking it again is keeping it
    assert first.take()
    assert not second.take()
    assert second.current_holder() == first.holder
    assert first.renew()
    assert not second.renew()
    first.give_back()
    assert first.current_holder() is None
    assert second.take()
    assert not first.take()


def test_an_expired_lease_is_taken_over_and_its_old_holder_learns_it_lost_it(database: Engine) -> None:
    stalled, successor = Lease(database, "beat"), Lease(database, "beat")
    assert stalled.take()
    expire(database, "beat")

    assert successor.take()
    assert not stalled.renew()
    assert not stalled.take()


def test_other_duties_have_leases_of_their_own(database: Engine) -> None:
    assert Lease(database, "beat").take()
    assert Lease(database, "telegram-poller").take()


def test_a_kept_lease_is_renewed_and_given_back_and_its_loss_is_told(database: Engine) -> None:
    lease, lost = Lease(database, "beat", seconds=0.3), threading.Event()
    assert lease.take()
    with lease.kept(on_lost=lost.set):
        for _ in range(3):  # outlives its 0.3 s several times over: renewed every 0.1 s
            assert not lost.wait(0.3)
            assert lease.current_holder() == lease.holder
        with database.begin() as connection:  # it expired and another process took it, in one step (a
            connection.execute(text("UPDATE process_leases SET holder = 'successor', "  # renewal between the
                                    "expires_at = now() + interval '30 seconds'"))  # two cannot interfere)
        assert lost.wait(5)  # the holder hears it lost the lease at its next renewal
    assert lease.current_holder() == "successor"  # the successor's lease is not given back by the loser
