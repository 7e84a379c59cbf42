"""The ``mnemo`` command: one entry point for every process and maintenance task.

Each subcommand is one entry of ``COMMANDS``; process commands (chat, worker, beat, discord,
telegram, api, bench) are added here as they are built, so ``mnemo --help`` lists only what runs.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from shared.app.backups import backup_arguments, restore_arguments, run_backup, run_restore
from shared.app.followups_command import followups_arguments, run_followups_command
from shared.app.maintenance_command import maintenance_arguments, run_maintenance_command
from shared.app.usage_report import run_usage, usage_arguments
from shared.errors import ConfigError, MnemoError
from shared.settings import Settings, load_settings


@dataclass(frozen=True)
class Command:
    """A subcommand: its help line, how to declare its arguments, and what it runs."""

    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[Settings, argparse.Namespace], int]


def _db_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    upgrade = actions.add_parser("upgrade", help="migrate to the newest schema (and switch vectors on)")
    upgrade.add_argument("--revision", default="head", help="target revision (default: head)")
    downgrade = actions.add_parser("downgrade", help="migrate down to a revision ('base' = empty)")
    downgrade.add_argument("revision")
    actions.add_parser("current", help="print the schema revision of the database")


def _run_db(settings: Settings, args: argparse.Namespace) -> int:
    from shared.app.bootstrap import database_url
    from shared.db import migrate

    with database_url(settings) as url:
        if args.action == "upgrade":
            status = migrate.upgrade(url, settings.embedding_dimensions, args.revision)
            vectors = "on" if status.enabled else ("unavailable (lexical search only)"
                                                   if not status.available else "off")
            print(f"Schema at {migrate.current_revision(url)}; vectors {vectors}.")
        elif args.action == "downgrade":
            migrate.downgrade(url, args.revision)
            print(f"Schema at {migrate.current_revision(url) or 'base'}.")
        else:
            print(migrate.current_revision(url) or "base")
    return 0


def _doctor_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--llm-seconds", type=float,
                        help="how long the model check may take: it times the model's first token and speed within "
                             "it, and a whole turn if that fits (default: 30)")


def _run_doctor(settings: Settings, args: argparse.Namespace) -> int:
    from shared.app.doctor import report, run_checks

    checks = run_checks(settings, llm_seconds=args.llm_seconds)
    print(report(settings, checks))
    return 1 if any(check.verdict == "fail" for check in checks) else 0


def _chat_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--user", help="who you are in the console (default: your login name)")
    parser.add_argument("--log-stderr", action="store_true",
                        help="also write the log's warnings and errors to standard error (the log itself is "
                             "MNEMO_DATA_DIR/logs/chat.log; the conversation never shows it)")
    _workers_argument(parser)


def _workers_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", action=argparse.BooleanOptionalAction, default=None,
                        help="start a worker, beat and the panel's API beside it (default: only on the embedded "
                             "database)")


def _warm_tokenizer_in_background() -> None:
    """A front-end loads the Chinese dictionary while its database and companions start, so the first
    message does not wait for it (a thread: nothing here forks without exec)."""
    from shared.search.tokenizer import warm_up

    threading.Thread(target=warm_up, name="warm-tokenizer", daemon=True).start()


def _run_chat(settings: Settings, args: argparse.Namespace) -> int:
    from bot.console import run_chat
    from shared.app.logs import terminal_for_the_conversation

    log = settings.data_dir / "logs" / "chat.log"
    terminal_for_the_conversation(log, warnings_on_stderr=args.log_stderr)
    _warm_tokenizer_in_background()
    return run_chat(settings, user=args.user, workers=args.workers, log=log, log_on_stderr=args.log_stderr)


def _discord_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sync", action="store_true",
                        help="publish the slash commands and exit (once per release, not on every start)")
    parser.add_argument("--guild", type=int, help="with --sync: publish to this server only (development)")
    parser.add_argument("--shard-count", type=int,
                        help="the bot's shards in all processes together (default: as many as Discord recommends)")
    parser.add_argument("--shards", help="the shards this process runs, e.g. 0,1 (with --shard-count; default: all)")
    _workers_argument(parser)


def _run_discord(settings: Settings, args: argparse.Namespace) -> int:
    from bot.discord_bot import Shards, run_discord

    shards = Shards.parse(args.shard_count, args.shards)
    if not args.sync:
        _warm_tokenizer_in_background()
    return run_discord(settings, sync=args.sync, guild_id=args.guild, workers=args.workers, shards=shards)


def _telegram_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--webhook-url", help="public HTTPS URL for webhook mode (default: long polling)")
    parser.add_argument("--listen", default="127.0.0.1", help="webhook mode: address to listen on")
    parser.add_argument("--port", type=int, default=8443, help="webhook mode: port to listen on")
    _workers_argument(parser)


def _run_telegram(settings: Settings, args: argparse.Namespace) -> int:
    from bot.telegram_bot import run_telegram

    _warm_tokenizer_in_background()
    secret = settings.telegram_webhook_secret.get_secret_value() if settings.telegram_webhook_secret else None
    return run_telegram(settings, webhook_url=args.webhook_url, listen=args.listen, port=args.port,
                        secret_token=secret, workers=args.workers)


def _api_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="address to listen on (default: API_HOST)")
    parser.add_argument("--port", type=int, help="port to listen on (default: API_PORT)")


def _run_api(settings: Settings, args: argparse.Namespace) -> int:
    from bot.api.server import run_api

    return run_api(settings, host=args.host, port=args.port)


WORKER_KINDS = ("all", "cpu", "model")
ONE_POOL = "one-pool"
"""How a worker that answers SIGTERM with a cold shutdown (``REMAP_SIGTERM=SIGQUIT``: the one a front-end starts
beside itself, shared/app/processes.py) runs: every queue on its prefork slots, reminders first, as before the
model pool. A cold shutdown puts a running task back on the broker by stopping its process, and a thread waiting
on the model cannot be stopped (Celery's thread pool refuses to), so a model pool would hold the front-end's exit
for as long as the model takes. A console chat's few users do not need the model pool."""
MODEL_POOL_CHILD = "MNEMO_MODEL_POOL_CHILD"
"""Set in the model pool a ``mnemo worker`` starts beside itself: it serves no operations port of its own (its
parent's ``/metrics`` reads its samples) and stops with its parent."""


def _worker_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--concurrency", type=int, help="prefork processes, or threads with --pool threads, for "
                        "reminders and CPU-bound jobs (default: WORKER_CONCURRENCY)")
    parser.add_argument("--pool", default="prefork", choices=("prefork", "threads", "solo"))
    parser.add_argument("--name", default=None, help="node name (default: mnemo-<pid>@<host>)")
    parser.add_argument("--only", default="all", choices=WORKER_KINDS,
                        help="all (default): reminders and CPU-bound jobs here, and the jobs that wait on the model "
                        "on WORKER_LLM_CONCURRENCY threads in a second process started beside it; cpu: the first "
                        "only; model: the second only")


