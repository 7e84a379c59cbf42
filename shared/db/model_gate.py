"""Where the model gate (:mod:`shared.llm.gate`) counts its holds: Redis when it is the broker, else PostgreSQL.

Redis keeps two sorted sets (live turns, background calls), each member scored by when its hold runs out; a
Lua script takes a background slot atomically. PostgreSQL keeps one row a hold in ``model_call_holds``, and a
transaction-scoped advisory lock makes taking a slot atomic across processes. Both forget holds whose lease
ran out before counting.
"""

from __future__ import annotations

import ipaddress
import time
from typing import Protocol
from urllib.parse import urlsplit

from sqlalchemy import Engine, text

from shared.db.limit_models import ModelCallHold

TABLE = ModelCallHold.__tablename__
LIVE_KEY = "mnemo:model-gate:live"
BACKGROUND_KEY = "mnemo:model-gate:background"
ADVISORY_LOCK = 0x6D6E656D6F67  # "mnemog": one lock for taking background slots
LOCAL_HOSTS = frozenset({"localhost", "host.docker.internal", "host.containers.internal"})

TAKE_SCRIPT = """
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if ARGV[5] == '1' and redis.call('ZCARD', KEYS[1]) > 0 then return 0 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3])
return 1
"""


class RedisModelGate:
    def __init__(self, redis_url: str, slots: int) -> None:
        import redis

        self.slots = slots
        self.client = redis.Redis.from_url(redis_url)
        self._take = self.client.register_script(TAKE_SCRIPT)

    def enter_live(self, holder: str, seconds: float) -> None:
        self.client.zadd(LIVE_KEY, {holder: time.time() + seconds})

    def try_background(self, holder: str, seconds: float, yield_to_live: bool) -> bool:
        now = time.time()
        taken = self._take(keys=[LIVE_KEY, BACKGROUND_KEY],
                           args=[now, self.slots, holder, now + seconds, "1" if yield_to_live else "0"])
        return bool(taken)

    def leave(self, holder: str) -> None:
        with self.client.pipeline(transaction=False) as pipe:
            pipe.zrem(LIVE_KEY, holder)
            pipe.zrem(BACKGROUND_KEY, holder)
            pipe.execute()


ENTER = text(f"INSERT INTO {TABLE} (holder, kind, expires_at) "
             "VALUES (:holder, :kind, now() + make_interval(secs => :seconds))")
LOCK = text("SELECT pg_advisory_xact_lock(:key)")
FORGET_EXPIRED = text(f"DELETE FROM {TABLE} WHERE expires_at <= now()")
COUNT = text(f"SELECT count(*) FILTER (WHERE kind = 'live'), count(*) FILTER (WHERE kind = 'background') "
             f"FROM {TABLE}")
LEAVE = text(f"DELETE FROM {TABLE} WHERE holder = :holder")


class PostgresModelGate:
    def __init__(self, engine: Engine, slots: int) -> None:
        self.engine, self.slots = engine, slots

    def enter_live(self, holder: str, seconds: float) -> None:
        with self.engine.begin() as connection:
            connection.execute(ENTER, {"holder": holder, "kind": "live", "seconds": seconds})

    def try_background(self, holder: str, seconds: float, yield_to_live: bool) -> bool:
        with self.engine.begin() as connection:
            connection.execute(LOCK, {"key": ADVISORY_LOCK})
            connection.execute(FORGET_EXPIRED)
            live, background = connection.execute(COUNT).one()
            if (yield_to_live and live) or background >= self.slots:
                return False
            connection.execute(ENTER, {"holder": holder, "kind": "background", "seconds": seconds})
            return True

    def leave(self, holder: str) -> None:
        with self.engine.begin() as connection:
            connection.execute(LEAVE, {"holder": holder})


def server_slots(configured: int | None, llm_base_url: str | None) -> int:
    """The model server's slots the gate shares out (0: no gate): ``LLM_SERVER_SLOTS`` when set, else one for a
    server on this machine (a local model is usually one llama.cpp slot), else none (a hosted API)."""
    if configured is not None:
        return configured
    if not llm_base_url:
        return 0
    host = (urlsplit(llm_base_url).hostname or "").lower()
    if host in LOCAL_HOSTS:
        return 1
    try:
        return 1 if ipaddress.ip_address(host).is_loopback else 0
    except ValueError:
        return 0


class GateSettings(Protocol):
    """What the gate reads of :class:`shared.settings.Settings`, which is not imported here: shared.settings
    imports shared.access, whose service reaches shared.db through the repositories, a circle."""

    @property
    def llm_server_slots(self) -> int | None: ...

    @property
    def llm_base_url(self) -> str | None: ...

    @property
    def redis_url(self) -> str | None: ...


def model_gate(settings: GateSettings, engine: Engine) -> RedisModelGate | PostgresModelGate | None:
    """The gate every process of this deployment shares, or None when the model needs none."""
    slots = server_slots(settings.llm_server_slots, settings.llm_base_url)
    if not slots:
        return None
    if settings.redis_url:
        return RedisModelGate(settings.redis_url, slots)
    return PostgresModelGate(engine, slots)
