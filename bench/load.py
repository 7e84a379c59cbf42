"""Whole-system load: ``mnemo bench load``.

The real processes, each started by its own command on one database and one broker: two Telegram
webhook replicas (``mnemo telegram --webhook-url …``, the bench plays the load balancer), two Discord
shard processes (``mnemo discord --shard-count 2 --shards i``), two workers and beat; against the
loopback fakes of Telegram (:mod:`bench.fakes.telegram_api`), Discord (REST and gateway) and an OpenAI
server that answers every request after ``llm_seconds``. Simulated users (10,000 by default, half on
each platform) send a mix of messages: chat in private, mentions in groups, ``/memories`` and
``/remind``. The offered rate ramps stage by stage until a stage is not sustained.

Per stage: messages/s answered, reply overhead p50/p99 (the time to the answer less the model's own
``llm_seconds`` for messages the model answered), worker lag p99 (a user message stored → its
extraction job done), reminder lateness p99 (reminders due in the stage, all at one moment: the
fan-out, from due to the platform's receipt), errors, and what each process, the database and the
broker used. The answer times come from the fakes' own arrival clocks. Writes ``load.json``.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.fakes.discord_api import FakeDiscord
from bench.fakes.discord_gateway import FakeGateway
from bench.fakes.openai_server import FakeOpenAI
from bench.fakes.telegram_api import FakeTelegram, chat_object, user_object
from bench.hot_path import ROOT, scratch_database
from bench.llm_calls import EPISODE_SUMMARY, EXTRACTION, SITTING, TURN, count_kinds
from bench.stats import percentile
from bench.worker import background_answer
from bench.worker_process import stop_group, wait_for

WEBHOOK_URL = "https://bench.invalid/telegram/hook"
SECRET = "bench-webhook-secret_0123456789"
GUILDS = (str(4 << 22), str(5 << 22))  # one on each of the two shards
TELEGRAM_GROUPS = 200
"""Group chats on Telegram, and channels per server on Discord: a user talks in the one of their number. One
busy group gets at most a message a second from a bot (Telegram's own limit is 20 a minute there)."""
CHANNELS_PER_GUILD = 100
MIX = (("chat", 0.60), ("group", 0.15), ("memories", 0.15), ("remind", 0.10))
START_SECONDS = 120
SENDERS = 32
ANSWER_GRACE_SECONDS = 12.0
"""How long after a stage ends its messages may still be answered (and counted) before the next starts."""
WARM_UP_MESSAGES = 8
WARM_UP_SECONDS = 60
WARM_UP_STAGE = -1
WAITING_TURNS = "SELECT count(*) FROM conversation_turns WHERE role = 'user' AND NOT extracted AND NOT paused"
"""The warm-up's messages count in no stage."""
SUSTAINED_SHARE = 0.95
"""A stage is sustained when this share of its messages was answered within the grace."""
OVERHEAD_CEILING_SECONDS = 5.0
"""…and the reply overhead's p99 stayed below this."""
LOG_LINES = 30
BENCH = "bench (fakes, load)"


@dataclass(frozen=True)
class Options:
    database_url: str | None
    redis_url: str | None
    out_dir: Path
    users: int = 10_000
    llm_seconds: float = 2.0
    rates: tuple[float, ...] = (2, 5, 10, 20, 30, 40, 60)
    stage_seconds: float = 30.0
    reminders_per_stage: int = 100
    reminder_scan_seconds: float = 5.0
    worker_concurrency: int = 2
    grace_seconds: float = ANSWER_GRACE_SECONDS
    """Each worker's slots (``mnemo worker --concurrency``; 2 is the product's default)."""
    """Beat's reminder scan (``REMINDER_SCAN_SECONDS``; the product's default is 60 s, which alone makes a
    reminder up to a minute late)."""

    @classmethod
    def quick(cls, database_url: str | None, redis_url: str | None, out_dir: Path) -> Options:
        return cls(database_url, redis_url, out_dir, users=500, llm_seconds=0.5, rates=(2, 6), stage_seconds=6.0,
                   reminders_per_stage=10, grace_seconds=7.0)


@dataclass
class Sent:
    """One simulated message: what, where, and when it left (monotonic)."""

    platform: str
    kind: str
    key: str
    """How its answer is found: the chat (private), the message id (groups), the interaction token."""
    stage: int
    at: float


@dataclass
class Stage:
    rate: float
    sent: int = 0
    answered: int = 0
    errors: int = 0
    messages_per_second: float = 0.0
    overhead_p50_ms: float | None = None
    overhead_p99_ms: float | None = None
    overhead_p99_ms_by_kind: dict[str, float] = field(default_factory=dict)
    worker_lag_p99_s: float | None = None
    reminder_lateness_p99_s: float | None = None
    reminders: int = 0
    reminders_received: int = 0
    cpu: dict[str, float] = field(default_factory=dict)
    """Per process (and PostgreSQL's and Redis's processes together): share of one core over the stage."""
    machine_busy: float = 0.0
    """Share of all the machine's cores busy over the stage."""
    db_connections_max: int = 0
    db_connections_allowed: int = 0
    broker_depth_max: int = 0
    sustained: bool = False


@dataclass
class Figures:
    options: dict[str, Any]
    stages: list[Stage]
    saturated_first: str
    cores: int
    model_calls: dict[str, Any] | None = None
    """Model calls per user message that needs the model (chats and mentions), hot path and background apart."""


# -- the processes --------------------------------------------------------------------------------------


@dataclass
class Process:
    name: str
    popen: subprocess.Popen
    log: Path

    def tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-LOG_LINES:])