def _run_worker(settings: Settings, args: argparse.Namespace) -> int:
    import os

    from shared.app.multiprocess_metrics import MULTIPROCESS_VARIABLE, multiprocess_metrics, multiprocess_registry

    child = os.environ.get(MODEL_POOL_CHILD) == "1" and MULTIPROCESS_VARIABLE in os.environ
    metrics = contextlib.nullcontext() if child else multiprocess_metrics()
    with metrics:  # first: the pool processes count into files the main process serves
        from shared.app.bootstrap import broker_url, database_url
        from shared.app.ops_server import serve_operations
        from worker.celery_app import MODEL_QUEUES, QUEUES, configure
        from worker.signals import connect_signals

        with database_url(settings) as url:
            os.environ["DATABASE_URL"] = url  # the worker's processes build their own engines from it
            app = configure(broker_url(settings, url), reminder_scan_seconds=settings.reminder_scan_seconds,
                            daily_hour_utc=settings.daily_maintenance_hour_utc)
            connect_signals()  # the log context, the task metrics, the pool processes' own connections
            banner = ["--quiet"] if settings.log_format == "json" else []  # JSON lines only: no banner
            only = args.only
            if only == "all" and os.environ.get("REMAP_SIGTERM") == "SIGQUIT":
                only = ONE_POOL  # a worker that stops cold (beside a front-end)
            if only == "model":
                from shared.llm.sdk import openai

                openai.OpenAI  # noqa: B018  (loaded now: the lazy module is not safe to load first from many threads)
                pool = ["--pool", "threads", "--concurrency", str(settings.worker_llm_concurrency), "-Q",
                        ",".join(MODEL_QUEUES)]
                name = args.name or f"mnemo-model-{os.getpid()}@%h"
            else:
                queues = (*QUEUES, *MODEL_QUEUES) if only == ONE_POOL else QUEUES
                pool = ["--pool", args.pool, "--concurrency", str(args.concurrency or settings.worker_concurrency),
                        "-Q", ",".join(queues)]
                name = args.name or f"mnemo-{os.getpid()}@%h"
            operations = contextlib.nullcontext() if child else serve_operations(
                settings, url, "worker", registry=multiprocess_registry())
            with operations, _model_pool_beside(only, name):
                app.worker_main([*banner, "worker", "--loglevel", settings.log_level, *pool, "--hostname", name,
                                 "--without-mingle", "--without-gossip"])
    return 0


