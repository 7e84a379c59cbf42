"""Hot-path benchmark: the conversation service's own cost, and 200 conversations in flight.

Runs the product's ``ConversationService`` against a fake OpenAI-compatible server on loopback and
a fresh database (an embedded PostgreSQL in a temporary directory unless ``--database-url`` names
a server to create a scratch database on). Prints the figures and writes them as JSON. With
``usage_ab`` it also sends messages in turn through the service as shipped and through one whose
usage recording is a no-op (twice: two identical sides show how far a percentile wanders by chance), in
the same run, so a busy machine slows all alike: the difference is what recording usage costs the hot path.
With ``tokens_per_second``, messages one after another to a fake model writing at that rate (one token of four
characters a chunk): how long after each message its reply's first words could be shown (the service's
``on_text``, what every front-end shows at once) beside how long until the whole reply was there (what a user
saw before replies streamed).
"""

from __future__ import annotations

import asyncio
import json
import logging
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the fakes live in the checkout's tests/ (the bench runs from a checkout)
    sys.path.insert(0, str(ROOT))

from bench.databases import create_database, drop_database  # noqa: E402
from bench.fakes.openai_server import FakeOpenAI  # noqa: E402
from bench.stats import percentile  # noqa: E402

REPLY: dict[str, object] = {
         "emotion": {"primary": "neutral", "category": "neutral", "confidence": 0.9, "indicators": []},
         "response": "Sounds good.", "memory_update": {"should_store": False, "entries": []}, "todos": [],
         "topic": None, "context_variables": []}
LIVE_REPLY: dict[str, object] = {
    "response": ("That sounds like a lovely way to spend the weekend. I remember you said the lake is at its best "
                 "in autumn, when the light is low and the paths are quiet. Did you walk all the way round this "
                 "time, or stop at the tea house on the far shore?"),
    **{key: value for key, value in REPLY.items() if key != "response"},
    "memory_update": {"should_store": True, "entries": [
        {"type": "event", "subject": "user", "predicate": "walked_by", "content": "walked round the lake at the "
         "weekend", "tier": "short", "importance": "passing"}]}}
"""A turn in the schema's order (grammar-constrained servers write the reply first), about 100 tokens long."""
LIVE_MESSAGES = 30
AB_SIDES = ("with_usage", "without_usage", "without_usage_again")
HTTP_CLIENT_LOGGER = "httpx2"
"""The OpenAI SDK's HTTP client logs every request at INFO: thousands of lines in a benchmark."""


@contextmanager
def scratch_database(database_url: str | None, keep: Path | None = None):
    """A fresh, migrated database for the run; dropped (or the embedded server stopped) afterwards. With ``keep``,
    the embedded server's data directory is ``keep`` and stays: a later run on it finds what this one left,
    migrated to the code's revision."""
    from shared.db import migrate
    from shared.db.embedded import EmbeddedPostgres

    if keep is not None:
        with EmbeddedPostgres(Path(keep)) as pg:
            migrate.upgrade(pg.url)
            yield pg.url
        return
    if database_url:
        url = create_database(database_url)
        try:
            migrate.upgrade(url)
            yield url
        finally:
            drop_database(database_url, url)
        return
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-") as data_dir, EmbeddedPostgres(Path(data_dir)) as pg:
        migrate.upgrade(pg.url)
        yield pg.url


def build_service(url: str, llm: FakeOpenAI, pool_size: int, *, clock=None, dispatch=None, engine=None,
                  record_usage: bool = True):
    """The product's conversation service on ``url`` (or ``engine``) with the fake LLM (and its request log line
    muted); without ``record_usage``, one whose usage recording is a no-op (:func:`without_usage_recording`)."""
    from shared.conversation.config import ConversationConfig
    from shared.conversation.service import ConversationService
    from shared.db.engine import make_engine, session_factory
    from shared.llm.client import ChatModel
    from shared.repositories.uow import UnitOfWork
    from shared.settings import load_settings

    settings = load_settings(database_url=url)
    engine = engine or make_engine(url, pool_size=pool_size, max_overflow=pool_size,
                                   prepared_statements=settings.database_prepared_statements)
    sessions = session_factory(engine)
    model = ChatModel(base_url=llm.base_url, api_key="bench", model="fake-chat", timeout_seconds=60)
    config = ConversationConfig.from_settings(settings)
    logging.getLogger(HTTP_CLIENT_LOGGER).setLevel(logging.WARNING)
    uow_factory = (lambda: UnitOfWork(sessions)) if record_usage else without_usage_recording(sessions)
    service = ConversationService(uow_factory, config, chat_model=model, clock=clock, dispatch=dispatch)
    return service, engine


