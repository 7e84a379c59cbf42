"""Rate limits that every replica of a process shares, kept where the deployment already keeps state.

A limit counts in Redis when Redis is the broker (the ``limits`` library's own storage) and in
PostgreSQL otherwise (:class:`~shared.db.limit_storage.PostgresStorage`, a ``limits`` storage over the
``rate_limit_counters`` table), so two API replicas count one guesser's failed sign-ins together, and
two bot replicas one user's flood. Windows are fixed (``limits``' fixed-window strategy, the one both
storages support). Who applies a limit decides what being over it means.

Imports: ``limits`` and :mod:`shared.db` (the storage); nothing of the front-ends or the services.
"""

from shared.db.limit_storage import shared_storage
from shared.limits.limiter import SharedLimit

__all__ = ["SharedLimit", "shared_storage"]