@contextlib.contextmanager
def _model_pool_beside(only: str, name: str) -> Iterator[None]:
    """For ``--only all``: ``mnemo worker --only model`` as a child process, told to stop when this worker
    begins to (the same signal, so a warm shutdown stays warm), and killed should this one die."""
    if only != "all":
        yield
        return
    import ctypes
    import os
    import signal
    import subprocess

    from celery.signals import worker_shutting_down

    libc = ctypes.CDLL(None, use_errno=True)  # loaded here: the forked child only makes the call

    def die_with_parent() -> None:
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG: SIGTERM to the child when this process ends

    node, _, host = name.partition("@")
    command = [sys.executable, "-m", "shared.app.cli", "worker", "--only", "model", "--name",
               f"{node}-model@{host}"]
    child = subprocess.Popen(command, env={**os.environ, MODEL_POOL_CHILD: "1"}, preexec_fn=die_with_parent)

    def stop_child(sig: str = "", how: str = "", **_kwargs: object) -> None:
        if child.poll() is None:
            child.send_signal(signal.SIGQUIT if how == "Cold" else signal.SIGTERM)

    worker_shutting_down.connect(stop_child, weak=False)
    try:
        yield
    finally:
        worker_shutting_down.disconnect(stop_child)
        stop_child()
        try:
            child.wait(timeout=120)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _run_beat(settings: Settings, _args: argparse.Namespace) -> int:
    from shared.app.bootstrap import broker_url, database_url
    from shared.app.ops_server import serve_operations
    from shared.app.state_metrics import watch_database_state
    from worker.beat import run_single_beat
    from worker.celery_app import configure

    with database_url(settings) as url:
        app = configure(broker_url(settings, url), reminder_scan_seconds=settings.reminder_scan_seconds,
                        daily_hour_utc=settings.daily_maintenance_hour_utc)
        with watch_database_state(url), serve_operations(settings, url, "beat", llm=False):
            return run_single_beat(app, url, settings.data_dir, settings.log_level,
                                   quiet=settings.log_format == "json")


def _health_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, help="the process's operations port (default: METRICS_PORT)")
    parser.add_argument("--live", action="store_true", help="only whether the process answers (/livez)")


def _run_health(settings: Settings, args: argparse.Namespace) -> int:
    from shared.app.health_probe import ask_health

    port = args.port if args.port is not None else settings.metrics_port
    if not port:
        print("mnemo health: METRICS_PORT is not set, so this process serves no health checks", file=sys.stderr)
        return 2
    return ask_health(port, settings.metrics_host, live=args.live)


def _bench_arguments(parser: argparse.ArgumentParser) -> None:
    from bench.command import declare_arguments

    declare_arguments(parser)


def _run_bench(settings: Settings, args: argparse.Namespace) -> int:
    from bench.command import run_suite

    return run_suite(settings, args)


COMMANDS: dict[str, Command] = {
    "api": Command("serve the memory API and the web panel", _api_arguments, _run_api),
    "backup": Command("write the whole database to a file (pg_dump custom format)", backup_arguments, run_backup),
    "restore": Command("replace the database with a backup file", restore_arguments, run_restore),
    "bench": Command("benchmarks run through the product's own code paths", _bench_arguments, _run_bench),
    "chat": Command("talk to Mnemo in the terminal (the full pipeline)", _chat_arguments, _run_chat),
    "db": Command("database schema: upgrade, downgrade, current", _db_arguments, _run_db),
    "doctor": Command("show the configuration and check every service", _doctor_arguments, _run_doctor),
    "maintenance": Command("run the daily maintenance (decay, reviews, dedup) now, or --now as of a moment",
                           maintenance_arguments, run_maintenance_command),
    "followups": Command("send the follow-ups due now, or --now as of a moment (the worker does it every 5 minutes)",
                         followups_arguments, run_followups_command),
    "health": Command("ask the running process on METRICS_PORT whether it is ready (docker compose's health check)",
                      _health_arguments, _run_health),
    "discord": Command("run the Discord bot (slash commands and chat)", _discord_arguments, _run_discord),
    "telegram": Command("run the Telegram bot (polling, or a webhook)", _telegram_arguments, _run_telegram),
    "worker": Command("run a Celery worker (extraction, episodes, reminders, maintenance)", _worker_arguments,
                      _run_worker),
    "beat": Command("run the Celery beat schedule (exactly one per deployment)", lambda _parser: None, _run_beat),
    "usage": Command("what the language model cost: totals, kinds, days, top users; lift one user's quota",
                     usage_arguments, run_usage),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mnemo", description="Mnemo, the chat bot that remembers.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command in COMMANDS.items():
        command.arguments(commands.add_parser(name, help=command.help, description=command.help))
    return parser


def _exit_on_signal(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def exit_cleanly_on_signals() -> None:
    """Turn SIGTERM/SIGHUP into a normal exit so every context manager cleans up (embedded server), and let
    Ctrl-C interrupt even where the process was started with SIGINT ignored (a background job of a script, a
    test runner's worker): Python leaves an inherited ignore in place."""
    signal.signal(signal.SIGTERM, _exit_on_signal)
    signal.signal(signal.SIGHUP, _exit_on_signal)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    exit_cleanly_on_signals()
    from shared.app.processes import stop_with_front_end

    stop_with_front_end()
    try:
        settings = load_settings()
        if args.command not in ("doctor", "health"):
            from shared.app.bootstrap import configure_logging

            configure_logging(settings)
        return COMMANDS[args.command].run(settings, args)
    except ConfigError as exc:
        print(f"mnemo: {exc}", file=sys.stderr)
        print("See .env.example for every variable and its meaning.", file=sys.stderr)
        return 2
    except MnemoError as exc:
        print(f"mnemo: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