def environment(database_url: str, options: Options, llm: FakeOpenAI, telegram: FakeTelegram,
                discord: FakeDiscord, data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LOG_", "LLM_", "REDIS_", "TELEGRAM_", "DISCORD_", "METRICS_", "EMBEDDING_",
                                "ACCESS_", "MESSAGE_RATE", "TURN_"))}
    env.update(DATABASE_URL=database_url, LLM_BASE_URL=llm.base_url, LLM_API_KEY="bench", LLM_MODEL="fake-chat",
               LLM_SERVER_SLOTS="0",  # the fake stands for a hosted model, which answers many requests at once
               TELEGRAM_TOKEN=telegram.token, TELEGRAM_API_BASE_URL=telegram.base_url,
               TELEGRAM_WEBHOOK_SECRET=SECRET, DISCORD_TOKEN=discord.token, DISCORD_API_BASE_URL=discord.base_url,
               DEFAULT_TIMEZONE="UTC", PYTHONPATH=str(ROOT), LOG_LEVEL="WARNING", MNEMO_DATA_DIR=str(data_dir),
               REMINDER_SCAN_SECONDS=f"{options.reminder_scan_seconds:g}")
    if options.redis_url:
        env["REDIS_URL"] = options.redis_url
    return env


def start(name: str, argv: list[str], env: dict[str, str], logs: Path) -> Process:
    log = logs / f"{name}.log"
    data_dir = logs / name
    data_dir.mkdir()
    with open(log, "wb") as out:
        popen = subprocess.Popen([sys.executable, "-m", "shared.app.cli", *argv], env={**env, "MNEMO_DATA_DIR":
                                 str(data_dir)}, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    return Process(name, popen, log)


@contextmanager
def the_system(database_url: str, options: Options, telegram: FakeTelegram, discord: FakeDiscord,
               gateway: FakeGateway, llm: FakeOpenAI, logs: Path) -> Iterator[tuple[list[Process], list[int]]]:
    """Every process started and ready; stopped on exit. Yields them and the webhook replicas' ports."""
    env = environment(database_url, options, llm, telegram, discord, logs)
    ports = [free_port(), free_port()]
    processes: list[Process] = []
    try:
        for index, port in enumerate(ports):
            processes.append(start(f"telegram-{index}", ["telegram", "--no-workers", "--webhook-url", WEBHOOK_URL,
                                                         "--listen", "127.0.0.1", "--port", str(port)], env, logs))
        for shard in (0, 1):
            processes.append(start(f"discord-{shard}", ["discord", "--no-workers", "--shard-count", "2", "--shards",
                                                        str(shard)], env, logs))
        for index in (0, 1):
            processes.append(start(f"worker-{index}", ["worker", "--concurrency", str(options.worker_concurrency),
                                                       "--name",
                                                       f"load-{index}@%h"], env, logs))
        processes.append(start("beat", ["beat"], env, logs))

        def ready() -> bool:
            if any(process.popen.poll() is not None for process in processes):
                return True
            return (len(telegram.calls_to("setWebhook")) >= 2 and gateway.ready_shards() == {0, 1}
                    and all(webhook_answers(port) for port in ports))
        wait_for(ready, START_SECONDS, "the bots, workers and beat to start")
        if stopped := [process for process in processes if process.popen.poll() is not None]:
            raise RuntimeError(f"{stopped[0].name} exited with {stopped[0].popen.returncode}:\n{stopped[0].tail()}")
        yield processes, ports
    finally:
        for process in processes:
            stop_group(process.popen)


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def webhook_answers(port: int) -> bool:
    import socket

    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


# -- the users --------------------------------------------------------------------------------------------


class Users:
    """Simulated users, taken in a shuffled round so one user's messages are far apart."""

    def __init__(self, count: int, seed: int = 7) -> None:
        self.order = list(range(count))
        random.Random(seed).shuffle(self.order)
        self.turns = itertools.cycle(self.order)
        self.random = random.Random(seed + 1)

    def next(self) -> tuple[int, str]:
        number = next(self.turns)
        kinds, weights = [kind for kind, _ in MIX], [weight for _, weight in MIX]
        return number, self.random.choices(kinds, weights)[0]


class Load:
    """Sends the simulated messages through the fakes, and finds their answers afterwards."""

    def __init__(self, telegram: FakeTelegram, discord: FakeDiscord, gateway: FakeGateway, ports: list[int]) -> None:
        self.telegram, self.discord, self.gateway = telegram, discord, gateway
        self.urls = [f"http://127.0.0.1:{port}/telegram/hook" for port in ports]
        self.sent: list[Sent] = []
        self.failed_sends = 0
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(SENDERS, thread_name_prefix="load")
        self._replica = itertools.count()
        self._dm_channels: dict[str, str] = {}
        self._channels = {guild: [discord.new_id() for _ in range(CHANNELS_PER_GUILD)] for guild in GUILDS}

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def send(self, number: int, kind: str, stage: int) -> None:
        if number % 2 == 0:
            self._telegram(number, kind, stage)
        else:
            self._discord(number, kind, stage)

    def _telegram(self, number: int, kind: str, stage: int) -> None:
        user = user_object(10_000_000 + number, f"User{number}", language_code="en")
        if kind == "group":
            text = f"@{self.telegram.bot_user['username']} what should I cook tonight?"
            entity = [{"type": "mention", "offset": 0, "length": len(self.telegram.bot_user["username"]) + 1}]
            group = -1001000000000 - number % TELEGRAM_GROUPS
            message = self.telegram.push_message(chat_object(group), user, text, entities=entity)
            key = f"{group}:{message['message_id']}"
        else:
            text = {"chat": f"I went hiking with my dog today, number {number}", "memories": "/memories",
                    "remind": "/remind in 2 hours call the bank"}[kind]
            self.telegram.push_message(user["id"], user, text)
            key = str(user["id"])
        at = time.monotonic()
        for update in self.telegram.take_updates():
            self._pool.submit(self._post, self.urls[next(self._replica) % len(self.urls)], update)
        self._record(Sent("telegram", kind, key, stage, at))

    def _post(self, url: str, update: dict[str, Any]) -> None:
        try:
            status = self.telegram.post_update(url, update, timeout=30)
        except OSError:
            status = 0
        if status != 200:
            with self._lock:
                self.failed_sends += 1

    def _discord(self, number: int, kind: str, stage: int) -> None:
        user_id = str(300_000_000_000_000_000 + number)
        if kind in ("memories", "remind"):
            options = {"when": "in 2 hours", "what": "call the bank"} if kind == "remind" else None
            guild = GUILDS[number % 4 // 2] if number % 3 == 0 else None
            payload = self.discord.slash_command(kind, options, user_id=user_id, guild_id=guild,
                                                 channel_id=self._channel(guild, number) if guild else
                                                 self.discord.dm_channel(user_id))
            key, event = payload["token"], "INTERACTION_CREATE"
        elif kind == "group":
            guild = GUILDS[number % 4 // 2]
            payload = self.discord.incoming_message(f"<@{self.discord.bot_user['id']}> what should I cook tonight?",
                                                    user_id=user_id, guild_id=guild,
                                                    channel_id=self._channel(guild, number),
                                                    mentions=(self.discord.bot_user,))
            key, event = payload["id"], "MESSAGE_CREATE"
        else:
            payload = self.discord.incoming_message(f"I went hiking with my dog today, number {number}",
                                                    user_id=user_id)
            key, event = payload["channel_id"], "MESSAGE_CREATE"
        at = time.monotonic()
        self._pool.submit(self._dispatch, event, payload)
        self._record(Sent("discord", kind, key, stage, at))

    def _channel(self, guild: str, number: int) -> str:
        return self._channels[guild][number // 4 % CHANNELS_PER_GUILD]

    def _dispatch(self, event: str, payload: dict[str, Any]) -> None:
        try:
            self.gateway.dispatch(event, payload)
        except (LookupError, TimeoutError, OSError):
            with self._lock:
                self.failed_sends += 1

    def _record(self, sent: Sent) -> None:
        with self._lock:
            self.sent.append(sent)

    # -- the answers ------------------------------------------------------------------------------------

    def answers(self) -> dict[tuple[str, str], list[tuple[float, str]]]:
        """Every answer the bots gave, by where it is found: (platform, key) → [(arrival, text)], in order."""
        found: dict[tuple[str, str], list[tuple[float, str]]] = {}
        for call in self.telegram.calls_to("sendMessage"):
            chat, text = str(call.params.get("chat_id")), str(call.params.get("text", ""))
            replied = call.params.get("reply_parameters")
            replied = json.loads(replied) if isinstance(replied, str) else replied
            key = f"{chat}:{replied['message_id']}" if isinstance(replied, dict) and chat.startswith("-") else chat
            found.setdefault(("telegram", key), []).append((call.at, text))
        for request in self.discord.requests:
            body = request.json if isinstance(request.json, dict) else {}
            if request.method == "POST" and request.path.endswith("/messages") and "channel_id" in request.params:
                reference = body.get("message_reference") or {}
                key = str(reference["message_id"]) if reference else request.params["channel_id"]
                found.setdefault(("discord", key), []).append((request.at, str(body.get("content", ""))))
        for response in self.discord.interaction_responses:
            if response["type"] == 4:
                found.setdefault(("discord", response["token"]), []).append((response["at"], response["content"]))
        for followup in self.discord.followups:
            found.setdefault(("discord", followup["token"]), []).append((followup["at"], followup["content"]))
        for answers in found.values():
            answers.sort()
        return found


BUSY_PREFIXES = ("Lots of people are talking to me right now", "现在找我聊天的人有点多")


def answer_to(sent: Sent, answers: list[tuple[float, str]]) -> tuple[float, str] | None:
    """The first answer after the message left, not counting a "busy, one moment" (nor a seeded reminder)."""
    for at, text in answers:
        if at >= sent.at and not text.startswith(BUSY_PREFIXES) and "load reminder s" not in text:
            return at, text
    return None


# -- a run ------------------------------------------------------------------------------------------------


def run(options: Options) -> Figures:
    options.out_dir.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        database_url = stack.enter_context(scratch_database(options.database_url))
        # the real APIs keep a client's connection for its next request; so do the fakes here
        telegram = stack.enter_context(FakeTelegram(keep_alive=True))
        discord = stack.enter_context(FakeDiscord(keep_alive=True))
        gateway = stack.enter_context(FakeGateway(discord, shard_count=2))
        llm = stack.enter_context(FakeOpenAI(models=("fake-chat",), latency=options.llm_seconds, keep_alive=True))
        llm.set_responder(background_answer)
        for guild in GUILDS:
            gateway.add_guild(guild)
        logs = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mnemo-bench-load-")))
        processes, ports = stack.enter_context(the_system(database_url, options, telegram, discord, gateway, llm,
                                                          logs))
        load = Load(telegram, discord, gateway, ports)
        stack.callback(load.close)
        stages = ramp(options, load, processes, database_url)
        calls = model_calls(llm, load, database_url)
    figures = Figures(options={"users": options.users, "llm_seconds": options.llm_seconds,
                               "stage_seconds": options.stage_seconds, "broker": "redis" if options.redis_url
                               else "postgresql", "reminders_per_stage": options.reminders_per_stage,
                               "reminder_scan_seconds": options.reminder_scan_seconds,
                               "worker_concurrency": options.worker_concurrency},
                      stages=stages, saturated_first=saturation(stages, options), cores=os.cpu_count() or 1,
                      model_calls=calls)
    (options.out_dir / "load.json").write_text(json.dumps(asdict(figures), indent=2))
    return figures


def model_calls(llm: FakeOpenAI, load: Load, database_url: str) -> dict[str, Any]:
    """The fake model's requests by job, per message of the stages that a model answers; and how many user turns
    still wait for their sitting to be read (their sittings are open when the run ends, so their extraction is
    not counted yet: the background figure is a lower bound while that number is large)."""
    from sqlalchemy import text

    from shared.db.engine import make_engine

    messages = sum(1 for sent in load.sent if sent.stage != WARM_UP_STAGE and sent.kind in ("chat", "group"))
    counts = count_kinds(llm.chat_requests())
    engine = make_engine(database_url)
    try:
        with engine.connect() as connection:
            waiting = connection.scalar(text(WAITING_TURNS))
    finally:
        engine.dispose()
    background = sum(count for kind, count in counts.items() if kind in (EXTRACTION, EPISODE_SUMMARY, SITTING))
    return {"messages": messages, "calls": counts,
            "hot_path_per_message": counts.get(TURN, 0) / messages if messages else 0.0,
            "background_per_message": background / messages if messages else 0.0,
            "turns_waiting_for_their_sitting": int(waiting or 0)}


def ramp(options: Options, load: Load, processes: list[Process], database_url: str) -> list[Stage]:
    from shared.db.engine import make_engine

    engine = make_engine(database_url)
    users = Users(options.users)
    stages: list[Stage] = []
    warm_up(load, options.users)
    try:
        for number, rate in enumerate(options.rates):
            stage = Stage(rate=rate)
            reminders = (seed_reminders(engine, number, options.reminders_per_stage, options.stage_seconds / 2)
                         if number else [])
            began_wall = datetime.now(UTC)
            with Sampler(processes, engine, options.redis_url) as sampler:
                offer(load, users, rate, options.stage_seconds, number)
                settle(load, number, engine, began_wall, reminders, options.grace_seconds)
            measure(stage, number, load, options)
            stage.cpu, stage.db_connections_max, stage.broker_depth_max = sampler.figures()
            stage.machine_busy = round(sampler.machine_busy, 3)
            stage.db_connections_allowed = max_connections(engine)
            stage.worker_lag_p99_s = worker_lag_p99(engine, began_wall)
            stage.reminders_received, stage.reminder_lateness_p99_s = reminder_lateness(load, reminders)
            stage.reminders = len(reminders)
            stages.append(stage)
            print(stage_line(stage), flush=True)
            if not stage.sustained:
                break
    finally:
        engine.dispose()
    return stages


def warm_up(load: Load, users: int) -> None:
    """Chat messages and group mentions on each platform, answered before the first stage (or a
    minute passed): the first messages a process answers load what it needs (the tokenizer's dictionary,
    connections), which is part of starting it, not of any stage's figures. Its users are none of the
    stages' users."""
    first = users + (-users) % 4  # the group mentions then reach both Discord guilds, hence both shards
    for index in range(WARM_UP_MESSAGES):
        load.send(first + index, ("chat", "group")[index // 4 % 2], WARM_UP_STAGE)
    deadline = time.monotonic() + WARM_UP_SECONDS
    while time.monotonic() < deadline:
        answers = load.answers()
        if all(answer_to(sent, answers.get((sent.platform, sent.key), []))
               for sent in load.sent if sent.stage == WARM_UP_STAGE):
            return
        time.sleep(0.2)
    print(f"warm-up: not every message was answered within {WARM_UP_SECONDS} s", flush=True)


def offer(load: Load, users: Users, rate: float, seconds: float, stage: int) -> None:
    """Send ``rate`` messages a second for ``seconds``, evenly spaced (open loop: answers are not awaited)."""
    began = time.monotonic()
    for index in range(int(rate * seconds)):
        delay = began + index / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        load.send(*users.next(), stage)


def settle(load: Load, number: int, engine, since: datetime, reminders: list[tuple[int, str, datetime]],
           grace: float) -> None:
    """Wait, at most ``grace`` seconds, until stage ``number`` is done: every message answered, every reminder
    received and every extraction it owed the worker done. Its figures are final from then on (what is
    still missing at the end of the grace counts as not answered, or as late as the time waited)."""
    from sqlalchemy import text

    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        answers = load.answers()
        if (all(answer_to(sent, answers.get((sent.platform, sent.key), []))
                for sent in load.sent if sent.stage == number)
                and reminder_lateness(load, reminders)[0] == len(reminders)):
            with engine.connect() as connection:
                if connection.execute(text(OWED), {"since": since}).scalar_one() == 0:
                    return
        time.sleep(0.25)


def measure(stage: Stage, number: int, load: Load, options: Options) -> None:
    answers = load.answers()
    mine = [sent for sent in load.sent if sent.stage == number]
    overheads: list[float] = []
    by_kind: dict[str, list[float]] = {}
    for sent in mine:
        answer = answer_to(sent, answers.get((sent.platform, sent.key), []))
        if answer is None:
            stage.errors += 1
            continue
        at, text = answer
        if text.startswith("Sorry, something went wrong"):
            stage.errors += 1
        stage.answered += 1
        model = options.llm_seconds if sent.kind in ("chat", "group") else 0.0
        overheads.append(max(0.0, at - sent.at - model))
        by_kind.setdefault(f"{sent.platform} {sent.kind}", []).append(overheads[-1])
    stage.sent = len(mine)
    stage.messages_per_second = stage.answered / options.stage_seconds
    if overheads:
        stage.overhead_p50_ms = percentile(overheads, 0.50) * 1000
        stage.overhead_p99_ms = percentile(overheads, 0.99) * 1000
        stage.overhead_p99_ms_by_kind = {kind: round(percentile(spent, 0.99) * 1000, 1)
                                         for kind, spent in sorted(by_kind.items())}
    stage.sustained = (stage.answered >= SUSTAINED_SHARE * max(stage.sent, 1)
                       and (stage.overhead_p99_ms or 0) < OVERHEAD_CEILING_SECONDS * 1000)


WORKER_LAG = """SELECT extract(epoch FROM done_at - created_at) FROM jobs_outbox
                WHERE task = 'extract_turn' AND created_at >= :since AND done_at IS NOT NULL"""
OWED = "SELECT count(*) FROM jobs_outbox WHERE task = 'extract_turn' AND created_at >= :since AND done_at IS NULL"


def worker_lag_p99(engine, since: datetime) -> float | None:
    """p99 of message stored → extraction done, over the stage's messages; those not done yet count as
    their age now."""
    from sqlalchemy import text

    with engine.connect() as connection:
        lags = [float(row[0]) for row in connection.execute(text(WORKER_LAG), {"since": since})]
        owed = connection.execute(text(OWED), {"since": since}).scalar_one()
    lags += [(datetime.now(UTC) - since).total_seconds()] * owed
    return percentile(lags, 0.99) if lags else None


SEED_REMINDERS = """
INSERT INTO todos (user_id, chat_id, content, due_at, remind_at, timezone, status, source)
SELECT user_id, chat_id, 'load reminder s' || :stage || 'u' || user_id || 'x', :due, :due, 'UTC', 'pending',
       'command'
FROM (SELECT DISTINCT ON (t.user_id) t.user_id, t.chat_id FROM conversation_turns t
      JOIN chats c ON c.id = t.chat_id WHERE c.kind = 'private' AND t.role = 'user'
      ORDER BY t.user_id, t.id) AS spoken
ORDER BY random() LIMIT :count RETURNING id, content, remind_at"""


def seed_reminders(engine, stage: int, count: int, in_seconds: float) -> list[tuple[int, str, datetime]]:
    """``count`` reminders of users who have spoken, all due at one moment ``in_seconds`` from now."""
    from sqlalchemy import text

    due = datetime.now(UTC) + timedelta(seconds=in_seconds)
    with engine.begin() as connection:
        rows = connection.execute(text(SEED_REMINDERS), {"due": due, "count": count, "stage": stage})
        return [(row.id, row.content, row.remind_at) for row in rows]


def reminder_lateness(load: Load, reminders: list[tuple[int, str, datetime]]) -> tuple[int, float | None]:
    """How many were received, and the p99 from each reminder's due time to the platform's receipt of it
    (one not received counts as late as the time waited)."""
    if not reminders:
        return 0, None
    offset = datetime.now(UTC).timestamp() - time.monotonic()  # the fakes' monotonic clock, on the wall
    received: dict[str, float] = {}
    for call in load.telegram.calls_to("sendMessage"):
        received.setdefault(str(call.params.get("text", "")), call.at + offset)
    for request in load.discord.requests:
        if isinstance(request.json, dict) and request.method == "POST":
            received.setdefault(str(request.json.get("content", "")), request.at + offset)
    late: list[float] = []
    for _id, content, due in reminders:
        arrived = next((at for text, at in received.items() if content in text), None)
        late.append((arrived if arrived is not None else datetime.now(UTC).timestamp()) - due.timestamp())
    return sum(any(content in text for text in received) for _id, content, _due in reminders), percentile(late, 0.99)


def max_connections(engine) -> int:
    from sqlalchemy import text

    with engine.connect() as connection:
        return int(connection.execute(text("SHOW max_connections")).scalar_one())


class Sampler:
    """Samples, once a second while the block runs: each process's CPU (with its children), the database's
    connections and the broker's queue depth."""

    def __init__(self, processes: list[Process], engine, redis_url: str | None) -> None:
        self.processes, self.engine, self.redis_url = processes, engine, redis_url
        self._stop = threading.Event()
        self._connections: list[int] = []
        self._depths: list[int] = []
        self._cpu_start: dict[str, float] = {}
        self._cpu: dict[str, float] = {}
        self._thread = threading.Thread(target=self._sample, name="load-sampler", daemon=True)
        self._began = 0.0
        self._seconds = 0.0
        self._machine_start = (0.0, 0.0)
        self.machine_busy = 0.0

    def __enter__(self) -> Sampler:
        self._began = time.monotonic()
        self._cpu_start = {p.name: tree_cpu_seconds(p.popen.pid) for p in self.processes}
        self._cpu_start[BENCH] = own_cpu_seconds()
        self._cpu_start.update(servers_cpu_seconds())
        self._machine_start = machine_cpu()
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._seconds = time.monotonic() - self._began
        self._cpu = {p.name: (tree_cpu_seconds(p.popen.pid) - self._cpu_start[p.name]) / self._seconds
                     for p in self.processes}
        self._cpu[BENCH] = (own_cpu_seconds() - self._cpu_start[BENCH]) / self._seconds
        for name, seconds in servers_cpu_seconds().items():
            self._cpu[name] = (seconds - self._cpu_start.get(name, 0.0)) / self._seconds
        busy, total = (now - then for now, then in zip(machine_cpu(), self._machine_start, strict=True))
        self.machine_busy = busy / total if total else 0.0

    def _sample(self) -> None:
        from sqlalchemy import text

        client = None
        if self.redis_url:
            import redis

            client = redis.Redis.from_url(self.redis_url)
        while not self._stop.wait(1.0):
            try:
                with self.engine.connect() as connection:
                    self._connections.append(connection.execute(text(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")).scalar_one())
                    if client is None:
                        self._depths.append(connection.execute(text(
                            "SELECT count(*) FROM jobs_outbox WHERE status <> 'done'")).scalar_one())
                if client is not None:
                    from worker.celery_app import MODEL_QUEUES, QUEUES

                    self._depths.append(sum(int(client.llen(queue)) for queue in (*QUEUES, *MODEL_QUEUES)))
            except Exception:  # a sample missed; the figures are maxima
                continue

    def figures(self) -> tuple[dict[str, float], int, int]:
        return ({name: round(share, 3) for name, share in self._cpu.items()}, max(self._connections, default=0),
                max(self._depths, default=0))


SERVERS = {"postgres": "postgres", "redis-server": "redis"}
"""The servers' processes by their command name: their CPU is reported as one figure each."""


def servers_cpu_seconds() -> dict[str, float]:
    """CPU seconds of every PostgreSQL and Redis process on the machine."""
    tick, found = os.sysconf("SC_CLK_TCK"), dict.fromkeys(SERVERS.values(), 0.0)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                head, tail = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)
            except OSError:
                continue
            name = SERVERS.get(head.split("(", 1)[1])
            if name is not None:
                found[name] += _with_reaped_children(tail.split()) / tick
    return found


def _with_reaped_children(fields: list[str]) -> int:
    """A process's user and system ticks and those of its children it has reaped (``/proc/PID/stat`` after the
    name): a PostgreSQL backend or a pool process that exits within a stage leaves its CPU in its parent's count,
    where counting only the living made PostgreSQL's figure negative."""
    return sum(int(fields[index]) for index in (11, 12, 13, 14))


def machine_cpu() -> tuple[float, float]:
    """(busy, total) jiffies of all cores since boot (``/proc/stat``)."""
    values = [int(value) for value in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]
    return float(sum(values) - idle), float(sum(values))


def own_cpu_seconds() -> float:
    """This process's CPU seconds (the fakes and the load generator), its children not counted."""
    usage = os.times()
    return usage.user + usage.system


def tree_cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of ``pid`` and its descendants now (Linux ``/proc``)."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        times[int(entry)] = _with_reaped_children(fields) / tick
    family, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        children = [child for child, of in parents.items() if of == parent and child not in family]
        family.update(children)
        frontier.extend(children)
    return sum(times.get(member, 0.0) for member in family)


WORKER_LAG_CEILING_SECONDS = 30.0
"""Past this p99 from a message to its extraction, the workers are falling behind."""


def limits_reached(stage: Stage, options: Options) -> list[str]:
    """What ran out at this stage, each with the figures that show it."""
    found = []
    cores = os.cpu_count() or 1
    share = max(stage.cpu.values(), default=0.0)
    if stage.machine_busy >= 0.75 or share >= 0.9:
        top = ", ".join(f"{name} {used:.0%}" for name, used in sorted(stage.cpu.items(), key=lambda i: -i[1])[:3])
        found.append(f"CPU ({stage.machine_busy:.0%} of the machine's {cores} cores busy; of one core: {top})")
    if (stage.worker_lag_p99_s or 0) > WORKER_LAG_CEILING_SECONDS:
        slots = 2 * options.worker_concurrency
        found.append(f"the workers (worker lag p99 {stage.worker_lag_p99_s:.0f} s, up to {stage.broker_depth_max} "
                     f"jobs waiting on the broker: each job waits on the model, {options.llm_seconds:g} s, in one of "
                     f"{slots} worker slots)")
    if stage.db_connections_allowed and stage.db_connections_max >= 0.8 * stage.db_connections_allowed:
        found.append(f"database connections ({stage.db_connections_max} of {stage.db_connections_allowed})")
    if not stage.sustained:
        worst = max(stage.overhead_p99_ms_by_kind.items(), key=lambda item: item[1], default=("-", 0.0))
        found.append(f"the replies ({stage.answered} of {stage.sent} answered, overhead p99 "
                     f"{(stage.overhead_p99_ms or 0):.0f} ms, worst {worst[0]} {worst[1]:.0f} ms)")
    return found


def saturation(stages: list[Stage], options: Options) -> str:
    """The first stage where something ran out, and what; and where the replies stopped keeping up."""
    first = next(((stage, found) for stage in stages if (found := limits_reached(stage, options))), None)
    if first is None:
        return f"nothing up to {stages[-1].rate:g} msg/s" if stages else "nothing measured"
    stage, found = first
    verdict = f"at {stage.rate:g} msg/s: " + "; ".join(found)
    unsustained = next((s for s in stages if not s.sustained), None)
    if unsustained is not None and unsustained is not stage:
        verdict += f". The replies stopped keeping up at {unsustained.rate:g} msg/s"
    return verdict


def stage_line(stage: Stage) -> str:
    def ms(value: float | None) -> str:
        return "—" if value is None else f"{value:.0f} ms"

    def s(value: float | None) -> str:
        return "—" if value is None else f"{value:.1f} s"

    return (f"load {stage.rate:g} msg/s offered: {stage.messages_per_second:.1f} answered/s ({stage.answered}/"
            f"{stage.sent}), overhead p50 {ms(stage.overhead_p50_ms)} p99 {ms(stage.overhead_p99_ms)}, worker lag "
            f"p99 {s(stage.worker_lag_p99_s)}, reminders {stage.reminders_received}/{stage.reminders} late p99 "
            f"{s(stage.reminder_lateness_p99_s)}, errors {stage.errors}, "
            f"{'sustained' if stage.sustained else 'NOT sustained'}")


def report(figures: Figures) -> str:
    lines = [f"mnemo bench load: {figures.options['users']} users, model {figures.options['llm_seconds']:g} s, "
             f"broker {figures.options['broker']}, {figures.cores} cores"]
    lines += [stage_line(stage) for stage in figures.stages]
    best = max((stage for stage in figures.stages if stage.sustained), key=lambda stage: stage.rate, default=None)
    lines.append(f"load_sustained_messages_per_second: {best.messages_per_second:.1f}" if best else
                 "load_sustained_messages_per_second: none of the stages")
    lines.append(f"load_saturated_first: {figures.saturated_first}")
    if calls := figures.model_calls:
        lines.append(f"hot_path_model_calls_per_message: {calls['hot_path_per_message']:.2f}")
        lines.append(f"background_model_calls_per_message: {calls['background_per_message']:.2f} "
                     f"({calls['turns_waiting_for_their_sitting']} user turns still wait for their sitting's read)")
    for stage in figures.stages:
        top = sorted(stage.cpu.items(), key=lambda item: -item[1])[:4]
        lines.append(f"  {stage.rate:g} msg/s: machine {stage.machine_busy:.0%} busy; of one core: "
                     + ", ".join(f"{name} {share:.0%}" for name, share in top))
    return "\n".join(lines)