def message(user: int, index: int, text: str):
    from shared.conversation.messages import IncomingMessage

    return IncomingMessage(platform="console", chat_id=f"bench-{user}", user_id=f"bench-{user}", text=text,
                           sent_at=datetime.now(UTC), message_id=f"{user}-{index}")


def message_at(user: str, message_id: str, text: str, sent_at: datetime):
    """``user``'s message in their private console chat."""
    from shared.conversation.messages import IncomingMessage

    return IncomingMessage(platform="console", chat_id=user, user_id=user, text=text, sent_at=sent_at,
                           message_id=message_id)


async def overhead(service, messages: int) -> dict[str, float]:
    """Sequential messages with an instant LLM: the milliseconds the hot path spends outside the LLM."""
    own = []
    for index in range(messages):
        reply = await service.handle_message(message(index % 20, index, f"I like green tea and hiking {index}"))
        own.append(reply.timings_ms["prepare"] + reply.timings_ms["apply"])
    return {"messages": messages, "p50_ms": statistics.median(own), "p95_ms": percentile(own, 0.95),
            "p99_ms": percentile(own, 0.99), "max_ms": max(own)}


def without_usage_recording(sessions):
    """Units of work whose usage recording does nothing (the "before" of the usage A/B)."""
    from shared.repositories.uow import UnitOfWork

    class NoUsage:
        def record(self, *_args, **_kwargs) -> None:
            """Recording skipped."""

    class UnrecordedUnitOfWork(UnitOfWork):
        def __enter__(self):
            super().__enter__()
            self.usage = NoUsage()
            return self

    return lambda: UnrecordedUnitOfWork(sessions)


async def usage_ab(recording, unrecorded, messages: int) -> dict:
    """Messages in turn through ``recording``, ``unrecorded`` and ``unrecorded`` again (which goes first rotates):
    each side's own milliseconds (the whole hot path, and the apply stage, where usage is recorded), the
    difference recording makes, and the difference between the two identical sides: the noise floor of a
    percentile at this many messages."""
    stages: dict[str, dict[str, list[float]]] = {name: {"own": [], "apply": []} for name in AB_SIDES}
    sides = [("with_usage", recording, 2000), ("without_usage", unrecorded, 2500),
             ("without_usage_again", unrecorded, 3000)]  # users of their own
    for index in range(messages):
        shift = index % len(sides)
        for name, service, users in sides[shift:] + sides[:shift]:
            reply = await service.handle_message(
                message(users + index % 20, index, f"I like green tea and hiking {index}"))
            stages[name]["own"].append(reply.timings_ms["prepare"] + reply.timings_ms["apply"])
            stages[name]["apply"].append(reply.timings_ms["apply"])
    figures: dict = {name: {f"{prefix}{cut}_ms": value for stage, prefix in (("own", ""), ("apply", "apply_"))
                            for cut, value in (("p50", statistics.median(spent[stage])),
                                               ("p99", percentile(spent[stage], 0.99)))}
                     for name, spent in stages.items()}
    figures["messages"] = messages
    on, off, again = (figures[name] for name in AB_SIDES)
    for key in ("p50_ms", "p99_ms", "apply_p50_ms", "apply_p99_ms"):
        figures[key.replace("_ms", "_added_ms")] = on[key] - off[key]
        figures[key.replace("_ms", "_noise_ms")] = abs(again[key] - off[key])
    return figures


async def in_flight(service, conversations: int) -> dict[str, float]:
    """``conversations`` users writing at once while the LLM takes its time."""
    started = time.perf_counter()
    replies = await asyncio.gather(*(service.handle_message(message(1000 + user, 0, "hello, how are you?"))
                                     for user in range(conversations)))
    wall = time.perf_counter() - started
    return {"conversations": conversations, "wall_s": wall, "throughput_msg_s": conversations / wall,
            "answered": sum(1 for reply in replies if reply.text)}


