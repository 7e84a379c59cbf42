"""Who a log line is about: the turn, its platform and a keyed hash of its user. Pure (standard library).

A bot binds these when a message comes in (:func:`turn_context`); every log record made while the
turn is handled carries them (the record factory of :mod:`shared.app.logs` reads :func:`current`),
and so do the jobs the turn owes: the outbox row keeps them and the Celery task's headers carry them,
so the worker binds the same fields while it runs the job (``worker/log_context.py``).

The user is never named: :func:`hash_user` is an HMAC-SHA256 of the platform and the platform's user
id under a key only the deployment has (``LOG_HASH_KEY``, or one derived from its secrets), so a
log reader cannot recover a small numeric id by hashing every candidate. The same user has the same
hash on every line, in every process that has the same key.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from types import MappingProxyType

CARRIED = ("turn", "platform", "user")
"""The fields a job takes along from the work that owed it."""
FIELDS = (*CARRIED, "task")
"""The fields a log line may carry, in the order they are shown (``task``: the Celery task a worker runs)."""
TURN_ID_BYTES = 8
USER_HASH_CHARS = 16
"""64 bits of the HMAC: no two users of a deployment share one in practice; without the key none can be reversed."""
_KEY_LABEL = b"mnemo log user hash v1"

_current: ContextVar[Mapping[str, str]] = ContextVar("mnemo_log_context", default=MappingProxyType({}))
_key: bytes | None = None  # the process's key: logging is configured once per process, as the logging module is


def current() -> dict[str, str]:
    """The fields bound here (this thread or asyncio task), e.g. ``{"turn": "…", "platform": "telegram"}``."""
    return dict(_current.get())


@contextmanager
def bound(fields: Mapping[str, object] | None = None, **more: object) -> Iterator[None]:
    """For the block, these fields (those of :data:`FIELDS` that are set) are added to the bound ones."""
    given = {**(fields or {}), **more}
    added = {name: str(given[name]) for name in FIELDS if given.get(name) not in (None, "")}
    token = _current.set({**_current.get(), **added})
    try:
        yield
    finally:
        _current.reset(token)


def carried(fields: object = None) -> dict[str, str]:
    """The :data:`CARRIED` fields of ``fields`` (a row's or a message header's; anything else is dropped), or of
    the bound ones when none are given: what a job owed or sent now takes along."""
    if fields is None:
        fields = _current.get()
    if not isinstance(fields, Mapping):
        return {}
    return {name: str(fields[name]) for name in CARRIED
            if isinstance(fields.get(name), str | int) and fields[name] != ""}


def turn_context(platform: str, platform_user_id: str) -> AbstractContextManager[None]:
    """:func:`bound` to a new turn id, the platform and the hashed user: one message being answered."""
    return bound(turn=new_turn_id(), platform=platform, user=hash_user(platform, platform_user_id))


def new_turn_id() -> str:
    return secrets.token_hex(TURN_ID_BYTES)


def hash_user(platform: str, platform_user_id: str) -> str:
    """The keyed hash that stands for a user in logs (see the module's docstring)."""
    message = f"{platform}\0{platform_user_id}".encode()
    return hmac.new(_process_key(), message, hashlib.sha256).hexdigest()[:USER_HASH_CHARS]


def derive_key(own_key: str | None, deployment_secrets: Iterable[str]) -> bytes | None:
    """``LOG_HASH_KEY`` when set, otherwise a key derived from the deployment's secrets (None without any)."""
    if own_key:
        return own_key.encode()
    known = sorted({secret for secret in deployment_secrets if secret})
    if not known:
        return None
    return hmac.new(_KEY_LABEL, "\0".join(known).encode(), hashlib.sha256).digest()


def use_key(key: bytes | None) -> None:
    """The key :func:`hash_user` uses in this process; None: a random one (hashes then match within this run only)."""
    global _key
    _key = key or os.urandom(32)


def _process_key() -> bytes:
    if _key is None:
        use_key(None)
    assert _key is not None
    return _key