async def first_words(service, messages: int) -> dict[str, float]:
    """Messages one after another: the seconds from each until its first words could be shown, and until the whole
    reply was there."""
    first, whole, streamed = [], [], 0
    for index in range(messages):
        heard: list[float] = []
        started = time.perf_counter()
        await service.handle_message(message(3000 + index % 20, index, f"I walked round the lake {index}"),
                                     on_text=lambda _text, heard=heard: heard.append(time.perf_counter()))
        whole.append(time.perf_counter() - started)
        first.append((heard[0] if heard else time.perf_counter()) - started)  # none heard: the whole reply's time
        streamed += bool(heard)
    return {"messages": messages, "first_word_p50_s": statistics.median(first),
            "first_word_p99_s": percentile(first, 0.99), "reply_p50_s": statistics.median(whole),
            "reply_p99_s": percentile(whole, 0.99), "streamed": streamed}


def run(database_url: str | None, out_dir: Path, conversations: int = 200, llm_seconds: float = 2.0,
        messages: int = 200, *, compare_usage: bool = False, tokens_per_second: float | None = None,
        live_messages: int = LIVE_MESSAGES) -> dict:
    with FakeOpenAI(models=("fake-chat",)) as llm, scratch_database(database_url) as url:
        llm.set_responder(lambda _request: REPLY)
        service, engine = build_service(url, llm, pool_size=10)
        try:
            figures = {"overhead": asyncio.run(overhead(service, messages))}
            if compare_usage:
                unrecorded, _same_engine = build_service(url, llm, pool_size=2, engine=engine, record_usage=False)
                figures["usage_ab"] = asyncio.run(usage_ab(service, unrecorded, messages))
            llm.latency = llm_seconds
            figures["in_flight"] = asyncio.run(in_flight(service, conversations)) | {"llm_seconds": llm_seconds}
            if tokens_per_second:
                figures["first_words"] = live_figures(url, engine, tokens_per_second, live_messages)
        finally:
            engine.dispose()
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "hot_path.json").write_text(json.dumps(figures, indent=2))
    return figures


def live_figures(url: str, engine, tokens_per_second: float, messages: int) -> dict:
    """:func:`first_words` against a fake model writing ``tokens_per_second``."""
    with FakeOpenAI(models=("fake-chat",), tokens_per_second=tokens_per_second) as writer:
        writer.set_responder(lambda _request: LIVE_REPLY)
        service, _same_engine = build_service(url, writer, pool_size=2, engine=engine)
        return asyncio.run(first_words(service, messages)) | {"tokens_per_second": tokens_per_second}


def report(figures: dict) -> str:
    o, f = figures["overhead"], figures["in_flight"]
    lines = [f"hot-path overhead ({o['messages']} messages, LLM excluded): p50 {o['p50_ms']:.1f} ms, "
             f"p95 {o['p95_ms']:.1f} ms, p99 {o['p99_ms']:.1f} ms",
             f"{f['conversations']} conversations in flight, LLM {f['llm_seconds']:.1f} s: all answered in "
             f"{f['wall_s']:.2f} s ({f['throughput_msg_s']:.0f} messages/s, {f['answered']} answered)"]
    if "usage_ab" in figures:
        ab = figures["usage_ab"]
        on, off = ab["with_usage"], ab["without_usage"]
        lines.append(f"usage recording, {ab['messages']} messages each, in turn: with p50 {on['p50_ms']:.2f} / "
                     f"p99 {on['p99_ms']:.2f} ms, without p50 {off['p50_ms']:.2f} / p99 {off['p99_ms']:.2f} ms; "
                     f"added p50 {ab['p50_added_ms']:+.2f} ms, p99 {ab['p99_added_ms']:+.2f} ms (two sides without "
                     f"it differ by {ab['p50_noise_ms']:.2f} / {ab['p99_noise_ms']:.2f} ms); in the apply stage, "
                     f"where it is recorded: added p50 {ab['apply_p50_added_ms']:+.2f} ms, "
                     f"p99 {ab['apply_p99_added_ms']:+.2f} ms (noise {ab['apply_p50_noise_ms']:.2f} / "
                     f"{ab['apply_p99_noise_ms']:.2f} ms)")
    if "first_words" in figures:
        live = figures["first_words"]
        lines += [f"first words, {live['messages']} messages to a model writing {live['tokens_per_second']:g} "
                  f"tokens/s ({live['streamed']} shown before the whole reply was there):",
                  f"first_word_p50_s: {live['first_word_p50_s']:.2f}",
                  f"first_word_p99_s: {live['first_word_p99_s']:.2f}",
                  f"reply_p50_s: {live['reply_p50_s']:.2f}",
                  f"reply_p99_s: {live['reply_p99_s']:.2f}"]
    return "\n".join(lines)
